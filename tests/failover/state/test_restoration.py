"""A moved copy is restored once its job completed a checkpoint of its own (failover/state/restoration.py), and until
then the state its move carried is what a failover away from it carries; the decisions that read it: graceful
eviction records it, application and cluster failover carry it, the last good state waits for it, the restore grace
lasts until it (failover/reconcile/)."""

from __future__ import annotations

import json
from datetime import timedelta

from failover.core.api import REASON_FAILBACK
from failover.core.loop_settings import DecisionSettings
from failover.moves.handoff import move_eviction
from failover.reconcile.application_failover import decide_application_failover
from failover.reconcile.cluster_failover import decide_cluster_failover_state
from failover.reconcile.failover_budget import restoring_until
from failover.reconcile.graceful_eviction import decide_graceful_eviction
from failover.state.last_state import LAST_STATE_ANNOTATION, decide_last_state
from failover.state.restoration import (
    RESTORING_ANNOTATION,
    decide_restored,
    lineage,
    restoring,
    terminally_failed,
)
from tests.failover.binding_builders import (
    CLUSTER_LABEL,
    JOB_ID,
    TAINT_TASK,
    at,
    flink_binding,
    set_health,
    stamp,
    with_cluster_rules,
)
from tests.failover.restoration_builders import LABEL, NEW_JOB, moved_to_member2, moved_without_checkpoint
from tests.patches import merge_patch

SETTINGS = DecisionSettings()  # restore grace 300 s, toleration 60 s (FLINK_BINDING)


def test_the_end_of_a_failovers_task_records_the_state_it_carried_for_the_copy_it_brought() -> None:
    binding = moved_without_checkpoint()
    assert binding["spec"]["gracefulEvictionTasks"] == []
    [record] = restoring(binding).values()
    assert (record.cluster, record.since, record.from_cluster, dict(record.carried)) == (
        "member2",
        at(0),
        "member1",
        {LABEL: JOB_ID},
    )
    assert lineage(binding, "member2") == ("member1", {LABEL: JOB_ID}) and lineage(binding, "member1") is None


def test_a_second_failover_before_the_first_checkpoint_carries_the_moves_state_not_the_new_jobs() -> None:
    binding = moved_without_checkpoint()
    set_health(binding, "member2", "Unhealthy")
    timer = merge_patch(binding, decide_application_failover(binding, SETTINGS, at(400)).patch)
    decision = decide_application_failover(timer, SETTINGS, at(461))  # past the toleration and the restore grace
    [task] = merge_patch(timer, decision.patch)["spec"]["gracefulEvictionTasks"]
    assert task["fromCluster"] == "member2" and task["preservedLabelState"] == {LABEL: JOB_ID}
    assert any("has completed no checkpoint of its own yet" in event.message for event in decision.events)
    # Restored, it carries its own job's state as before.
    restored = merge_patch(binding, decide_restored(binding, {"member2": at(50)}, True, at(60)).patch)
    timer = merge_patch(restored, decide_application_failover(restored, SETTINGS, at(400)).patch)
    [task] = merge_patch(timer, decide_application_failover(timer, SETTINGS, at(461)).patch)["spec"][
        "gracefulEvictionTasks"
    ]
    assert task["preservedLabelState"] == {LABEL: NEW_JOB}


def test_a_cluster_failover_of_a_restoring_copy_carries_the_moves_state() -> None:
    binding = with_cluster_rules(moved_to_member2())
    binding["spec"]["gracefulEvictionTasks"][0]["preservedLabelState"] = {CLUSTER_LABEL: JOB_ID}
    binding = merge_patch(binding, decide_graceful_eviction(binding, SETTINGS, at(30)).patch)
    binding["spec"]["clusters"] = [{"name": "member3", "replicas": 1}]
    binding["spec"]["gracefulEvictionTasks"] = [{**TAINT_TASK, "fromCluster": "member2"}]
    decision = decide_cluster_failover_state(binding)
    assert decision.patch["spec"]["gracefulEvictionTasks"][-1]["preservedLabelState"] == {CLUSTER_LABEL: JOB_ID}
    assert any("no checkpoint of its own yet" in event.message for event in decision.events)


def test_a_restoring_copys_report_is_not_the_last_good_state() -> None:
    binding = moved_without_checkpoint()
    assert "member2" not in json.loads(
        merge_patch(binding, decide_last_state(binding, at(40)))["metadata"]["annotations"].get(LAST_STATE_ANNOTATION)
        or "{}"
    )
    restored = merge_patch(binding, decide_restored(binding, {"member2": at(50)}, True, at(60)).patch)
    recorded = json.loads(decide_last_state(restored, at(61))["metadata"]["annotations"][LAST_STATE_ANNOTATION])
    assert recorded["member2"]["labels"] == {LABEL: NEW_JOB}


def test_the_restore_grace_lasts_until_the_first_checkpoint_unless_the_copy_has_failed() -> None:
    binding = moved_without_checkpoint(health="Unhealthy")
    assert restoring_until(binding, "member2", SETTINGS) == at(300)  # the task is gone, the move is not restored
    failed = moved_without_checkpoint(health="Unhealthy")
    failed["status"]["aggregatedStatus"][0]["status"]["jobStatus"]["state"] = "FAILED"
    assert terminally_failed(failed["status"]["aggregatedStatus"][0])
    assert restoring_until(failed, "member2", SETTINGS) is None
    restored = merge_patch(binding, decide_restored(binding, {"member2": at(50)}, True, at(60)).patch)
    assert restoring_until(restored, "member2", SETTINGS) is None


def test_restored_by_a_checkpoint_written_after_the_move_or_when_healthy_without_storage() -> None:
    binding = moved_without_checkpoint()
    older = decide_restored(binding, {"member2": at(-10)}, True, at(60))  # the carried checkpoint, not its own
    assert older.patch is None and older.restored == ()
    unseen = decide_restored(binding, {}, True, at(60))
    assert unseen.patch is None
    done = decide_restored(binding, {"member2": at(45)}, True, at(60))
    assert done.restored == (("member2", timedelta(seconds=60)),)
    assert done.patch == {"metadata": {"annotations": {RESTORING_ANNOTATION: None}}}
    assert [event.reason for event in done.events] == ["CopyRestored"]
    # Without the checkpoint storage: once Healthy, the rule of before.
    assert decide_restored(binding, {}, False, at(60)).restored == (("member2", timedelta(seconds=60)),)
    unhealthy = moved_without_checkpoint(health="Unhealthy")
    assert decide_restored(unhealthy, {}, False, at(60)).patch is None
    # A record whose cluster the workload left goes.
    gone = merge_patch(binding, {"spec": {"clusters": [{"name": "member3", "replicas": 1}]}})
    assert decide_restored(gone, {}, True, at(60)).patch == {"metadata": {"annotations": {RESTORING_ANNOTATION: None}}}


def test_a_hostile_record_is_left_out() -> None:
    binding = flink_binding()
    binding["metadata"]["annotations"][RESTORING_ANNOTATION] = json.dumps(
        {
            "member2": {"since": "yesterday", "from": "member1", "carried": {LABEL: JOB_ID}},
            "member3": {"since": stamp(0), "from": "member1", "carried": {LABEL: "not a label value!"}},
            "member4": ["no"],
        }
    )
    assert restoring(binding) == {}


def test_a_failback_of_a_restoring_copy_carries_the_moves_state() -> None:
    binding = moved_without_checkpoint()
    assert move_eviction(binding, "member2", REASON_FAILBACK, SETTINGS, at(60))["gracefulEvictionTasks"][-1][
        "preservedLabelState"
    ] == {LABEL: JOB_ID}
