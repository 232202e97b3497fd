"""Who gives way when the listener is full: a few addresses must not be able to take every place.

The caps (webhook/listener.py) bound memory, but on their own they let whoever comes first keep every place: idle TLS
connections from 8 addresses made 67 of 82 legitimate reviews from another address fail. So when the server is full,
a newcomer takes the place of the idlest connection of the address holding the most, provided that address holds at
least two more than the newcomer's (so places move towards an even share and a flood cannot evict its own kind
back and forth). Only a connection doing nothing is evicted: one in its TLS handshake (no review can have been
written on it yet), or one that has neither received nor sent a byte for `QUIET_SECONDS` (closing a keep-alive
connection races a review written on it at that moment, webhook/drain.py: one just answered may be about to carry
the next); never one with a review in progress. When every connection that could give way was active a moment ago,
the newcomer waits (the listener stops accepting) until the first of them has been quiet that long, once, rather than
being refused.

The per-address cap counts only connections that finished their handshake and then do nothing (idle, or still
sending a request head): the apiserver opens one connection per concurrent review, so a burst of 300 reviews held by a
hung storage is 300 connections from one address, first in their handshake, then busy, all of which must be served.
Connections in their handshake are bounded by the handshake timeout, the global cap and eviction.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

from webhook.drain import QUIET_SECONDS


class Held(NamedTuple):
    """What the listener knows of one open connection."""

    key: object
    busy: bool  # a request is in progress or queued on it
    handshaking: bool  # its TLS handshake is not done yet
    last_active: float  # loop time of its last byte received or sent (or its acceptance)


def idle_count(held: Iterable[Held]) -> int:
    """The connections of one address that count towards the per-address cap: handshake done, doing nothing."""
    return sum(1 for connection in held if not connection.busy and not connection.handshaking)


class Wait(NamedTuple):
    """Nothing may give way yet, but a connection will if it stays as it is: the newcomer waits until then."""

    until: float  # loop time at which the first connection that could give way has been quiet for `quiet`


def make_room(
    newcomer_holds: int, by_peer: Mapping[str, list[Held]], *, now: float, quiet: float = QUIET_SECONDS
) -> Held | Wait | None:
    """The connection to close so that a newcomer whose address holds `newcomer_holds` connections gets a place in a
    full server; else when one of the addresses that should give way will have a connection quiet enough (`Wait`:
    every one was active a moment ago, as right after a flood filled the server or reopened its connections
    together; refusing then turned away 3 to 10 of 40 legitimate reviews in a row); else None (refused: no address
    holds enough, or all it holds is busy)."""
    soonest: float | None = None
    for _, held in sorted(by_peer.items(), key=lambda item: len(item[1]), reverse=True):
        if len(held) < newcomer_holds + 2:
            break
        candidates = [
            connection
            for connection in held
            if connection.handshaking or (not connection.busy and now - connection.last_active >= quiet)
        ]
        if candidates:
            return min(candidates, key=lambda connection: connection.last_active)
        quieting = [connection.last_active + quiet for connection in held if not connection.busy]
        if quieting and (soonest is None or min(quieting) < soonest):
            soonest = min(quieting)
    return None if soonest is None else Wait(soonest)
