"""Graceful shutdown: unready first, keep serving through the drain, then close the listener, let the review in flight
finish within a bound, exit 0.

No endpoint is slow by nature, so the in-process tests register a mutator for a test kind that blocks until the test
releases it: the request is really in flight on a real TLS connection while `RelayServer.stop()` runs.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import ssl
import subprocess
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from failover.core.api import GroupKind
from failover.core.verdict import ALLOWED, Verdict
from relay.runtime import ALLOW_ENV
from relay.serve import RelayServer
from relay.settings import Settings
from tests.admission_reviews import admission_review
from tests.policies import flink_policy
from tests.processes import free_port
from tests.relay_cli import serve_command
from tests.reporting import report
from tests.tls_clients import client_tls
from webhook.drain import STOPPING_QUIET_SECONDS
from webhook.handlers import AdmissionHandlers
from webhook.review import AdmissionRequest

SLOW_KIND = GroupKind("test.failover-relay.io", "SlowThing")
DRAIN_SECONDS = 0.6
GRACE_SECONDS = 1.0
# Scheduling slack on a loaded 2-core machine; the bounds below are the configured times plus this.
SLACK_SECONDS = 1.5
START_TIMEOUT_SECONDS = 30.0


class BlockingMutator:
    """Holds every review it gets until `release` is set: a request that is in flight for as long as the test wants."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        self.cancelled = False

    async def __call__(self, request: AdmissionRequest) -> Verdict:
        self.entered.set()
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return ALLOWED


def slow_review() -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": {"group": SLOW_KIND.group, "version": "v1", "kind": SLOW_KIND.kind},
            "operation": "CREATE",
            "object": {
                "apiVersion": f"{SLOW_KIND.group}/v1",
                "kind": SLOW_KIND.kind,
                "metadata": {"name": "slow", "namespace": "default"},
            },
        },
    }


@pytest.fixture
async def blocking() -> BlockingMutator:
    return BlockingMutator()


@pytest.fixture
async def relay(tmp_path: Path, blocking: BlockingMutator) -> AsyncIterator[RelayServer]:
    server = RelayServer(
        Settings(port=0, cert_dir=tmp_path / "certs", drain_seconds=DRAIN_SECONDS, grace_seconds=GRACE_SECONDS),
        AdmissionHandlers(mutators={SLOW_KIND: blocking}),
    )
    await server.start()
    yield server
    blocking.release.set()
    if server.runner is not None and server.runner.server is not None:  # the test failed before stopping it
        await server.stop()


def tls_for(relay: RelayServer) -> ssl.SSLContext:
    assert relay.files.ca_file is not None
    return client_tls(relay.files.ca_file)


async def fresh_request(relay: RelayServer, method: str, path: str, body: Any = None) -> tuple[int, str]:
    """One request on a new TCP+TLS connection, as a caller that was just routed to us would make it."""
    connector = aiohttp.TCPConnector(ssl=tls_for(relay), force_close=True)
    async with aiohttp.ClientSession(connector=connector) as session:
        async with session.request(
            method, f"https://localhost:{relay.port}{path}", json=body, timeout=aiohttp.ClientTimeout(total=5)
        ) as response:
            return response.status, await response.text()


async def connection_refused(relay: RelayServer) -> bool:
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", relay.port)
    except ConnectionRefusedError:
        return True
    except ConnectionResetError:
        # The kernel had queued our handshake when the listener closed: it is closing right now, and the next
        # attempt gets the refusal we wait for.
        return False
    writer.close()
    return False


async def post_slow(relay: RelayServer) -> tuple[int, dict[str, Any] | str, str]:
    review = slow_review()
    connector = aiohttp.TCPConnector(ssl=tls_for(relay))
    async with aiohttp.ClientSession(connector=connector) as session:
        async with session.post(
            f"https://localhost:{relay.port}/mutate", json=review, timeout=aiohttp.ClientTimeout(total=30)
        ) as response:
            body = await response.json() if response.status == 200 else await response.text()
            return response.status, body, review["request"]["uid"]


