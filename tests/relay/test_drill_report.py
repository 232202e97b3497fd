"""`failover-relay drill`'s report of one way, from what the binding kept and what the command saw."""

from __future__ import annotations

from datetime import timedelta

from failover.moves.handoff import CHECKPOINT_FALLBACK, DONE, SAVEPOINT, Handoff
from relay.commands.drill_run import Leg
from tests.failover.binding_builders import at

SAVEPOINT_PATH = "s3://state/default/savepoints/savepoint-9a27d3-0123456789ab"


def handoff(**changes) -> Handoff:
    fields = dict(
        reason="Drill",
        source="member1",
        target="",
        work="job-5d8f",
        fence_id="f",
        started_at=at(0),
        phase=DONE,
        way=SAVEPOINT,
        savepoint=SAVEPOINT_PATH,
        stopped_at=at(6),
        evicted_at=at(6),
        done_at=at(20),
    )
    return Handoff(**{**fields, **changes})


def test_a_savepoint_way_says_what_was_restored_and_bounds_the_downtime_by_the_stop() -> None:
    leg = Leg("member1", "member2", handoff(), SAVEPOINT_PATH, at(8), at(10))
    way, restored, down = leg.lines("out")
    assert way == f"  out   member1 -> member2  by savepoint {SAVEPOINT_PATH}"
    assert restored.strip() == f"the new copy restored {SAVEPOINT_PATH}"
    # Down from the acknowledged stop (4 s) to the start of the stop (10 s): the job ended somewhere within it.
    assert down.strip().startswith("down 4-10 s: the stop 6 s") and "Karmada 2 s" in down and "new copy 2 s" in down


def test_a_fallback_says_why_and_is_down_from_its_eviction() -> None:
    why = "no member relay watches member1"
    fallback = handoff(way=CHECKPOINT_FALLBACK, why=why, savepoint=None, stopped_at=None, evicted_at=at(0))
    leg = Leg("member1", "member3", fallback, "s3://state/default/j/chk-7", at(3), at(3) + timedelta(seconds=9))
    way, restored, down = leg.lines("back")
    assert f"from the newest completed checkpoint ({why})" in way and "chk-7" in restored
    assert down.strip().startswith("down 12-12 s")
