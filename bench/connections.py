"""Connection flood: RSS of `failover-relay serve` with N idle connections and after they close, and whether a
legitimate review is still answered within 1 s meanwhile (issue 15). Loopback only, bounded in size and time.

    .venv/bin/python bench/connections.py                 # N=2000, the flood from 127.0.0.1
    .venv/bin/python bench/connections.py --connections 500 --max-connections-per-peer 100000 --max-connections 100000
    .venv/bin/python bench/connections.py --waves 12     # 12 waves of 2000 bare connects, RSS after each

Three floods, one after another against one server: bare TCP connects that never send a byte, connections that
complete the TLS handshake and then stay idle, and clients posting 3 MiB bodies of empty objects. The legitimate
client sits on its own address (127.0.0.2, as the apiserver is another peer than the attacker) and posts a
PropagationPolicy review every 100 ms on a fresh TLS connection, and /healthz on another, for the whole run; the
report gives the slowest answer of each and any that failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.admission_reviews import admission_review  # noqa: E402
from tests.policies import flink_policy  # noqa: E402
from tests.relay_cli import serve_command  # noqa: E402

MAX_CONNECTIONS = 5000  # the bound of this script: it is a benchmark, not a load generator
LEGIT_ADDRESS = "127.0.0.2"
FLOOD_ADDRESS = "127.0.0.1"


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Legit:
    """A review every 100 ms and a /healthz every 100 ms from LEGIT_ADDRESS, each on a fresh TLS connection."""

    def __init__(self, port: int, ca_file: Path) -> None:
        self.port = port
        self.context = ssl.create_default_context(cafile=str(ca_file))
        self.context.check_hostname = False
        self.review = json.dumps(admission_review(flink_policy())).encode()
        self.phase = "rest"
        self.slowest: dict[str, float] = {}
        self.failed: dict[str, int] = {}
        self.count: dict[str, int] = {}

    async def one(self, what: str) -> None:
        started = time.perf_counter()
        try:
            async with asyncio.timeout(5):
                reader, writer = await asyncio.open_connection(
                    "127.0.0.1", self.port, ssl=self.context, local_addr=(LEGIT_ADDRESS, 0)
                )
                if what == "review":
                    head = (
                        f"POST /validate HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\n"
                        f"Content-Length: {len(self.review)}\r\nConnection: close\r\n\r\n"
                    ).encode()
                    writer.write(head + self.review)
                else:
                    writer.write(b"GET /healthz HTTP/1.1\r\nHost: relay\r\nConnection: close\r\n\r\n")
                answer = await reader.read()
                writer.close()
            ok = answer.startswith(b"HTTP/1.1 200")
        except (OSError, TimeoutError, ssl.SSLError):
            ok = False
        elapsed = time.perf_counter() - started
        key = f"{self.phase}/{what}"
        self.count[key] = self.count.get(key, 0) + 1
        self.failed.setdefault(key, 0)
        if ok:
            self.slowest[key] = max(self.slowest.get(key, 0.0), elapsed)
        else:
            self.failed[key] += 1

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await asyncio.gather(self.one("review"), self.one("healthz"), asyncio.sleep(0.1))

    def lines(self) -> list[str]:
        phases = dict.fromkeys(key.partition("/")[0] for key in self.count)
        return [
            f"  during {phase}: "
            + ", ".join(
                f"{what} {self.count.get(f'{phase}/{what}', 0)} answered-or-failed, slowest "
                f"{self.slowest.get(f'{phase}/{what}', 0.0) * 1000:.0f} ms, "
                f"failed {self.failed.get(f'{phase}/{what}', 0)}"
                for what in ("review", "healthz")
            )
            for phase in phases
        ]


async def bare_connects(port: int, count: int) -> list[socket.socket]:
    sockets = []
    for _ in range(count):
        sock = socket.socket()
        sock.setblocking(False)
        try:
            sock.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        sockets.append(sock)
        if len(sockets) % 200 == 0:
            await asyncio.sleep(0)
    return sockets


async def tls_idle(port: int, count: int, context: ssl.SSLContext) -> list[asyncio.StreamWriter]:
    writers: list[asyncio.StreamWriter] = []

    async def one() -> None:
        try:
            async with asyncio.timeout(10):
                _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
            writers.append(writer)
        except (OSError, TimeoutError, ssl.SSLError):
            pass

    for start in range(0, count, 100):
        await asyncio.gather(*(one() for _ in range(min(100, count - start))))
    return writers


async def big_bodies(port: int, context: ssl.SSLContext, clients: int, seconds: float) -> int:
    body = (
        b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x","object":['
        + b",".join([b"{}"] * (3 * 1024 * 1024 // 3 - 40))
        + b"]}}"
    )
    body = body[: 3 * 1024 * 1024 - 2] + b"]}}" if len(body) > 3 * 1024 * 1024 else body
    sent = 0
    deadline = time.monotonic() + seconds

    async def client() -> None:
        nonlocal sent
        while time.monotonic() < deadline:
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
                writer.write(
                    f"POST /validate HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                    + body
                )
                await reader.read()
                writer.close()
                sent += 1
            except (OSError, ssl.SSLError):
                await asyncio.sleep(0.05)

    await asyncio.gather(*(client() for _ in range(clients)))
    return sent


async def settle(pid: int, seconds: float) -> float:
    await asyncio.sleep(seconds)
    return rss_mb(pid)


async def bench(args: argparse.Namespace, pid: int, port: int, ca_file: Path) -> list[str]:
    context = ssl.create_default_context(cafile=str(ca_file))
    context.check_hostname = False
    lines = [f"server RSS at rest: {rss_mb(pid):.1f} MB"]
    legit = Legit(port, ca_file)
    stop = asyncio.Event()
    legit_task = asyncio.create_task(legit.run(stop))
    await asyncio.sleep(1)

    legit.phase = "bare connects"
    sockets = await bare_connects(port, args.connections)
    await asyncio.sleep(2)
    lines.append(f"{args.connections} bare connects (no byte sent), after 2 s: RSS {rss_mb(pid):.1f} MB")
    await asyncio.sleep(args.handshake_wait)
    lines.append(f"  after {2 + args.handshake_wait:g} s: RSS {rss_mb(pid):.1f} MB")
    for sock in sockets:
        sock.close()
    lines.append(f"  closed, after 3 s: RSS {await settle(pid, 3):.1f} MB")

    legit.phase = "idle TLS connections"
    writers = await tls_idle(port, args.connections, context)
    lines.append(
        f"{args.connections} TLS connections attempted, {len(writers)} held idle after the handshake: "
        f"RSS {await settle(pid, 1):.1f} MB"
    )
    for writer in writers:
        writer.close()
    lines.append(f"  closed, after 3 s: RSS {await settle(pid, 3):.1f} MB")

    legit.phase = "3 MiB bodies"
    sent = await big_bodies(port, context, args.body_clients, args.body_seconds)
    lines.append(
        f"{args.body_clients} clients posting 3 MiB bodies of empty objects for {args.body_seconds:g} s "
        f"({sent} bodies): RSS {await settle(pid, 1):.1f} MB"
    )
    stop.set()
    await legit_task
    lines.append(f"meanwhile from {LEGIT_ADDRESS}, a review and a /healthz every 100 ms on fresh connections:")
    lines.extend(legit.lines())
    return lines


async def waves(args: argparse.Namespace, pid: int, port: int) -> list[str]:
    """Repeated floods (issue 28): each wave connects, says nothing until the handshake timeout has closed what was
    admitted, then closes; RSS after each. Memory that only a full collection returns climbs wave after wave."""
    lines = [f"server RSS at rest: {rss_mb(pid):.1f} MB"]
    for wave in range(1, args.waves + 1):
        sockets = await bare_connects(port, args.connections)
        await asyncio.sleep(args.handshake_wait)
        for sock in sockets:
            sock.close()
        lines.append(f"after wave {wave}: RSS {await settle(pid, 1):.1f} MB")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=2000, help="size of each flood (at most 5000)")
    parser.add_argument("--max-connections", type=int, help="passed to serve (default: its own)")
    parser.add_argument("--max-connections-per-peer", type=int, help="passed to serve (default: its own)")
    parser.add_argument(
        "--handshake-wait", type=float, default=6.0, help="how long the bare connects are held after the first reading"
    )
    parser.add_argument(
        "--waves",
        type=int,
        default=0,
        help="instead of the three floods: this many waves of bare connects, RSS after each",
    )
    parser.add_argument("--body-clients", type=int, default=4)
    parser.add_argument("--body-seconds", type=float, default=10.0)
    args = parser.parse_args()
    if not 1 <= args.connections <= MAX_CONNECTIONS:
        parser.error(f"--connections must be between 1 and {MAX_CONNECTIONS}")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 2 * args.connections + 256)), hard))

    port = free_port()
    with tempfile.TemporaryDirectory(prefix="failover-relay-connections-") as scratch:
        cert_dir = Path(scratch, "certs")
        command = serve_command(port, cert_dir, "--no-controllers", "--log-level", "error")
        if args.max_connections:
            command += ["--max-connections", str(args.max_connections)]
        if args.max_connections_per_peer:
            command += ["--max-connections-per-peer", str(args.max_connections_per_peer)]
        env = {**os.environ, "FAILOVER_RELAY_ALLOW_PYTHON_GH109534": "1"}
        env.pop("KUBERNETES_SERVICE_HOST", None)
        server = subprocess.Popen(command, cwd=REPO, env=env, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 30
            while not (cert_dir / "ca.crt").exists() or not _answers(port):
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit("the server did not start")
                time.sleep(0.2)
            print(
                f"Python {sys.version.split()[0]}, {args.connections} connections per flood, "
                f"serve {' '.join(command[3:])}"
            )
            run = waves(args, server.pid, port) if args.waves else bench(args, server.pid, port, cert_dir / "ca.crt")
            for line in asyncio.run(run):
                print(line)
        finally:
            server.terminate()
            server.wait(timeout=30)
    return 0


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


if __name__ == "__main__":
    sys.exit(main())
