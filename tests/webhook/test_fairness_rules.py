"""Who gives way in a full server (webhook/fairness.py), as a function of what each address holds and the time."""

from __future__ import annotations

from webhook.fairness import Held, idle_count, victim

NOW = 100.0
QUIET = 0.25


def held(name: str, *, busy: bool = False, handshaking: bool = False, last: float = 0.0) -> Held:
    return Held(name, busy, handshaking, last)


def test_the_idlest_connection_of_the_address_holding_the_most_gives_way() -> None:
    by_peer = {
        "flood-a": [held("a1", last=5.0), held("a2", last=1.0), held("a3", last=3.0)],
        "flood-b": [held("b1", last=0.5), held("b2", last=0.1)],
    }
    assert victim(0, by_peer, now=NOW, quiet=QUIET) == held("a2", last=1.0)


def test_an_address_holding_as_many_or_one_more_is_not_evicted_for_the_newcomer() -> None:
    by_peer = {"a": [held("a1"), held("a2")], "b": [held("b1")]}
    assert victim(1, by_peer, now=NOW, quiet=QUIET) is None  # 2 < 1 + 2: moving a place would not even the shares
    assert victim(0, by_peer, now=NOW, quiet=QUIET) == held("a1")


def test_busy_connections_never_give_way() -> None:
    by_peer = {"apiserver": [held("r1", busy=True), held("r2", busy=True), held("r3", busy=True)], "x": [held("x1")]}
    assert victim(0, by_peer, now=NOW, quiet=QUIET) is None
    by_peer["apiserver"].append(held("idle", last=9.0))
    assert victim(0, by_peer, now=NOW, quiet=QUIET) == held("idle", last=9.0)


def test_a_connection_active_a_moment_ago_does_not_give_way_but_one_in_its_handshake_does() -> None:
    # Just answered: its caller may be writing the next review into it right now (webhook/drain.py).
    just_answered = held("answered", last=NOW - 0.1)
    assert victim(0, {"apiserver": [just_answered, just_answered, just_answered]}, now=NOW, quiet=QUIET) is None
    # No review can have been written on a connection still in its handshake.
    connecting = held("connecting", handshaking=True, last=NOW - 0.01)
    assert victim(0, {"flood": [connecting, connecting, connecting]}, now=NOW, quiet=QUIET) == connecting


def test_the_per_address_cap_counts_connections_doing_nothing_after_their_handshake() -> None:
    assert idle_count([held("r1", busy=True), held("h1", handshaking=True), held("i1")]) == 1
