"""The three servers under test, each one process pinned to CPU 1, and what is read from them (/proc)."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.relay_cli import serve_command

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
SERVER_CPU = "1"


@dataclass
class Server:
    name: str
    command: list[str]
    port: int
    log: Path
    cwd: Path = REPO  # where `python -m relay.cli` finds the relay's packages
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def start(self) -> None:
        with self.log.open("wb") as log:
            # PYTHONPATH too: the project venv's editable install would otherwise import this tree's packages.
            self.process = subprocess.Popen(
                ["taskset", "-c", SERVER_CPU, *self.command],
                cwd=self.cwd,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONPATH": str(self.cwd)},
            )

    def wait_until_answering(self, body: bytes, timeout: float = 30.0) -> dict:
        """Poll with a real review until it is answered 200; returns the parsed answer."""
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.process.returncode}; see {self.log}")
            try:
                return self.post("/validate", body)
            except (OSError, http.client.HTTPException, RuntimeError) as error:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"{self.name} did not answer within {timeout:g}s ({error}); see {self.log}"
                    ) from error
                time.sleep(0.2)

    def post(self, path: str, body: bytes) -> dict:
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # same as wrk and h2load
        connection = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=5, context=context)
        try:
            connection.request("POST", path, body, {"Content-Type": "application/json"})
            response = connection.getresponse()
            payload = response.read()
            if response.status != 200:
                raise RuntimeError(f"{self.name} {path}: HTTP {response.status} {payload[:200]!r}")
            return json.loads(payload)
        finally:
            connection.close()

    def cpu_seconds(self) -> float:
        """CPU time of every thread of the server so far (schedstat: nanoseconds on CPU)."""
        total = 0
        for task in Path(f"/proc/{self.process.pid}/task").iterdir():
            try:
                total += int((task / "schedstat").read_text().split()[0])
            except (OSError, ValueError):  # a thread ended between listing and reading
                continue
        return total / 1e9

    def memory(self) -> dict[str, float]:
        """Resident set now and its peak, in MiB, and the thread count."""
        values: dict[str, float] = {}
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(value.split()[0]) / 1024
            elif key == "Threads":
                values[key] = int(value)
        return values

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# The event loop and JSON libraries failover-relay runs on (relay/commands/serve_command.py: asyncio.run;
# webhook/review.py: the standard library's json decodes, webhook/encoding.py: orjson encodes), so the same-stack
# ceiling does the same. run.py checks the loop against the relay's `serving` log line; adopting uvloop or another JSON
# library means changing this line, which moves the ceiling with it.
OUR_STACK = ("asyncio", "json+orjson")
FAST_STACK = ("uvloop", "orjson")


def ceiling_command(python: Path | str, port: int, cert: Path, key: Path, stack: tuple[str, str]) -> list[str]:
    loop, library = stack
    return [
        str(python),
        str(BENCH / "ceiling_server.py"),
        str(port),
        str(cert),
        str(key),
        "--loop",
        loop,
        "--json",
        library,
    ]


def us_command(port: int, cert_dir: Path, checkpoint_root: Path, *flags: str) -> list[str]:
    # As shipped: the console entry point's module, JSON logs to a file, savepoint injection on.
    return serve_command(port, cert_dir, "--checkpoint-root", str(checkpoint_root), *flags, host=None)


def servers(
    workdir: Path,
    cert: Path,
    key: Path,
    cert_dir: Path,
    member_cert_dir: Path,
    checkpoint_root: Path,
    kopf_python: Path,
    before: Path | None = None,
) -> list[Server]:
    """The servers under load (ceiling, ceiling-fast, kopf, us and, with `before`, us-before: the relay of another
    source tree, e.g. a `git worktree` of an older commit) and `member` (`serve --member`, for its memory).

    `member` serves from `member_cert_dir`, a cert-manager Certificate's files, as a member cluster runs it
    (docs/operations.md, "On member clusters"); the others from `cert_dir`, the relay's own CA."""
    ports = {name: free_port() for name in ("ceiling", "ceiling-fast", "kopf", "us", "us-before", "member")}
    listed = [
        Server(
            "ceiling",
            ceiling_command(sys.executable, ports["ceiling"], cert, key, OUR_STACK),
            ports["ceiling"],
            workdir / "ceiling.log",
        ),
        # uvloop comes from bench/.venv (run.py installs it there with orjson): the relay itself does not use it.
        Server(
            "ceiling-fast",
            ceiling_command(kopf_python, ports["ceiling-fast"], cert, key, FAST_STACK),
            ports["ceiling-fast"],
            workdir / "ceiling-fast.log",
        ),
        Server(
            "kopf",
            [
                str(kopf_python),
                str(BENCH / "kopf_server.py"),
                str(ports["kopf"]),
                str(cert),
                str(key),
                str(checkpoint_root),
            ],
            ports["kopf"],
            workdir / "kopf.log",
        ),
        Server("us", us_command(ports["us"], cert_dir, checkpoint_root), ports["us"], workdir / "us.log"),
        Server(
            "member",
            us_command(ports["member"], member_cert_dir, checkpoint_root, "--member"),
            ports["member"],
            workdir / "member.log",
        ),
    ]
    if before is not None:
        listed.append(
            Server(
                "us-before",
                us_command(ports["us-before"], cert_dir, checkpoint_root),
                ports["us-before"],
                workdir / "us-before.log",
                cwd=before,
            )
        )
    return listed
