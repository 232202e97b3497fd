"""Fair under floods (issue 28, item 2): a legitimate caller on its own address keeps being served while a few
addresses hold idle TLS connections or reconnect as fast as they can, and the apiserver's own concurrency (300
reviews held by a hung storage) is never refused by the per-address cap.

Real TLS over real sockets against the real server; the floods and the callers come from distinct loopback addresses
(127.0.0.x), as the apiserver and an attacker are distinct peers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from failover.state.checkpoints import KARMADA_EXAMPLE_LAYOUT, CheckpointStore
from failover.state.profiles import load_profiles
from relay.serve import RelayServer
from relay.settings import Settings
from tests.admission_reviews import admission_review
from tests.policies import flink_policy
from tests.reporting import report
from tests.tls_clients import client_tls
from webhook.blocking import BlockingPool
from webhook.handlers import AdmissionHandlers
from webhook.mutators import savepoint_mutators

LEGIT = "127.0.0.9"
# Small caps in the ratio of the defaults (512 and 256), so that a flood of a few dozen connections fills them.
MAX_CONNECTIONS = 64
MAX_PER_PEER = 32
LEGIT_ATTEMPTS = 40
LEGIT_TIMEOUT_SECONDS = 2.0
# A legitimate caller may see a refusal in the instant a place changes hands; nearly all must be served.
MIN_SUCCESS = 0.9

Start = Callable[..., Awaitable[RelayServer]]


@pytest.fixture
async def start(tmp_path: Path) -> AsyncIterator[Start]:
    servers: list[RelayServer] = []

    async def started(handlers: AdmissionHandlers | None = None, **settings: Any) -> RelayServer:
        server = RelayServer(Settings(port=0, cert_dir=tmp_path / "certs", **settings), handlers)
        await server.start()
        servers.append(server)
        return server

    yield started
    for server in servers:
        await server.stop()


def tls(relay: RelayServer) -> ssl.SSLContext:
    assert relay.files.ca_file is not None
    context = client_tls(relay.files.ca_file)
    context.check_hostname = False
    return context


async def post(relay: RelayServer, path: str, review: dict[str, Any], source: str, seconds: float) -> dict[str, Any]:
    """One review on a fresh TLS connection from `source`; the AdmissionReview response, or raises."""
    body = json.dumps(review).encode()
    async with asyncio.timeout(seconds):
        reader, writer = await asyncio.open_connection("127.0.0.1", relay.port, ssl=tls(relay), local_addr=(source, 0))
        try:
            writer.write(
                f"POST {path} HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                + body
            )
            answer = await reader.read()
        finally:
            writer.close()
    head, _, payload = answer.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        raise ConnectionError(head[:40])
    response: dict[str, Any] = json.loads(payload)["response"]
    return response


async def legit_success_rate(relay: RelayServer) -> float:
    """Reviews from LEGIT, one after another on fresh connections: the share answered within the timeout."""
    answered = 0
    for _ in range(LEGIT_ATTEMPTS):
        with contextlib.suppress(OSError, ssl.SSLError, TimeoutError, ValueError):
            await post(relay, "/validate", admission_review(flink_policy()), LEGIT, LEGIT_TIMEOUT_SECONDS)
            answered += 1
        await asyncio.sleep(0.02)
    return answered / LEGIT_ATTEMPTS


async def hold_idle_tls(relay: RelayServer, source: str, stop: asyncio.Event) -> None:
    """An idle TLS connection from `source`, opened again whenever the server closes it."""
    while not stop.is_set():
        try:
            reader, writer = await asyncio.open_connection(
                "127.0.0.1", relay.port, ssl=tls(relay), local_addr=(source, 0)
            )
        except (OSError, ssl.SSLError):
            await asyncio.sleep(0.2)  # refused: try again soon (and leave the test's one event loop some time)
            continue
        with contextlib.suppress(OSError, ssl.SSLError):
            stop_waiter = asyncio.ensure_future(stop.wait())
            await asyncio.wait([asyncio.ensure_future(reader.read()), stop_waiter], return_when="FIRST_COMPLETED")
        writer.close()


async def reconnect(relay: RelayServer, source: str, stop: asyncio.Event) -> None:
    """Connect, say nothing for 0.2 s, close, connect again: the cheapest way to keep the places taken."""
    while not stop.is_set():
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", relay.port, local_addr=(source, 0))
        except OSError:
            await asyncio.sleep(0.01)
            continue
        await asyncio.sleep(0.2)
        writer.close()


async def under_flood(relay: RelayServer, flood: list[Callable[[asyncio.Event], Awaitable[None]]]) -> float:
    stop = asyncio.Event()
    tasks = [asyncio.create_task(one(stop)) for one in flood]
    try:
        deadline = time.monotonic() + 10
        while relay.listener is not None and relay.listener.open < MAX_CONNECTIONS:  # the flood holds every place
            assert time.monotonic() < deadline, f"the flood took only {relay.listener.open} places"
            await asyncio.sleep(0.05)
        return await legit_success_rate(relay)
    finally:
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)


class HangingFileSystem:
    """A storage that accepts the request and never answers (until the test lets it go)."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def ls(self, path: str, detail: bool = True, **kwargs: Any) -> Any:
        self.release.wait(10)
        raise FileNotFoundError(path)

    info = ls


