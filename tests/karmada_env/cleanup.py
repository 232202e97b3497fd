"""No environment outlives the test process: every started one is stopped at exit and on SIGTERM and SIGHUP (its
logs kept). On Linux its children also get SIGKILL when the process dies without cleaning up (``die_with_parent``
of ``tests/processes.py``)."""

from __future__ import annotations

import atexit
import os
import signal
import threading
from types import FrameType
from typing import Protocol


class Stoppable(Protocol):
    def stop(self, keep: bool = False) -> None: ...


# Every started environment, for atexit and the signal handlers.
_LIVE: set[Stoppable] = set()
_LIVE_LOCK = threading.Lock()
_HANDLERS_INSTALLED = False


def track(env: Stoppable) -> None:
    """Stop ``env`` when the test process ends, unless it was stopped (``untrack``) before."""
    _install_cleanup()
    with _LIVE_LOCK:
        _LIVE.add(env)


def untrack(env: Stoppable) -> None:
    with _LIVE_LOCK:
        _LIVE.discard(env)


def _stop_all() -> None:
    with _LIVE_LOCK:
        live = list(_LIVE)
    for env in live:
        env.stop(keep=True)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    _stop_all()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _install_cleanup() -> None:
    global _HANDLERS_INSTALLED
    if _HANDLERS_INSTALLED:
        return
    _HANDLERS_INSTALLED = True
    atexit.register(_stop_all)
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(signum) in (signal.SIG_DFL, None):
                signal.signal(signum, _on_signal)
