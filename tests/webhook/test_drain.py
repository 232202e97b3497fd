"""What a stopping server may close (webhook/drain.py), as a function of what it observed and the time."""

from __future__ import annotations

import asyncio

import pytest

from webhook.drain import Connection, closable, sweep

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


class IdleConnection:
    """An idle keep-alive connection that last received a byte at loop time `since`."""

    def __init__(self, since: float) -> None:
        self.since = since
        self.closed_at: float | None = None

    def idle(self) -> bool:
        return True

    def last_received(self) -> float:
        return self.since

    def unread_bytes(self) -> int:
        return 0

    def close(self) -> None:
        self.closed_at = asyncio.get_running_loop().time()


async def test_a_second_sweep_of_the_same_stop_does_not_wait_anew() -> None:
    """The drain and the grace are two sweeps; a connection seen idle in the first is closed once quiet, counted
    from then, not from the start of the second."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    connection = IdleConnection(start)
    open_ = [connection]

    def connections() -> list[IdleConnection]:
        return [c for c in open_ if c.closed_at is None]

    seen: dict[Connection, float] = {}
    await sweep(connections, until=start + 0.2, stop_when_empty=False, clock=loop.time, quiet=0.3, idle_since=seen)
    assert connection.closed_at is None  # not quiet yet when the first sweep ends
    await sweep(connections, until=start + 5.0, stop_when_empty=True, clock=loop.time, quiet=0.3, idle_since=seen)
    assert connection.closed_at is not None
    assert connection.closed_at - start < 0.3 + 0.2  # 0.3 after it was first seen idle, not 0.2 + 0.3