LABEL = "application.karmada.io/failover-jobid"


def flink_deployment(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkDeployment",
        "metadata": {"name": name, "namespace": "flink", "labels": {LABEL: "0123456789abcdef0123456789abcdef"}},
        "spec": {"image": "flink:1.17", "flinkVersion": "v1_17", "job": {"jarURI": "local:///job.jar"}},
    }


async def test_a_legitimate_caller_is_served_under_each_flood(start: Start, request: pytest.FixtureRequest) -> None:
    caps = {"max_connections": MAX_CONNECTIONS, "max_connections_per_peer": MAX_PER_PEER, "handshake_seconds": 5.0}
    results: dict[str, float] = {}

    relay = await start(**caps)
    idle_flood = [
        (lambda stop, source=f"127.0.0.{10 + address}": hold_idle_tls(relay, source, stop))
        for address in range(8)
        for _ in range(10)
    ]
    results["idle TLS connections from 8 addresses"] = await under_flood(relay, idle_flood)
    await relay.stop()

    relay = await start(**caps)
    reconnect_flood = [
        (lambda stop, source=f"127.0.0.{20 + address}": reconnect(relay, source, stop))
        for address in range(3)
        for _ in range(30)
    ]
    results["reconnect flood from 3 addresses"] = await under_flood(relay, reconnect_flood)
    await relay.stop()

    # The apiserver's own concurrency: 300 reviews from one address held by a storage that hangs, with the default
    # caps; each is answered at the lookup deadline (failing open), none refused.
    storage = HangingFileSystem()
    pool = BlockingPool(2)
    profiles = load_profiles([], label=LABEL, layouts=(KARMADA_EXAMPLE_LAYOUT,))
    mutators = savepoint_mutators(
        profiles, CheckpointStore(storage, "ckpt", "s3://ckpt"), executor=pool, deadline=1.0, failure_mode="open"
    )
    relay = await start(AdmissionHandlers(mutators=mutators))
    try:
        reviews = [
            post(relay, "/mutate", admission_review(flink_deployment(f"job-{n}")), "127.0.0.1", 20) for n in range(300)
        ]
        legit = asyncio.create_task(legit_success_rate(relay))
        answers = await asyncio.gather(*reviews, return_exceptions=True)
        results["300 reviews held by a hung storage"] = await legit
    finally:
        storage.release.set()
        pool.shutdown()
    apiserver_answered = sum(1 for answer in answers if isinstance(answer, dict) and answer.get("allowed"))

    for flood, rate in results.items():
        report(request, "fairness", f"{flood}: legitimate caller served {rate:.0%} of {LEGIT_ATTEMPTS}")
    report(request, "fairness", f"300 concurrent reviews from one address, storage hung: {apiserver_answered} answered")
    assert apiserver_answered == 300, [answer for answer in answers if not isinstance(answer, dict)][:3]
    for flood, rate in results.items():
        assert rate >= MIN_SUCCESS, f"{flood}: the legitimate caller was served {rate:.0%} of the time"
