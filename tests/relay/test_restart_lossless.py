"""No review lost across a restart: the real process, real TLS, reviews at full rate.

Every review the callers try is answered, or refused because no connection could be opened (the listener had closed:
the caller knows it was never delivered); none written on an open connection goes unanswered. Checked through a
restart of one replica with and without a drain, and through a rolling restart of two replicas behind one address.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.processes import free_port
from tests.relay.review_traffic import ServiceAddress, Tally, drive, ready
from tests.relay_cli import serve_command
from tests.reporting import report
from tests.tls_clients import client_tls

WORKERS = 16
# Full rate for this long before the signal, and after the new process is ready.
TRAFFIC_SECONDS = 1.0
START_TIMEOUT_SECONDS = 30.0
GRACE_SECONDS = 5.0


class Replica:
    """`failover-relay serve` on a fixed port, as a pod runs it (its own process, certificates in a shared dir)."""

    def __init__(self, port: int, cert_dir: Path, log: Path, drain_seconds: float) -> None:
        self.port, self.cert_dir, self.log, self.drain_seconds = port, cert_dir, log, drain_seconds
        self.process: subprocess.Popen[bytes] | None = None

    async def start(self) -> None:
        self.process = await asyncio.to_thread(self._spawn)
        deadline = asyncio.get_running_loop().time() + START_TIMEOUT_SECONDS
        while asyncio.get_running_loop().time() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"failover-relay exited with {self.process.returncode}:\n{self.log.read_text()}")
            ca_file = self.cert_dir / "ca.crt"
            if ca_file.exists() and await ready(self.port, client_tls(ca_file)):
                return
            await asyncio.sleep(0.1)
        pytest.fail(f"failover-relay not ready after {START_TIMEOUT_SECONDS} s:\n{self.log.read_text()}")

    def _spawn(self) -> subprocess.Popen[bytes]:
        environment = {key: value for key, value in os.environ.items() if key != "KUBERNETES_SERVICE_HOST"}
        with self.log.open("a") as sink:
            return subprocess.Popen(
                serve_command(
                    self.port,
                    self.cert_dir,
                    "--drain-seconds",
                    str(self.drain_seconds),
                    "--grace-seconds",
                    str(GRACE_SECONDS),
                ),
                stdout=sink,
                stderr=subprocess.STDOUT,
                env={**environment, "PYTHONUNBUFFERED": "1"},
            )

    async def terminate(self) -> int:
        """SIGTERM, as the kubelet sends it, and the exit code."""
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        return await asyncio.to_thread(self.process.wait, 60)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


MakeReplica = Callable[[float], Replica]


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[MakeReplica]:
    started: list[Replica] = []

    def make(drain_seconds: float) -> Replica:
        replica = Replica(free_port(), tmp_path / "certs", tmp_path / f"relay-{len(started)}.log", drain_seconds)
        started.append(replica)
        return replica

    yield make
    for replica in started:
        replica.kill()


async def _restart(replica: Replica) -> None:
    assert await replica.terminate() == 0, replica.log.read_text()
    await replica.start()


@pytest.mark.parametrize("drain_seconds", [0.0, 1.0], ids=["no-drain", "drain-1s"])
async def test_a_restart_under_full_load_loses_no_review(
    replicas: MakeReplica, drain_seconds: float, request: pytest.FixtureRequest
) -> None:
    replica = replicas(drain_seconds)
    await replica.start()
    context = client_tls(replica.cert_dir / "ca.crt")
    stop = asyncio.Event()
    traffic = asyncio.create_task(drive(replica.port, context, stop, WORKERS))
    await asyncio.sleep(TRAFFIC_SECONDS)
    await _restart(replica)  # the same port, as a pod restarted in place keeps its address
    await asyncio.sleep(TRAFFIC_SECONDS)
    stop.set()
    tally: Tally = await traffic
    report(request, request.node.name, f"restart with drain {drain_seconds:g} s: {tally.line()}")
    assert tally.lost == 0, f"{tally.line()}; lost as {tally.lost_how}"
    assert tally.wrong == 0, tally.line()
    assert tally.answered >= 200, f"too little traffic to mean anything: {tally.line()}"


async def test_a_rolling_restart_of_two_replicas_behind_one_address_loses_no_review(
    replicas: MakeReplica, request: pytest.FixtureRequest
) -> None:
    first, second = replicas(1.0), replicas(1.0)
    await first.start()
    await second.start()
    context = client_tls(first.cert_dir / "ca.crt")
    service = ServiceAddress([first.port, second.port], context)
    await service.start()
    try:
        await service.all_ready()
        stop = asyncio.Event()
        traffic = asyncio.create_task(drive(service.port, context, stop, WORKERS))
        await asyncio.sleep(TRAFFIC_SECONDS)
        for replica in (first, second):  # one at a time, the next once the new one is ready
            await _restart(replica)
            await service.all_ready()
        await asyncio.sleep(TRAFFIC_SECONDS)
        stop.set()
        tally: Tally = await traffic
    finally:
        await service.close()
    report(request, request.node.name, f"rolling restart of 2 replicas, drain 1 s: {tally.line()}")
    assert tally.lost == 0, f"{tally.line()}; lost as {tally.lost_how}"
    assert tally.wrong == 0, tally.line()
    # A refusal here means the emulated endpoints lagged the 1 s drain (a loaded machine slows the readiness poll):
    # the caller knows its review was not delivered. What must never happen is a loss, asserted above.
    assert tally.answered >= 200, tally.line()
