"""The environment's processes by name and the loopback ports they were given.

Each component is a ``ChildProcess`` of ``tests/processes.py`` (own process group and log file, stopped by PID) on
ports from ``free_port()``; one that exits with "address already in use" is started again on new ports before
anything names its address. Every wait of the environment fails at once when one of its processes died, except
those a test stopped on purpose.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from tests.processes import (
    LOG_TAIL_LINES,
    LOOPBACK,
    STOP_TIMEOUT_SECONDS,
    ChildProcess,
    ControlPlaneError,
    await_ready_on_free_ports,
    free_port,
    log_tail,
    probe,
)
from tests.waiting import POLL_SECONDS, wait_until

T = TypeVar("T")


class Components:
    """The processes of one environment, their ports, and the waits that watch them."""

    def __init__(self, startup_timeout: float) -> None:
        self.startup_timeout = startup_timeout
        self.logs_dir: Path | None = None  # set by the start
        self.ports: dict[str, int] = {}
        self.processes: dict[str, ChildProcess] = {}
        # Processes a test stopped (a member apiserver, the relay): their exit is no failure of the harness.
        self.stopped_on_purpose: set[str] = set()

    def pick_ports(self, *names: str) -> None:
        """A free port for each of `names`, never one another name of this environment holds: ports are picked before
        their processes bind them, and the kernel may hand a port it just freed out again. A relay given the port of
        member1's TCP relay once passed its readiness probe on member1's kube-apiserver, and failed to start."""
        for name in names:
            others = {port for other, port in self.ports.items() if other != name}
            port = free_port()
            while port in others:
                port = free_port()
            self.ports[name] = port

    def url(self, port: str, scheme: str = "https") -> str:
        """The loopback address of the port named ``port``."""
        return f"{scheme}://{LOOPBACK}:{self.ports[port]}"

    def pid(self, name: str) -> int | None:
        return self.processes[name].pid

    # -- starting ---------------------------------------------------------------------------------------------------

    def spawn(self, name: str, args: list[str], **kwargs: Any) -> ChildProcess:
        """Start ``name`` without waiting for it; its log is ``<logs>/<name>.log``."""
        assert self.logs_dir is not None, "the environment is not started"
        process = ChildProcess(name, args, self.logs_dir / f"{name}.log", **kwargs)
        self.processes[name] = process
        process.start()
        return process

    def start(
        self,
        name: str,
        args: Callable[[], list[str]],
        ports: Sequence[str],
        ready_url: Callable[[], str],
        context: ssl.SSLContext | None = None,
        **kwargs: Any,
    ) -> ChildProcess:
        """Spawn a component and wait until ``ready_url()`` answers 200; when it exits because one of its
        ``ports`` was taken in the meantime, pick new ones and start it again (``args``, ``ready_url`` read them)."""
        process = self.spawn(name, args(), **kwargs)
        self.await_ready(process, args, ports, ready_url, context)
        return process

    def await_ready(
        self,
        process: ChildProcess,
        args: Callable[[], list[str]],
        ports: Sequence[str],
        ready_url: Callable[[], str],
        context: ssl.SSLContext | None = None,
    ) -> None:
        """Wait for a spawned component as ``start`` does."""
        await_ready_on_free_ports(
            process, args, lambda: self.pick_ports(*ports), lambda: self.wait_ready(process, ready_url(), context)
        )

    def restart(self, name: str, ready_url: str, context: ssl.SSLContext | None = None) -> None:
        """Start a stopped process again with the same arguments (its ports stay: something names them)."""
        process = self.processes[name]
        process.start()
        self.stopped_on_purpose = self.stopped_on_purpose - {name}
        self.wait_ready(process, ready_url, context)

    def wait_ready(
        self, process: ChildProcess, url: str, context: ssl.SSLContext | None = None, timeout: float | None = None
    ) -> None:
        process.wait_ready(lambda: probe(url, context), timeout=timeout or self.startup_timeout, wait=self.wait_until)

    def wait_until(self, condition: Callable[[], T], timeout: float, what: str, interval: float = POLL_SECONDS) -> T:
        """``wait_until`` that also fails at once when one of the processes has died."""

        def checked() -> T:
            for process in self.processes.values():
                message = process.exited()
                if message and process.name not in self.stopped_on_purpose:
                    raise ControlPlaneError(f"while waiting for {what}: {message}")
            return condition()

        return wait_until(checked, timeout, what, interval)

    # -- stopping ---------------------------------------------------------------------------------------------------

    def stop(self, name: str, timeout: float = STOP_TIMEOUT_SECONDS) -> None:
        """Stop ``name`` on purpose (a test's outage): its exit fails no wait until it is started again."""
        process = self.processes.get(name)
        if process is not None:
            self.stopped_on_purpose = self.stopped_on_purpose | {name}
            process.stop(timeout)

    def stop_all(self, first: Sequence[str]) -> None:
        """Stop every process, those named in ``first`` in that order, then the rest."""
        for name in [*first, *(n for n in self.processes if n not in first)]:
            process = self.processes.get(name)
            if process is not None:
                process.stop()
        self.processes.clear()

    # -- what there is ------------------------------------------------------------------------------------------------

    def pids(self) -> dict[str, int]:
        return {name: process.pid for name, process in self.processes.items() if process.pid is not None}

    def logs(self) -> dict[str, Path]:
        return {name: process.log for name, process in self.processes.items()}

    def log_tails(self, lines: int = LOG_TAIL_LINES) -> str:
        return "\n".join(
            f"--- {name} ({process.log}) ---\n{log_tail(process.log, lines)}"
            for name, process in self.processes.items()
        )

    def rss_bytes(self) -> int:
        """Resident memory of every running process (VmRSS from /proc)."""
        total = 0
        for pid in self.pids().values():
            with contextlib.suppress(OSError):
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
        return total