async def test_stop_turns_unready_serves_through_the_drain_then_refuses_and_finishes_in_flight(
    relay: RelayServer, blocking: BlockingMutator, request: pytest.FixtureRequest
) -> None:
    assert (await fresh_request(relay, "GET", "/readyz"))[0] == 200
    in_flight = asyncio.create_task(post_slow(relay))
    await asyncio.wait_for(blocking.entered.wait(), 5)

    started = time.monotonic()
    stopping = asyncio.create_task(relay.stop())
    await asyncio.sleep(0)
    status, text = await fresh_request(relay, "GET", "/readyz")
    unready_after = time.monotonic() - started
    assert (status, text) == (503, "not ready: shutting down\n")

    # Still in the drain (a new connection is accepted): endpoints have not caught up yet, so a review routed to us
    # now is answered normally.
    review = admission_review(flink_policy())
    status, text = await fresh_request(relay, "POST", "/validate", review)
    assert status == 200 and json.loads(text)["response"]["uid"] == review["request"]["uid"]

    while not await connection_refused(relay):
        assert time.monotonic() - started < DRAIN_SECONDS + SLACK_SECONDS, "listener still open after the drain"
        await asyncio.sleep(0.02)
    refused_after = time.monotonic() - started
    assert refused_after >= DRAIN_SECONDS
    assert not in_flight.done() and not stopping.done()

    blocking.release.set()
    status, body, uid = await asyncio.wait_for(in_flight, 5)
    assert status == 200
    assert isinstance(body, dict) and body["response"] == {"uid": uid, "allowed": True}
    await asyncio.wait_for(stopping, GRACE_SECONDS + SLACK_SECONDS)
    stopped_after = time.monotonic() - started
    assert not blocking.cancelled
    report(
        request,
        request.node.name,
        f"unready after {unready_after * 1000:.0f} ms, new connections refused after "
        f"{refused_after * 1000:.0f} ms (drain {DRAIN_SECONDS} s), in-flight review answered 200 and "
        f"stop done after {stopped_after * 1000:.0f} ms",
    )


async def test_stop_is_bounded_by_the_grace_when_a_review_never_finishes(
    relay: RelayServer, blocking: BlockingMutator, request: pytest.FixtureRequest
) -> None:
    in_flight = asyncio.create_task(post_slow(relay))
    await asyncio.wait_for(blocking.entered.wait(), 5)
    started = time.monotonic()
    await asyncio.wait_for(relay.stop(), DRAIN_SECONDS + GRACE_SECONDS + SLACK_SECONDS)
    stopped_after = time.monotonic() - started
    assert stopped_after >= DRAIN_SECONDS + GRACE_SECONDS * 0.9  # it did wait for the review before giving up
    assert stopped_after < DRAIN_SECONDS + GRACE_SECONDS + 0.5
    assert blocking.cancelled
    # The abandoned caller sees the connection end, never a made-up answer (the apiserver applies failurePolicy).
    with pytest.raises(aiohttp.ClientError):
        await asyncio.wait_for(in_flight, 5)
    assert await connection_refused(relay)
    report(
        request,
        request.node.name,
        f"review that never finishes: stop returned after {stopped_after * 1000:.0f} ms "
        f"(drain {DRAIN_SECONDS} s + grace {GRACE_SECONDS} s)",
    )


async def test_a_review_finishing_late_in_the_grace_is_still_answered(
    relay: RelayServer, blocking: BlockingMutator
) -> None:
    in_flight = asyncio.create_task(post_slow(relay))
    await asyncio.wait_for(blocking.entered.wait(), 5)
    stopping = asyncio.create_task(relay.stop())
    await asyncio.sleep(DRAIN_SECONDS + GRACE_SECONDS * 0.75)  # past aiohttp's first wait of half the grace
    blocking.release.set()
    status, body, uid = await asyncio.wait_for(in_flight, 5)
    assert status == 200 and isinstance(body, dict) and body["response"]["uid"] == uid
    await asyncio.wait_for(stopping, 5)
    assert not blocking.cancelled


