"""The records in the eviction's own write (failover/reconcile/record_keeping.py): one write per eviction, the same
binding as the two writes it replaces, idempotent, and restart-safe (no duplicate or lost history move)."""

from __future__ import annotations

from typing import Any

import pytest

from failover.core.loop_settings import DecisionSettings
from failover.reconcile.application_failover import UNHEALTHY_SINCE_ANNOTATION, decide_application_failover
from failover.reconcile.record_keeping import decide_records, has_history, merged, with_records
from failover.state.history import FAILOVER, HISTORY_ANNOTATION, read_history
from failover.state.last_state import LAST_STATE_ANNOTATION
from tests.failover.binding_builders import JOB_ID, at, flink_binding, set_health
from tests.patches import merge_patch

SETTINGS = DecisionSettings()


def expired() -> dict[str, Any]:
    """A job that ran healthily under a previous leader (its records written), then went Unhealthy at T0."""
    binding = flink_binding()
    binding = merge_patch(binding, decide_records(binding, (), at(-3600)))
    set_health(binding, "member1", "Unhealthy", status={})
    return merge_patch(binding, decide_application_failover(binding, SETTINGS, at(0)).patch)


def evict(binding: dict[str, Any], seconds: float) -> dict[str, Any] | None:
    """The loop's one write for the failover decision at T0+seconds."""
    return with_records(binding, decide_application_failover(binding, SETTINGS, at(seconds)).patch, (), at(seconds))


def test_the_eviction_and_its_history_move_are_one_write_equal_to_the_two_it_replaces():
    binding = expired()
    assert UNHEALTHY_SINCE_ANNOTATION in binding["metadata"]["annotations"]
    patch = evict(binding, 60)
    after = merge_patch(binding, patch)
    assert [task["fromCluster"] for task in after["spec"]["gracefulEvictionTasks"]] == ["member1"]
    (move,) = read_history(after).moves
    assert (move.at, move.kind, move.from_cluster, move.job_id) == (at(60), FAILOVER, "member1", JOB_ID)
    assert has_history(patch)
    # What the eviction's write, then the records' write on the binding it returned, stored before.
    failover = decide_application_failover(binding, SETTINGS, at(60)).patch
    two_writes = merge_patch(binding, failover)
    two_writes = merge_patch(two_writes, decide_records(two_writes, (), at(60)))
    assert after == two_writes
    assert (
        after["metadata"]["annotations"][LAST_STATE_ANNOTATION]
        == binding["metadata"]["annotations"][LAST_STATE_ANNOTATION]
    )


def test_applied_twice_it_is_a_no_op_and_deciding_again_asks_for_nothing():
    binding = expired()
    patch = evict(binding, 60)
    after = merge_patch(binding, patch)
    assert merge_patch(after, patch) == after
    for seconds in (60, 61, 600):
        assert evict(after, seconds) is None


def test_a_leader_stopped_between_decision_and_write_leaves_one_move_to_the_next():
    binding = expired()
    evict(binding, 60)  # decided, never written: the leader stopped
    after = merge_patch(binding, evict(binding, 63))  # the next leader, on the stored binding
    assert [(move.at, move.from_cluster) for move in read_history(after).moves] == [(at(63), "member1")]
    assert [task["creationTimestamp"] for task in after["spec"]["gracefulEvictionTasks"]] == ["2025-03-01T12:01:03Z"]
    # and one stopped after the write: the next leader finds both on the binding and writes neither again.
    assert evict(after, 70) is None


def test_without_a_decision_the_records_are_written_alone_and_only_when_they_move():
    binding = flink_binding()
    records = with_records(binding, None, (), at(0))
    assert records == decide_records(binding, (), at(0))
    assert records is not None and set(records["metadata"]["annotations"]) == {
        LAST_STATE_ANNOTATION,
        HISTORY_ANNOTATION,
    }
    assert with_records(merge_patch(binding, records), None, (), at(5)) is None
    assert not has_history(None) and not has_history({"metadata": {"annotations": {LAST_STATE_ANNOTATION: "{}"}}})


@pytest.mark.parametrize(
    "obj, patch",
    [
        ({"a": 1, "b": {"c": 2, "d": [1]}}, {"b": {"c": None, "d": [2, 3]}, "e": {"f": None}}),
        ({"a": [1, {"x": 1}]}, {"a": {"x": 2}}),
        ({"a": "s"}, {"a": None, "b": None}),
        ({}, {"a": {"b": {"c": 1}}}),
    ],
)
def test_merged_applies_a_merge_patch_as_rfc_7386_without_touching_the_object(obj, patch):
    before = repr(obj)
    assert merged(obj, patch) == merge_patch(obj, patch)
    assert repr(obj) == before
