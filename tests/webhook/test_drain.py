"""What a stopping server may close (webhook/drain.py), as a function of what it observed and the time."""

from __future__ import annotations

import pytest

from webhook.drain import SWEEP_SECONDS, Connection, closable, sweep

QUIET = 0.25


@pytest.mark.parametrize(
    ("idle_since", "last_received", "unread", "now", "expected"),
    [
        (None, 0.0, 0, 10.0, False),  # a request in progress
        (9.0, 9.0, 0, 10.0, True),  # idle and silent for a second
        (9.9, 9.0, 0, 10.0, False),  # just answered: the caller may be writing its next review
        (9.0, 9.9, 0, 10.0, False),  # a byte arrived a moment ago (a request head on its way)
        (9.0, 9.0, 120, 10.0, False),  # the kernel holds bytes not read yet
        (9.75, 9.75, 0, 10.0, True),  # exactly quiet
    ],
)
def test_closable(idle_since: float | None, last_received: float, unread: int, now: float, expected: bool) -> None:
    assert (
        closable(idle_since=idle_since, last_received=last_received, unread_bytes=unread, now=now, quiet=QUIET)
        is expected
    )


class SteppingClock:
    """Loop time as the sweep sees it, one sweep period further at each reading: what the sweep decides then depends
    on this clock alone, not on how late a loaded machine wakes its sleeps (on the real clock, one sleep woken 0.15 s
    late makes a correct sweep look like one that waits anew)."""

    def __init__(self) -> None:
        self.read = 0.0  # the last reading
        self._next = 0.0

    def __call__(self) -> float:
        self.read, self._next = self._next, self._next + SWEEP_SECONDS
        return self.read


class IdleConnection:
    """An idle keep-alive connection that last received a byte at `since`; `closed_at` is the sweep's time (its
    clock's last reading) when it closed the connection."""

    def __init__(self, since: float, clock: SteppingClock) -> None:
        self.since = since
        self.clock = clock
        self.closed_at: float | None = None

    def idle(self) -> bool:
        return True

    def last_received(self) -> float:
        return self.since

    def unread_bytes(self) -> int:
        return 0

    def close(self) -> None:
        self.closed_at = self.clock.read


async def test_a_second_sweep_of_the_same_stop_does_not_wait_anew() -> None:
    """The drain and the grace are two sweeps; a connection seen idle in the first is closed once quiet, counted
    from then, not from the start of the second."""
    clock = SteppingClock()
    connection = IdleConnection(0.0, clock)
    open_ = [connection]

    def connections() -> list[IdleConnection]:
        return [c for c in open_ if c.closed_at is None]

    seen: dict[Connection, float] = {}
    await sweep(connections, until=0.2, stop_when_empty=False, clock=clock, quiet=0.3, idle_since=seen)
    assert connection.closed_at is None  # not quiet yet when the first sweep ends
    await sweep(connections, until=5.0, stop_when_empty=True, clock=clock, quiet=0.3, idle_since=seen)
    assert connection.closed_at is not None
    # 0.3 after it was first seen idle (at 0), give or take the sweep's period; waiting anew from the start of the
    # second sweep would close it at 0.2 + 0.3 or later.
    assert 0.3 <= connection.closed_at < 0.3 + 2 * SWEEP_SECONDS < 0.2 + 0.3
