"""Child processes of the tests' harnesses (the envtest tier's etcd and kube-apiserver, the Karmada tier's control
plane, the relay): each in a process group of its own with its own log file, stopped by PID, on loopback ports.

Ports: ``free_port()`` asks the OS for one that is free a moment ago. Another process on the machine (another test
session, CI's other tiers) may bind it before the component does; such a component exits with "address already in
use", and ``await_ready_on_free_ports`` starts it again on new ports, up to ``PORT_ATTEMPTS`` times in all, before
anything names its address.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tests.waiting import wait_until

LOOPBACK = "127.0.0.1"
# Every binary the harnesses run stops within a second on SIGTERM when idle; a graceful apiserver shutdown drains
# in-flight requests (watches included), so allow a few seconds before SIGKILL.
STOP_TIMEOUT_SECONDS = 10.0
LOG_TAIL_LINES = 30
# A component that finds its port taken is started again on new ports, this many times in all.
PORT_ATTEMPTS = 3
PROBE_TIMEOUT_SECONDS = 5.0


class ControlPlaneError(RuntimeError):
    """A harness's process could not start (or restart); the message carries the tail of the failing process's log."""


def free_port() -> int:
    """A loopback TCP port that was free a moment ago (the OS picks it; ``await_ready_on_free_ports`` copes with the
    race)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


def loopback_env() -> dict[str, str]:
    """The environment for child processes: never route loopback traffic (etcd, webhooks on 127.0.0.1) via a proxy."""
    env = dict(os.environ)
    no_proxy = ",".join(filter(None, [env.get("NO_PROXY", ""), "127.0.0.1", "localhost"]))
    env["NO_PROXY"] = env["no_proxy"] = no_proxy
    return env


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of a log file, for failure reports."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log written)"


def die_with_parent() -> None:
    """A `preexec_fn`: the child gets SIGKILL when the thread that started it dies without stopping it (Linux's
    PR_SET_PDEATHSIG), so a test process killed outright leaves no apiserver or JVM behind. Start such children from
    the main thread only."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def interruptible() -> None:
    """A `preexec_fn` for a child the test stops with SIGINT, as Ctrl-C would: a shell starts a background job (a CI
    runner's, `make test &`) with SIGINT ignored, every process below inherits that, and Python then never installs
    its KeyboardInterrupt handler."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@dataclass(frozen=True)
class Answer:
    """The answer to one HTTP probe: status code (0 when there was no answer) and body."""

    status: int
    body: str


def probe(url: str, context: ssl.SSLContext | None = None, headers: Mapping[str, str] | None = None) -> Answer:
    """One GET of a component's health or readiness endpoint, never through a proxy from the environment."""
    request = urllib.request.Request(url, headers=dict(headers or {}))
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=context))
    try:
        with opener.open(request, timeout=PROBE_TIMEOUT_SECONDS) as response:
            return Answer(int(response.status), response.read().decode(errors="replace"))
    except urllib.error.HTTPError as error:
        return Answer(int(error.code), error.read().decode(errors="replace"))
    except (urllib.error.URLError, OSError, ssl.SSLError):
        return Answer(0, "")


@dataclass
class ChildProcess:
    """One child process in its own process group, with its log file; stopped by PID.

    ``die_with_parent`` (PR_SET_PDEATHSIG) ties the child to the thread that starts it: leave it off for a process
    that may be started from a worker thread, which would take the child with it when it ends.
    """

    name: str
    args: list[str]
    log: Path
    env: dict[str, str] | None = None
    cwd: Path | None = None
    die_with_parent: bool = True
    popen: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    log_offset: int = 0

    @property
    def pid(self) -> int | None:
        return self.popen.pid if self.running() and self.popen else None

    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def start(self) -> None:
        if self.running():
            raise ControlPlaneError(f"{self.name} is already running (pid {self.pid})")
        with self.log.open("ab") as log:
            self.log_offset = log.tell()
            log.write(f"\n=== {self.name} started {time.strftime('%H:%M:%S')}: {' '.join(self.args)}\n".encode())
            log.flush()
            # A new session: a Ctrl-C in the terminal reaches only the test process, which then stops the group.
            self.popen = subprocess.Popen(
                self.args,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env or loopback_env(),
                cwd=self.cwd,
                start_new_session=True,
                preexec_fn=die_with_parent if self.die_with_parent else None,
            )

    def stop(self, timeout: float = STOP_TIMEOUT_SECONDS) -> None:
        """SIGTERM to the process group, SIGKILL after ``timeout``; then SIGKILL to anything left in the group."""
        popen = self.popen
        if popen is None:
            return
        if popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(popen.pid, signal.SIGTERM)
                os.killpg(popen.pid, signal.SIGCONT)  # a partitioned TCP relay is stopped (SIGSTOP) and must see it
            try:
                popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(popen.pid, signal.SIGKILL)
                popen.wait()
        # Anything the process left in its group (none of these fork, but a wrapper might).
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(popen.pid, signal.SIGKILL)

    def signal_group(self, signum: int) -> None:
        """Send ``signum`` to the running process's group (SIGSTOP / SIGCONT: a partition and its healing)."""
        pid = self.pid
        assert pid is not None, f"{self.name} is not running"
        os.killpg(pid, signum)

    def lost_its_port(self) -> bool:
        """Whether this run exited because a port it was given had been taken meanwhile (free_port's race with
        other processes on the machine: other test sessions, CI's other tiers)."""
        if self.running():
            return False
        with self.log.open("rb") as log:
            log.seek(self.log_offset)
            return b"address already in use" in log.read()

    def exited(self, lines: int = LOG_TAIL_LINES) -> str | None:
        """None while running; else a message with the exit code and the log tail."""
        if self.popen is None or self.popen.poll() is None:
            return None
        return f"{self.name} exited with code {self.popen.returncode}; log tail:\n{log_tail(self.log, lines)}"

    def wait_ready(
        self,
        answer: Callable[[], Answer],
        *,
        timeout: float,
        ready: Callable[[Answer], bool] = lambda answer: answer.status == 200,
        wait: Callable[[Callable[[], bool], float, str], object] = wait_until,
        lines: int = LOG_TAIL_LINES,
    ) -> None:
        """Poll ``answer()`` until ``ready`` accepts it; a ControlPlaneError with the log tail at once when the
        process exits, or with the last answer when ``timeout`` passes. ``wait`` is the caller's ``wait_until`` (the
        Karmada tier's also fails when another of its processes died)."""
        last = Answer(0, "")

        def answered() -> bool:
            nonlocal last
            message = self.exited(lines)
            if message:
                raise ControlPlaneError(message)
            last = answer()
            return ready(last)

        try:
            wait(answered, timeout, f"{self.name} ready")
        except TimeoutError:
            raise ControlPlaneError(
                f"{self.name} not ready after {timeout:.0f} s (last answer {last.status}: {last.body[-500:]}); "
                f"log tail:\n{log_tail(self.log, lines)}"
            ) from None


def await_ready_on_free_ports(
    process: ChildProcess,
    command: Callable[[], list[str]],
    new_ports: Callable[[], None],
    ready: Callable[[], None],
    attempts: int = PORT_ATTEMPTS,
) -> None:
    """Wait with ``ready()`` for a started ``process``; when it exits because a port it was given was taken in the
    meantime, ``new_ports()`` picks others and it starts again with ``command()`` (which reads them), ``attempts``
    times in all."""
    for attempt in range(1, attempts + 1):
        try:
            ready()
            return
        except ControlPlaneError:
            if attempt == attempts or not process.lost_its_port():
                raise
        new_ports()
        process.args = command()
        process.start()
