"""The three servers under test, each one process pinned to CPU 1, and what is read from them (/proc)."""

from __future__ import annotations

import http.client
import json
import signal
import socket
import ssl
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
SERVER_CPU = "1"


@dataclass
class Server:
    name: str
    command: list[str]
    port: int
    log: Path
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def start(self) -> None:
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(["taskset", "-c", SERVER_CPU, *self.command], cwd=REPO,
                                            stdout=log, stderr=subprocess.STDOUT)

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
                    raise RuntimeError(f"{self.name} did not answer within {timeout:g}s ({error}); see {self.log}")
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


def servers(workdir: Path, cert: Path, key: Path, cert_dir: Path, checkpoint_root: Path,
            kopf_python: Path) -> list[Server]:
    ceiling_port, kopf_port, us_port = free_port(), free_port(), free_port()
    return [
        Server("ceiling", [sys.executable, str(BENCH / "ceiling_server.py"), str(ceiling_port), str(cert), str(key)],
               ceiling_port, workdir / "ceiling.log"),
        Server("kopf", [str(kopf_python), str(BENCH / "kopf_server.py"), str(kopf_port), str(cert), str(key),
                        str(checkpoint_root)], kopf_port, workdir / "kopf.log"),
        # As shipped: the console entry point's module, JSON logs to a file, savepoint injection on.
        Server("us", [sys.executable, "-m", "relay.cli", "serve", "--port", str(us_port), "--cert-dir", str(cert_dir),
                      "--log-format", "json", "--checkpoint-root", str(checkpoint_root)], us_port,
               workdir / "us.log"),
    ]