async def test_idle_keep_alive_connections_do_not_hold_up_the_stop(relay: RelayServer) -> None:
    connector = aiohttp.TCPConnector(ssl=tls_for(relay))
    async with aiohttp.ClientSession(connector=connector) as session:
        async with session.get(f"https://localhost:{relay.port}/healthz") as response:
            assert response.status == 200
        started = time.monotonic()
        await relay.stop()
        # Idle connections are closed once quiet, not held to the end of the grace.
        assert time.monotonic() - started < max(DRAIN_SECONDS, STOPPING_QUIET_SECONDS) + 0.5


def wait_ready(process: subprocess.Popen[str], port: int, ca_file: Path, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"failover-relay exited with {process.returncode}:\n{log.read_text()}")
        if ca_file.exists() and http_get(port, ca_file, "/readyz")[0] == 200:
            return
        time.sleep(0.1)
    process.kill()
    pytest.fail(f"failover-relay not ready after {START_TIMEOUT_SECONDS} s:\n{log.read_text()}")


def http_get(port: int, ca_file: Path, path: str, body: bytes | None = None) -> tuple[int, str]:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        f"https://localhost:{port}{path}", data=body, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, context=client_tls(ca_file), timeout=5) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
    except OSError as error:
        return 0, str(error)


def test_sigterm_in_a_cluster_drains_then_exits_0(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """The real process as a pod runs it: in a cluster (KUBERNETES_SERVICE_HOST set) it drains before closing."""
    port, cert_dir, log = free_port(), tmp_path / "certs", tmp_path / "relay.log"
    environment = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "KUBERNETES_SERVICE_HOST": "10.96.0.1",
        ALLOW_ENV: "1",
    }  # whatever Python runs the tests (relay/runtime.py)
    with log.open("w") as sink:
        process = subprocess.Popen(
            serve_command(port, cert_dir),
            stdout=sink,
            stderr=subprocess.STDOUT,
            text=True,
            env=environment,
        )
    try:
        wait_ready(process, port, cert_dir / "ca.crt", log)
        process.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        status, text = http_get(port, cert_dir / "ca.crt", "/readyz")
        assert (status, text) == (503, "not ready: shutting down\n")
        review = admission_review(flink_policy(purgeMode="Gracefully"))
        status, text = http_get(port, cert_dir / "ca.crt", "/validate", json.dumps(review).encode())
        assert status == 200 and json.loads(text)["response"]["allowed"] is False
        served_within = time.monotonic() - signalled
        assert process.wait(timeout=20) == 0
        exited_after = time.monotonic() - signalled
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    records = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    events = [record.get("event") for record in records]
    assert events.index("shutting_down") < events.index("draining") < events.index("stopped")
    draining = records[events.index("draining")]
    assert draining["drain_seconds"] == 5.0
    assert exited_after >= draining["drain_seconds"]
    report(
        request,
        request.node.name,
        f"real process: unready and still serving {served_within * 1000:.0f} ms after SIGTERM, "
        f"exit 0 after {exited_after:.2f} s (drain {draining['drain_seconds']} s)",
    )


