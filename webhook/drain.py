"""Which open connections a stopping server may close, and closing them until none is left.

HTTP/1.1 gives a server no way to close a keep-alive connection without racing the client: a review written in the
moment the server closes is lost (RFC 9112 section 9.6; the apiserver does not retry a POST). So a stopping server
closes only what it must, and only when a caller is least likely to be writing:

- every answer once unready says `Connection: close` (webhook/server.py), so a connection in use ends after its
  next answer, and the caller knows it must not write there again: no race at all;
- a connection is closed by the server only when it is idle (no request in progress or queued), has been seen idle
  for `quiet` seconds, has received no byte for as long (no partial request), and the kernel holds no unread byte
  for it. A caller sending at any rate is answered on such a connection, with `Connection: close`, long before it
  turns quiet.

What `closable` decides is a plain function of what was observed and the time; `sweep` only observes and closes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection
from typing import Protocol

# Idle this long (since an answer, and since the last byte arrived) before the server closes a connection it may
# take from a caller. A caller with reviews to send uses an idle connection within milliseconds; 0.25 s is far
# beyond that. Used where the server must make room now (webhook/fairness.py).
QUIET_SECONDS = 0.25
# The same wait while stopping, longer: nothing presses there but the grace period, and a caller starved of CPU can
# take longer than QUIET_SECONDS between dialling (or its last answer) and writing its review. A CI run on a loaded
# two-core machine lost 7 of 6,769 reviews that way, written into connections the stopping server closed after
# 0.25 s (tests/relay/test_restart_lossless.py). A second costs a stop without a drain at most a second more.
STOPPING_QUIET_SECONDS = 1.0
# How often the open connections are looked at while stopping.
SWEEP_SECONDS = 0.05


class Connection(Protocol):
    def idle(self) -> bool:
        """No request in progress or queued, and the connection is waiting for the next one."""
        ...

    def last_received(self) -> float:
        """Loop time of the last byte read from the socket (or of the connection's acceptance)."""
        ...

    def unread_bytes(self) -> int:
        """Bytes the kernel holds for the connection that the server has not read yet."""
        ...

    def close(self) -> None: ...


def closable(*, idle_since: float | None, last_received: float, unread_bytes: int, now: float, quiet: float) -> bool:
    """Whether a stopping server may close a connection now: seen idle, and silent, for `quiet` seconds, with nothing
    waiting in the kernel. `idle_since` is None when the connection is not idle."""
    if idle_since is None or unread_bytes:
        return False
    return now - idle_since >= quiet and now - last_received >= quiet


async def sweep(
    connections: Callable[[], Collection[Connection]],
    *,
    until: float,
    stop_when_empty: bool,
    clock: Callable[[], float],
    quiet: float = STOPPING_QUIET_SECONDS,
    idle_since: dict[Connection, float] | None = None,
) -> None:
    """Close connections as they become closable until `until` (loop time), or until none is open when
    `stop_when_empty` (after the listener has closed, nothing new can come). `idle_since` (when each connection was
    first seen idle) carries over from an earlier sweep of the same stop, so a second phase does not wait anew."""
    if idle_since is None:
        idle_since = {}
    while True:
        now = clock()
        current = connections()
        if (stop_when_empty and not current) or now >= until:
            return
        for connection in list(current):
            if not connection.idle():
                idle_since.pop(connection, None)
                continue
            since = idle_since.setdefault(connection, now)
            if closable(
                idle_since=since,
                last_received=connection.last_received(),
                unread_bytes=connection.unread_bytes(),
                now=now,
                quiet=quiet,
            ):
                connection.close()
        for gone in set(idle_since) - set(current):
            del idle_since[gone]
        await asyncio.sleep(min(SWEEP_SECONDS, max(until - now, 0)))
