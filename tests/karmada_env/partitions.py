"""Links that a test can cut: a TCP relay (``tests/karmada/tcp_relay.py``) in front of each member, through which
the control plane reaches it, and one between a Pull member's karmada-agent and karmada-apiserver.

A partition is SIGSTOP to the relay's process group (by PID), its healing SIGCONT: a stopped relay neither answers nor
resets, so one side sees what a cut link shows (requests and handshakes that time out) while the other, its copies
and the tests' direct view of it carry on.
"""

from __future__ import annotations

import signal
import sys

from tests.karmada_env.layout import REPO_ROOT
from tests.karmada_env.processes import Components
from tests.tls_clients import unverified_tls


def link(member: str) -> str:
    """The name (process and port) of the TCP relay in front of ``member`` (or of an agent)."""
    return f"tcp-relay-{member}"


class Links:
    """The TCP relays of one environment."""

    def __init__(self, components: Components) -> None:
        self.components = components

    def url(self, name: str) -> str:
        return self.components.url(name)

    def pid(self, name: str) -> int | None:
        return self.components.pid(name)

    def start(self, name: str, target: str, *more_targets: str) -> None:
        """The relay ``name`` (its port picked already) to the port named ``target`` (and ``more_targets``, in turn),
        ready when a target's ``/readyz`` answers through it."""
        self.components.start(
            name,
            lambda: [
                sys.executable,
                "-m",
                "tests.karmada.tcp_relay",
                str(self.components.ports[name]),
                *(str(self.components.ports[t]) for t in (target, *more_targets)),
            ],
            (name,),
            lambda: f"{self.url(name)}/readyz",
            unverified_tls(),
            cwd=REPO_ROOT,
        )

    def cut(self, name: str) -> None:
        """SIGSTOP the relay: nothing passes until ``heal``."""
        self.components.processes[name].signal_group(signal.SIGSTOP)

    def heal(self, name: str) -> None:
        self.components.processes[name].signal_group(signal.SIGCONT)

    def stop(self, name: str) -> None:
        """Stop the relay for good (on purpose: its exit fails no wait)."""
        self.components.stop(name)
