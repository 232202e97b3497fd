"""The TLS listener: accepts connections within caps, and bounds what one costs before it has said anything.

`loop.create_server` accepts every connection and gives each a TLS state and a 256 KiB read buffer before a byte
arrives, holding it up to the event loop's 60 s handshake timeout: 2,000 bare connects took the server from 74 MB
to 689 MB. This listener accepts on its own so that it can refuse before anything is allocated:

- at most `max_connections` open at once, and at most `max_connections_per_peer` from one address that finished
  their handshake and do nothing (idle, or sending a request head): the apiserver opens one connection per
  concurrent review over HTTP/1.1, and those never count towards that cap (webhook/fairness.py);
- when full, a newcomer takes the place of the idlest connection of the address holding the most, if that address
  holds at least two more than the newcomer's (webhook/fairness.py): a few addresses cannot take every place; when
  all of that address's connections were active a moment ago, accepting pauses until one of them is quiet enough
  (at most `QUIET_SECONDS`, once per newcomer; the kernel's backlog holds whoever comes meanwhile);
- a connection over a cap is closed at once, before any TLS state exists, and counted;
- the TLS handshake must finish within `handshake_seconds` (the apiserver completes it in milliseconds);
- the TLS read buffer is 32 KiB (two TLS records) instead of asyncio's 256 KiB: a review arrives in one burst
  either way, and an idle connection then costs about a sixth of the memory.

It plays the part of `asyncio.Server` for aiohttp's runner (`sockets`, `close`), so the runner's drain and
shutdown work unchanged.
"""

from __future__ import annotations

import array
import asyncio
import errno
import fcntl
import socket
import ssl
import termios
from asyncio import sslproto
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog
from aiohttp import web

from webhook.fairness import Held, Wait, idle_count, make_room

# Connections taken from the kernel per readiness event, as asyncio's own accept loop does (its backlog).
ACCEPT_BATCH = 100
# Out of file descriptors: stop accepting this long and let connections close (asyncio does the same).
ACCEPT_PAUSE_SECONDS = 1.0
# Past a waiting newcomer's time (webhook/fairness.py `Wait`): asyncio runs a timer up to its clock resolution early,
# and a connection must then have been quiet for the whole of QUIET_SECONDS.
WAIT_MARGIN_SECONDS = 0.01
# A peer that sent its close_notify gets this long for ours; asyncio's default is 30 s.
TLS_SHUTDOWN_SECONDS = 5.0


@dataclass(frozen=True)
class ConnectionLimits:
    max_connections: int
    max_connections_per_peer: int
    handshake_seconds: float


class _SmallBufferSSLProtocol(sslproto.SSLProtocol):
    # asyncio's SSLProtocol reads into a zero-filled 256 KiB buffer allocated per connection; 32 KiB holds two full
    # TLS records, so reads stay whole while an idle connection costs far less (docs/benchmarks.md).
    max_size = 32 * 1024
    # Loop time of the last bytes read from the socket, a partial TLS record included (webhook/drain.py), and of the
    # last answer bytes written (webhook/fairness.py: a connection just answered may be about to carry the next).
    last_received = 0.0
    last_sent = 0.0

    def buffer_updated(self, nbytes: int) -> None:
        self.last_received = self._loop.time()
        super().buffer_updated(nbytes)

    def _write_appdata(self, list_of_data: Any) -> None:
        # asyncio's private hook for every write of the application (3.11 to 3.13): stamped for webhook/fairness.py.
        self.last_sent = self._loop.time()
        super()._write_appdata(list_of_data)


class _Counted(asyncio.Protocol):
    """Passes every event to the HTTP protocol and releases the connection's place when it closes; tells a stopping
    server whether the connection is idle (webhook/drain.py)."""

    __slots__ = ("_factory", "_inner", "_listener", "_transport", "evicted", "peer", "released", "sock", "tls")

    def __init__(
        self, factory: Callable[[], asyncio.Protocol], listener: CappedListener, sock: socket.socket, peer: str
    ) -> None:
        # The HTTP protocol is made once the handshake is done: a flood of failed handshakes never builds one.
        self._factory = factory
        self._inner: Any = None
        self._listener = listener
        self.released = False
        self._transport: Any = None
        self.tls: _SmallBufferSSLProtocol | None = None
        self.sock = sock
        self.peer = peer
        self.evicted = False

    def busy(self) -> bool:
        """A request in progress or queued (after the handshake)."""
        if self._transport is None:
            return False
        inner: Any = self._inner
        return bool(getattr(inner, "_request_in_progress", False) or getattr(inner, "_messages", None))

    def held(self) -> Held:
        tls = self.tls
        last_active = max(tls.last_received, tls.last_sent) if tls is not None else 0.0
        return Held(self, self.busy(), self._transport is None, last_active)

    def evict(self) -> None:
        """Give the place back now and close: aborted in the handshake, TLS close_notify then FIN when idle."""
        self.evicted = True
        tls = self.tls
        self._listener.release(self)
        if self._transport is not None:
            self.close()
        elif tls is not None and isinstance(tls._transport, asyncio.Transport):  # the socket's, under TLS
            tls._transport.abort()
        else:
            self.sock.close()

    def idle(self) -> bool:
        # aiohttp's RequestHandler waits on `_waiter` for the next request head; none in progress or queued.
        if self._transport is None:  # still in the TLS handshake
            return False
        inner: Any = self._inner
        waiter = getattr(inner, "_waiter", None)
        return (
            waiter is not None
            and not waiter.done()
            and not getattr(inner, "_request_in_progress", True)
            and not getattr(inner, "_messages", True)
        )

    def last_received(self) -> float:
        return self.tls.last_received if self.tls is not None else 0.0

    def unread_bytes(self) -> int:
        if self.sock.fileno() < 0:
            return 0
        pending = array.array("i", [0])
        try:
            fcntl.ioctl(self.sock.fileno(), termios.FIONREAD, pending)
        except OSError:
            return 0
        return pending[0]

    def close(self) -> None:
        # TLS close_notify, then FIN (aiohttp's force_close closes the transport).
        force_close = getattr(self._inner, "force_close", None)
        if force_close is not None:
            force_close()
        elif self._transport is not None:
            self._transport.close()

    def connection_made(self, transport: Any) -> None:
        self._transport = transport
        self._inner = self._factory()
        self._inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received()

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self._listener.release(self)
        self._inner.connection_lost(exc)


