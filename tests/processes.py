"""Child processes of the tests: how they are started so that none outlives the test process."""

from __future__ import annotations

import ctypes
import signal
import sys


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
