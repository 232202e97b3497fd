"""The listener's caps over real sockets: connections beyond the global or per-peer cap are closed before any TLS
state exists, a handshake that does not come is cut off after seconds, and the places are given back."""

from __future__ import annotations

import asyncio
import gc
import socket
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from relay.serve import RelayServer
from relay.settings import Settings
from tests.tls_clients import client_tls

Start = Callable[..., Awaitable[RelayServer]]


@pytest.fixture
async def start(tmp_path: Path) -> AsyncIterator[Start]:
    servers: list[RelayServer] = []

    async def started(**settings: object) -> RelayServer:
        server = RelayServer(Settings(port=0, cert_dir=tmp_path / "certs", **settings))  # type: ignore[arg-type]
        await server.start()
        servers.append(server)
        return server

    yield started
    for server in servers:
        await server.stop()


async def bare_connect(
    relay: RelayServer, source: str = "127.0.0.1"
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A TCP connection that never starts TLS."""
    return await asyncio.open_connection("127.0.0.1", relay.port, local_addr=(source, 0))


async def closed_by_server(reader: asyncio.StreamReader, within: float) -> bool:
    try:
        async with asyncio.timeout(within):
            return await reader.read(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


async def healthz(relay: RelayServer, source: str = "127.0.0.1") -> bytes:
    assert relay.files.ca_file is not None
    context = client_tls(relay.files.ca_file)
    context.check_hostname = False
    reader, writer = await asyncio.open_connection("127.0.0.1", relay.port, ssl=context, local_addr=(source, 0))
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: relay\r\nConnection: close\r\n\r\n")
    answer = await reader.read()
    writer.close()
    return answer


async def test_a_connection_that_never_handshakes_is_closed_after_the_handshake_timeout(start: Start) -> None:
    relay = await start(handshake_seconds=0.5)
    reader, writer = await bare_connect(relay)
    began = time.monotonic()
    # asyncio's own handshake timeout is 60 s: without ours the server would still hold it.
    assert await closed_by_server(reader, within=5), "a silent connection was held past the handshake timeout"
    assert time.monotonic() - began < 3
    writer.close()
    assert b"handshake-timeout" in relay.metrics.exposition()


async def test_connections_beyond_the_per_peer_cap_are_closed_and_others_still_served(start: Start) -> None:
    relay = await start(max_connections_per_peer=3, handshake_seconds=10)
    assert relay.files.ca_file is not None
    context = client_tls(relay.files.ca_file)
    context.check_hostname = False
    # Idle after their handshake: what the per-peer cap counts (webhook/fairness.py).
    held = [await asyncio.open_connection("127.0.0.1", relay.port, ssl=context) for _ in range(3)]
    reader, writer = await bare_connect(relay)
    assert await closed_by_server(reader, within=2), "a fourth connection from one peer was kept"
    writer.close()
    # Another address (the apiserver, when the flood comes from elsewhere) is still served.
    assert (await healthz(relay, source="127.0.0.2")).startswith(b"HTTP/1.1 200")
    assert (
        b'failover_relay_connections_refused_total{reason="max-connections-per-peer"} 1.0' in relay.metrics.exposition()
    )
    for _, held_writer in held:
        held_writer.close()
    await asyncio.sleep(0.2)  # the server sees the closes and gives the places back
    assert (await healthz(relay)).startswith(b"HTTP/1.1 200")


async def test_connections_beyond_the_global_cap_are_closed(start: Start) -> None:
    relay = await start(max_connections=2, handshake_seconds=10)
    held = [await bare_connect(relay, source) for source in ("127.0.0.3", "127.0.0.4")]
    reader, writer = await bare_connect(relay, "127.0.0.5")
    assert await closed_by_server(reader, within=2)
    writer.close()
    for _, held_writer in held:
        held_writer.close()
    await asyncio.sleep(0.2)
    assert (await healthz(relay)).startswith(b"HTTP/1.1 200")


async def test_a_newcomer_just_after_a_flood_filled_the_server_waits_for_a_place_rather_than_being_refused(
    start: Start,
) -> None:
    relay = await start(max_connections=4, handshake_seconds=10)
    assert relay.files.ca_file is not None
    context = client_tls(relay.files.ca_file)
    context.check_hostname = False
    # Four idle connections from one address, each active (its handshake) a moment ago: none may be taken yet, as
    # its caller may be writing into it (webhook/fairness.py); the newcomer waits until the first has been quiet.
    held = [
        await asyncio.open_connection("127.0.0.1", relay.port, ssl=context, local_addr=("127.0.0.3", 0))
        for _ in range(4)
    ]
    assert (await healthz(relay, source="127.0.0.6")).startswith(b"HTTP/1.1 200")
    exposition = relay.metrics.exposition()
    assert b'failover_relay_connections_refused_total{reason="evicted"} 1.0' in exposition
    assert b'reason="max-connections"' not in exposition
    for _, held_writer in held:
        held_writer.close()


async def test_served_connections_give_their_place_back(start: Start) -> None:
    relay = await start(max_connections=1, max_connections_per_peer=1)
    for _ in range(5):  # each request closes its connection; the next one must be admitted
        assert (await healthz(relay)).startswith(b"HTTP/1.1 200")
        await asyncio.sleep(0.05)


def test_the_listener_binds_the_configured_address_only(tmp_path: Path) -> None:
    async def run() -> None:
        relay = RelayServer(Settings(host="127.0.0.2", port=0, cert_dir=tmp_path / "certs"))
        await relay.start()
        try:
            with pytest.raises(OSError):
                socket.create_connection(("127.0.0.3", relay.port), timeout=1).close()
        finally:
            await relay.stop()

    asyncio.run(run())


async def test_failed_handshakes_are_freed_without_a_full_collection(start: Start) -> None:
    """The TLS state of a connection whose handshake failed or timed out must be freed by reference counting when it
    closes. Left in a reference cycle, it waits for a full collection, which under repeated floods comes rarely: RSS
    would climb wave after wave (docs/benchmarks.md, repeated waves)."""
    relay = await start(handshake_seconds=0.3)

    async def failing(payload: bytes) -> None:
        reader, writer = await bare_connect(relay)
        if payload:
            writer.write(payload)  # not a TLS ClientHello: the handshake fails
        await reader.read()  # until the server closes it (at once, or at the handshake timeout)
        writer.close()

    gc.collect()
    await asyncio.gather(*(failing(b"GET / HTTP/1.1\r\n\r\n") for _ in range(30)), *(failing(b"") for _ in range(30)))
    await asyncio.sleep(0.3)  # the server's closes complete
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        left = Counter(type(thing).__name__ for thing in gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    in_cycles = {name: left[name] for name in ("_SmallBufferSSLProtocol", "MemoryBIO", "_Counted", "RequestHandler")}
    assert not any(in_cycles.values()), f"connection state left for the cyclic collector: {in_cycles}"