class CappedListener:
    """Accepts on `sock`, hands each admitted connection to `protocol_factory` over TLS once the handshake is done."""

    def __init__(
        self,
        sock: socket.socket,
        protocol_factory: Callable[[], asyncio.Protocol],
        ssl_context: Callable[[], ssl.SSLContext],
        limits: ConnectionLimits,
        on_refused: Callable[[str], None] = lambda reason: None,
    ) -> None:
        self.sock = sock
        self.protocol_factory = protocol_factory
        self.ssl_context = ssl_context
        self.limits = limits
        self.on_refused = on_refused
        self.open = 0
        self.by_peer: dict[str, set[_Counted]] = {}
        self.loop = asyncio.get_running_loop()
        self._handshakes: set[asyncio.Task[None]] = set()
        # Every admitted connection, from the handshake on, until it closes: what a stopping server waits for.
        self.connections: set[_Counted] = set()
        self._closed = False
        # A newcomer waiting for a place to turn evictable (webhook/fairness.py `Wait`); accepting pauses meanwhile.
        self._waiting: tuple[socket.socket, str] | None = None
        self._waited: asyncio.TimerHandle | None = None
        self.log = structlog.get_logger("failover_relay.listener")
        sock.setblocking(False)
        self.loop.add_reader(sock.fileno(), self._accept)

    @property
    def sockets(self) -> tuple[socket.socket, ...]:
        return () if self._closed else (self.sock,)

    def close(self) -> None:
        """Stop accepting (connections already admitted live on, as with asyncio.Server.close).

        Connections the kernel has already completed sit in the listening socket's queue; closing it would reset
        them (the caller may have written its review already), so they are accepted and served first."""
        if self._closed:
            return
        self.loop.remove_reader(self.sock.fileno())
        if self._waited is not None:
            self._waited.cancel()
            self._settle_waiting()
        while self._accept(may_wait=False):
            pass
        self._closed = True
        self.sock.close()

    def _accept(self, may_wait: bool = True) -> bool:
        """Accept up to ACCEPT_BATCH connections; whether the batch was full (more may be waiting). Stops at a
        newcomer that waits for a place (`may_wait`), and accepts nothing while one does."""
        if self._waiting is not None:
            self.loop.remove_reader(self.sock.fileno())
            return False
        for _ in range(ACCEPT_BATCH):
            try:
                conn, address = self.sock.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                return False
            except OSError as error:
                if error.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    self.log.error("accept_paused", reason=error.strerror, seconds=ACCEPT_PAUSE_SECONDS)
                    self.loop.remove_reader(self.sock.fileno())
                    self.loop.call_later(ACCEPT_PAUSE_SECONDS, self._resume)
                    return False
                raise
            peer = str(address[0]) if isinstance(address, tuple) else ""
            if not self._place(conn, peer, may_wait):
                return False
        return True

    def _place(self, conn: socket.socket, peer: str, may_wait: bool) -> bool:
        """Admit, refuse or (`may_wait`) hold back a newcomer; False when it waits, accepting paused until then."""
        decision = self._refusal(peer, may_wait)
        if isinstance(decision, Wait):
            self._waiting = (conn, peer)
            self.loop.remove_reader(self.sock.fileno())
            self._waited = self.loop.call_at(decision.until + WAIT_MARGIN_SECONDS, self._end_wait)
            return False
        if decision is not None:
            conn.close()
            self.on_refused(decision)
            return True
        self._admit(conn, peer)
        return True

    def _settle_waiting(self) -> None:
        """Admit or refuse the waiting newcomer, without waiting again."""
        assert self._waiting is not None
        (conn, peer), self._waiting, self._waited = self._waiting, None, None
        self._place(conn, peer, may_wait=False)

    def _end_wait(self) -> None:
        self._settle_waiting()
        if not self._closed:
            self.loop.add_reader(self.sock.fileno(), self._accept)

    def _resume(self) -> None:
        if not self._closed:
            self.loop.add_reader(self.sock.fileno(), self._accept)

    def _refusal(self, peer: str, may_wait: bool) -> str | Wait | None:
        """Why a connection from `peer` is refused, or None; in a full server, the idlest connection of the address
        holding the most may give way, or (`may_wait`) will soon (webhook/fairness.py)."""
        held = self.by_peer.get(peer, set())
        cap = self.limits.max_connections_per_peer
        if len(held) >= cap and idle_count(connection.held() for connection in held) >= cap:
            return "max-connections-per-peer"
        if self.open < self.limits.max_connections:
            return None
        chosen = make_room(
            len(held),
            {address: [c.held() for c in connections] for address, connections in self.by_peer.items()},
            now=self.loop.time(),
        )
        if isinstance(chosen, Wait):
            return chosen if may_wait else "max-connections"
        if chosen is None:
            return "max-connections"
        assert isinstance(chosen.key, _Counted)
        chosen.key.evict()
        self.on_refused("evicted")
        return None

    def _admit(self, conn: socket.socket, peer: str) -> None:
        self.open += 1
        conn.setblocking(False)
        counted = _Counted(self.protocol_factory, self, conn, peer)
        self.by_peer.setdefault(peer, set()).add(counted)
        self.connections.add(counted)
        task = self.loop.create_task(self._handshake(conn, counted))
        self._handshakes.add(task)
        task.add_done_callback(self._handshakes.discard)

    def release(self, counted: _Counted) -> None:
        """Give a connection's place back (once, whichever of close, eviction or a failed handshake comes first)."""
        if counted.released:
            return
        counted.released = True
        self.open -= 1
        peers = self.by_peer[counted.peer]
        peers.discard(counted)
        if not peers:
            del self.by_peer[counted.peer]
        self.connections.discard(counted)
        # The TLS protocol refers to this one: dropping the link back leaves no cycle, so reference counting frees
        # the connection's buffers at once instead of the next full collection.
        counted.tls = None

    async def _handshake(self, conn: socket.socket, protocol: _Counted) -> None:
        handshake = self.loop.create_future()
        # Read at each connection: the client CA reload replaces the context (certs/reload.py).
        tls = _SmallBufferSSLProtocol(
            self.loop,
            protocol,
            self.ssl_context(),
            handshake,
            server_side=True,
            ssl_handshake_timeout=self.limits.handshake_seconds,  # type: ignore[arg-type]  # typeshed says int; asyncio takes float seconds
            ssl_shutdown_timeout=TLS_SHUTDOWN_SECONDS,
        )
        tls.last_received = self.loop.time()  # a new connection counts as just heard from
        protocol.tls = tls
        try:
            await self.loop.connect_accepted_socket(lambda: tls, conn)
            await handshake
        except (OSError, ssl.SSLError, EOFError, asyncio.CancelledError) as error:
            # A failed or timed-out handshake never reaches the HTTP protocol: its place is released here.
            self.release(protocol)
            # The handshake future holds this error, whose traceback holds this frame, which holds the future: a
            # cycle that keeps the connection's TLS state until a full collection. Cut it.
            error.__traceback__ = None
            if isinstance(error, asyncio.CancelledError):
                conn.close()
                raise
            if not protocol.evicted:  # already counted as such
                self.on_refused(
                    "handshake-timeout" if isinstance(error, ConnectionAbortedError) else "handshake-failed"
                )


