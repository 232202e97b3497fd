"""Reviews at full rate over keep-alive TLS connections, every one accounted for.

Each worker holds one HTTP/1.1 connection, as the apiserver's client does per concurrent review, and classifies every
review it tries:

- answered: a 200 AdmissionReview with the review's uid;
- refused: the review was never written, because no connection could be opened (connection refused, or the TLS
  handshake failed: a closed listener, a reset from the kernel's accept queue). The caller knows it was not
  delivered and may try elsewhere;
- lost: the review was written on an open connection and no answer came: silently dropped, what must never happen.

Like Go's transport (net/http persistConn.readLoop), a worker notices a connection the server closed while it sat
idle and opens a new one rather than writing into it; a server that closes a connection at the very moment a review
is written on it still loses that review, and that is counted.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import uuid
from dataclasses import dataclass, field

from tests.admission_reviews import admission_review
from tests.policies import flink_policy

CONNECT_TIMEOUT_SECONDS = 5.0
# Longer than any grace the tests configure: a review in flight at SIGTERM may take that long to be answered.
ANSWER_TIMEOUT_SECONDS = 20.0
# After a refusal, a worker waits this long before it dials again (a real caller backs off, and a busy loop of
# refused dials would starve the server under test of CPU).
REDIAL_PAUSE_SECONDS = 0.01


@dataclass
class Tally:
    answered: int = 0
    refused: int = 0
    lost: int = 0
    wrong: int = 0  # an answer that is not this review's 200
    lost_how: list[str] = field(default_factory=list)

    def line(self) -> str:
        return f"answered {self.answered}, refused {self.refused}, lost {self.lost}, wrong answers {self.wrong}"


def _request(port: int) -> tuple[bytes, str]:
    review = admission_review(flink_policy(), uid=str(uuid.uuid4()))
    body = json.dumps(review).encode()
    head = (
        f"POST /validate HTTP/1.1\r\nHost: localhost:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    return head + body, review["request"]["uid"]


async def _read_answer(reader: asyncio.StreamReader) -> tuple[int, bytes, bool]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])}
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return status, body, headers.get("connection", "").lower() == "close"


async def _worker(port: int, context: ssl.SSLContext, stop: asyncio.Event, tally: Tally) -> None:
    connection: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
    while not stop.is_set():
        if connection is not None and (connection[0].at_eof() or connection[1].is_closing()):
            connection[1].close()  # closed by the server while idle: a pool discards it
            connection = None
        if connection is None:
            try:
                connection = await asyncio.wait_for(
                    asyncio.open_connection("127.0.0.1", port, ssl=context, server_hostname="localhost"),
                    CONNECT_TIMEOUT_SECONDS,
                )
            except (OSError, ssl.SSLError, TimeoutError, EOFError):
                tally.refused += 1
                await asyncio.sleep(REDIAL_PAUSE_SECONDS)
                continue
        reader, writer = connection
        data, uid = _request(port)
        try:
            writer.write(data)
            status, body, close = await asyncio.wait_for(_read_answer(reader), ANSWER_TIMEOUT_SECONDS)
        except (OSError, ssl.SSLError, TimeoutError, asyncio.IncompleteReadError, ValueError) as error:
            tally.lost += 1
            tally.lost_how.append(type(error).__name__)
            writer.close()
            connection = None
            continue
        if status == 200 and json.loads(body)["response"]["uid"] == uid:
            tally.answered += 1
        else:
            tally.wrong += 1
        if close:
            writer.close()
            connection = None
    if connection is not None:
        connection[1].close()


async def drive(port: int, context: ssl.SSLContext, stop: asyncio.Event, workers: int) -> Tally:
    """Reviews from `workers` concurrent callers until `stop` is set; the tally of all of them."""
    tally = Tally()
    await asyncio.gather(*(_worker(port, context, stop, tally) for _ in range(workers)))
    return tally


async def ready(port: int, context: ssl.SSLContext) -> bool:
    """GET /readyz answered 200 (the probe the kubelet and the Service's endpoints go by)."""
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port, ssl=context, server_hostname="localhost"), 2
        )
    except (OSError, ssl.SSLError, TimeoutError):
        return False
    try:
        writer.write(b"GET /readyz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        status, _, _ = await asyncio.wait_for(_read_answer(reader), 2)
        return status == 200
    except (OSError, ssl.SSLError, TimeoutError, asyncio.IncompleteReadError, ValueError):
        return False
    finally:
        writer.close()


class ServiceAddress:
    """One address in front of several replicas, as a Service is: each new connection goes to a replica whose
    /readyz said 200 at the last poll (the endpoints controller and kube-proxy, with their delay), round robin; a
    connection to a replica that has gone is closed before a byte is relayed, as kube-proxy's REJECT does."""

    POLL_SECONDS = 0.1

    def __init__(self, backends: list[int], context: ssl.SSLContext) -> None:
        self.backends, self.context = backends, context
        self.ready: list[int] = []
        self._polled = asyncio.Event()
        self._next = 0
        self._server: asyncio.Server | None = None
        self._poller: asyncio.Task[None] | None = None
        self.port = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        self._poller = asyncio.create_task(self._poll())

    async def close(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
        if self._server is not None:
            self._server.close()

    async def _poll(self) -> None:
        while True:
            states = await asyncio.gather(*(ready(port, self.context) for port in self.backends))
            self.ready = [port for port, up in zip(self.backends, states, strict=True) if up]
            self._polled.set()
            await asyncio.sleep(self.POLL_SECONDS)

    async def all_ready(self) -> None:
        """Until every replica is among the endpoints."""
        while len(self.ready) < len(self.backends):
            self._polled.clear()
            await self._polled.wait()

    async def _relay(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        if not self.ready:
            client_writer.close()
            return
        self._next += 1
        port = self.ready[self._next % len(self.ready)]
        try:
            backend_reader, backend_writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(_pipe(client_reader, backend_writer), _pipe(backend_reader, client_writer))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        writer.close()
