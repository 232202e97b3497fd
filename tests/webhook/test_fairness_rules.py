"""Who gives way in a full server (webhook/fairness.py), as a function of what each address holds and the time."""

from __future__ import annotations

from webhook.fairness import Held, Wait, idle_count, make_room

NOW = 100.0
QUIET = 0.25


def held(name: str, *, busy: bool = False, handshaking: bool = False, last: float = 0.0) -> Held:
    return Held(name, busy, handshaking, last)


def test_the_idlest_connection_of_the_address_holding_the_most_gives_way() -> None:
    by_peer = {
        "flood-a": [held("a1", last=5.0), held("a2", last=1.0), held("a3", last=3.0)],
        "flood-b": [held("b1", last=0.5), held("b2", last=0.1)],
    }
    assert make_room(0, by_peer, now=NOW, quiet=QUIET) == held("a2", last=1.0)


def test_an_address_holding_as_many_or_one_more_is_not_evicted_for_the_newcomer() -> None:
    by_peer = {"a": [held("a1"), held("a2")], "b": [held("b1")]}
    assert make_room(1, by_peer, now=NOW, quiet=QUIET) is None  # 2 < 1 + 2: moving a place would not even the shares
    assert make_room(0, by_peer, now=NOW, quiet=QUIET) == held("a1")


def test_busy_connections_never_give_way() -> None:
    by_peer = {"apiserver": [held("r1", busy=True), held("r2", busy=True), held("r3", busy=True)], "x": [held("x1")]}
    assert make_room(0, by_peer, now=NOW, quiet=QUIET) is None
    by_peer["apiserver"].append(held("idle", last=9.0))
    assert make_room(0, by_peer, now=NOW, quiet=QUIET) == held("idle", last=9.0)


def test_a_connection_active_a_moment_ago_does_not_give_way_but_one_in_its_handshake_does() -> None:
    # Just answered: its caller may be writing the next review into it right now (webhook/drain.py).
    just_answered = held("answered", last=NOW - 0.1)
    assert make_room(0, {"apiserver": [just_answered, just_answered, just_answered]}, now=NOW, quiet=QUIET) == Wait(
        NOW - 0.1 + QUIET
    )
    # No review can have been written on a connection still in its handshake.
    connecting = held("connecting", handshaking=True, last=NOW - 0.01)
    assert make_room(0, {"flood": [connecting, connecting, connecting]}, now=NOW, quiet=QUIET) == connecting


def test_the_per_address_cap_counts_connections_doing_nothing_after_their_handshake() -> None:
    assert idle_count([held("r1", busy=True), held("h1", handshaking=True), held("i1")]) == 1


def test_a_newcomer_waits_for_the_first_connection_of_the_addresses_holding_enough_to_turn_quiet() -> None:
    # A flood that just filled the server (or reopened its connections together): nothing was quiet for 0.25 s yet.
    by_peer = {
        "flood-a": [held("a1", last=NOW - 0.05), held("a2", last=NOW - 0.2), held("a3", busy=True, last=NOW - 9)],
        "flood-b": [held("b1", last=NOW - 0.1), held("b2", last=NOW - 0.15)],
        "small": [held("s1", last=NOW - 0.24)],  # holds too few to give way to anyone
    }
    assert make_room(0, by_peer, now=NOW, quiet=QUIET) == Wait(NOW - 0.2 + QUIET)
    # Once that time has come, the same connection gives way.
    assert make_room(0, by_peer, now=NOW + 0.05, quiet=QUIET) == held("a2", last=NOW - 0.2)


def test_no_wait_when_waiting_cannot_make_room() -> None:
    busy = held("r", busy=True, last=NOW - 0.01)
    assert make_room(0, {"apiserver": [busy, busy, busy]}, now=NOW, quiet=QUIET) is None  # busy never give way
    assert make_room(2, {"a": [held("a1", last=NOW), held("a2", last=NOW), held("a3", last=NOW)]}, now=NOW) is None