class CappedTLSSite(web.BaseSite):
    """aiohttp's TCPSite with the CappedListener in place of `loop.create_server`."""

    __slots__ = ("_context_source", "_host", "_limits", "_listener", "_on_refused", "_port")

    def __init__(
        self,
        runner: web.BaseRunner,
        host: str,
        port: int,
        *,
        ssl_context: Callable[[], ssl.SSLContext],
        limits: ConnectionLimits,
        on_refused: Callable[[str], None] = lambda reason: None,
        backlog: int = 128,
    ) -> None:
        super().__init__(runner, ssl_context=ssl_context(), backlog=backlog)
        self._context_source = ssl_context
        self._host, self._port, self._limits, self._on_refused = host, port, limits, on_refused
        self._listener: CappedListener | None = None

    @property
    def listener(self) -> CappedListener:
        assert self._listener is not None, "start() the site first"
        return self._listener

    @property
    def name(self) -> str:
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"https://{host}:{self._port}"

    async def start(self) -> None:
        await super().start()
        assert self._runner.server is not None and self._ssl_context is not None
        loop = asyncio.get_running_loop()
        # The first address the host resolves to, as given: an IP in practice ("0.0.0.0" binds IPv4 only, like
        # aiohttp's TCPSite).
        family, _, _, _, address = (
            await loop.getaddrinfo(self._host or None, self._port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        )[0]
        sock = socket.create_server(address, family=family, backlog=self._backlog)
        self._listener = CappedListener(sock, self._runner.server, self._context_source, self._limits, self._on_refused)
        self._server = self._listener  # type: ignore[assignment]  # aiohttp uses only close() and sockets, which it has