def test_sigterm_outside_a_cluster_exits_0_at_once(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    port, cert_dir, log = free_port(), tmp_path / "certs", tmp_path / "relay.log"
    environment = {key: value for key, value in os.environ.items() if key != "KUBERNETES_SERVICE_HOST"}
    with log.open("w") as sink:
        process = subprocess.Popen(
            serve_command(port, cert_dir, host=None),
            stdout=sink,
            stderr=subprocess.STDOUT,
            text=True,
            env=environment,
        )
    try:
        wait_ready(process, port, cert_dir / "ca.crt", log)
        signalled = time.monotonic()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0
        exited_after = time.monotonic() - signalled
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert exited_after < 3.0
    report(request, request.node.name, f"real process outside a cluster: exit 0 after {exited_after * 1000:.0f} ms")


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGQUIT])
def test_sighup_and_sigquit_drain_like_sigterm(tmp_path: Path, signum: signal.Signals) -> None:
    port, cert_dir, log = free_port(), tmp_path / "certs", tmp_path / "relay.log"
    environment = {key: value for key, value in os.environ.items() if key != "KUBERNETES_SERVICE_HOST"}
    with log.open("w") as sink:
        process = subprocess.Popen(
            serve_command(port, cert_dir, "--drain-seconds", "0.5", host=None),
            stdout=sink,
            stderr=subprocess.STDOUT,
            text=True,
            env=environment,
        )
    try:
        wait_ready(process, port, cert_dir / "ca.crt", log)
        process.send_signal(signal.SIGUSR1)  # ignored: still serving
        time.sleep(0.2)
        assert http_get(port, cert_dir / "ca.crt", "/healthz")[0] == 200
        process.send_signal(signum)
        assert process.wait(timeout=15) == 0, "killed by the signal instead of draining"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    events = [json.loads(line).get("event") for line in log.read_text().splitlines() if line.startswith("{")]
    assert "signal_ignored" in events
    assert events.index("shutting_down") < events.index("draining") < events.index("stopped")


async def test_the_drain_closes_idle_keep_alives_and_answers_with_connection_close(tmp_path: Path) -> None:
    drain_seconds = STOPPING_QUIET_SECONDS + 1.0
    server = RelayServer(Settings(port=0, cert_dir=tmp_path / "certs", drain_seconds=drain_seconds, grace_seconds=1.0))
    await server.start()
    assert server.files.ca_file is not None
    context = client_tls(server.files.ca_file)
    context.check_hostname = False

    async def request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bytes:
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: relay\r\n\r\n")
        head = await reader.readuntil(b"\r\n\r\n")
        await reader.readexactly(3)  # "ok\n"
        return head

    idle = await asyncio.open_connection("127.0.0.1", server.port, ssl=context)
    assert b"Connection: close" not in await request(*idle)  # a keep-alive connection, now idle
    stopping = asyncio.create_task(server.stop())
    try:
        async with asyncio.timeout(drain_seconds - 0.5):  # before the drain ends
            assert await idle[0].read() == b"", "the idle keep-alive connection was left open into the drain"
        fresh = await asyncio.open_connection("127.0.0.1", server.port, ssl=context)
        head = await request(*fresh)
        assert b"Connection: close" in head
        assert await fresh[0].read() == b""
    finally:
        await stopping


async def test_a_body_still_arriving_at_stop_is_answered_408_within_the_grace(tmp_path: Path) -> None:
    """A review whose body is still arriving when the listener closes gets a clean answer before the grace
    ends (its body has half the grace to arrive), not a connection closed under it."""
    server = RelayServer(Settings(port=0, cert_dir=tmp_path / "certs", drain_seconds=0.0, grace_seconds=2.0))
    await server.start()
    assert server.files.ca_file is not None
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", server.port, ssl=client_tls(server.files.ca_file), server_hostname="localhost"
    )
    writer.write(b"POST /validate HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\n")
    writer.write(b'Content-Length: 1000\r\n\r\n{"apiVersion":')  # and the rest never comes
    await writer.drain()
    await asyncio.sleep(0.2)  # the handler is reading the body
    started = time.monotonic()
    stopping = asyncio.create_task(server.stop())
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    answered_after = time.monotonic() - started
    assert head.startswith(b"HTTP/1.1 408"), head
    assert b"Connection: close" in head
    assert answered_after < 2.0
    await asyncio.wait_for(stopping, 5)
    writer.close()
