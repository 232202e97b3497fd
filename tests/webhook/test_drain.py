"""What a stopping server may close (webhook/drain.py), as a function of what it observed and the time."""

from __future__ import annotations

import pytest

from webhook.drain import closable

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
