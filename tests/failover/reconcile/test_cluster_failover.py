"""Cluster failover with state without Karmada's alpha gate (failover/reconcile/cluster_failover.py): the taint
manager's tasks get their preservedLabelState from us."""

from __future__ import annotations

from typing import Any

from failover.reconcile.cluster_failover import EVENT_STATE_FILLED, EVENT_STATE_NOT_FOUND, decide_cluster_failover_state
from failover.state.last_state import decide_last_state
from tests.failover.binding_builders import (
    CLUSTER_LABEL,
    JOB_ID,
    OTHER_JOB,
    TAINT_TASK,
    at,
    evicted_by_taint,
    flink_binding,
    set_health,
    with_cluster_rules,
)
from tests.patches import merge_patch


def filled_task(binding: dict[str, Any]) -> dict[str, Any]:
    decision = decide_cluster_failover_state(binding)
    assert decision.patch is not None, decision.events
    return decision.patch["spec"]["gracefulEvictionTasks"][-1]


def test_a_dead_clusters_task_gets_the_last_healthy_report() -> None:
    binding = with_cluster_rules(flink_binding())
    binding = merge_patch(binding, decide_last_state(binding, at(0)))
    binding = evicted_by_taint(binding)
    set_health(binding, "member1", "Unknown", {})  # the cluster is gone: nothing reflected any more
    task = filled_task(binding)
    assert task["preservedLabelState"] == {CLUSTER_LABEL: JOB_ID}
    assert task["clustersBeforeFailover"] == ["member1"]
    assert {key: task[key] for key in TAINT_TASK} == TAINT_TASK


def test_a_live_clusters_task_gets_the_reflected_status_when_nothing_was_recorded() -> None:
    binding = evicted_by_taint(with_cluster_rules(flink_binding()))
    assert filled_task(binding)["preservedLabelState"] == {CLUSTER_LABEL: JOB_ID}


def test_the_last_healthy_report_wins_over_a_broken_copys_status() -> None:
    binding = with_cluster_rules(flink_binding())
    binding = merge_patch(binding, decide_last_state(binding, at(0)))
    set_health(binding, "member1", "Unhealthy", {"jobStatus": {"jobId": OTHER_JOB}})
    assert filled_task(evicted_by_taint(binding))["preservedLabelState"] == {CLUSTER_LABEL: JOB_ID}


def test_a_second_failover_inherits_the_first_ones_state() -> None:
    """#6232: the copy on member2 never became healthy; its cluster dies; member3 must get member1's job."""
    binding = with_cluster_rules(flink_binding())
    binding["spec"]["clusters"] = [{"name": "member3", "replicas": 1}]
    set_health(binding, "member2", "Unhealthy", {"jobStatus": {"jobId": OTHER_JOB}})
    binding["spec"]["gracefulEvictionTasks"] = [
        {
            "fromCluster": "member1",
            "purgeMode": "Directly",
            "reason": "ApplicationFailure",
            "preservedLabelState": {CLUSTER_LABEL: JOB_ID},
            "clustersBeforeFailover": ["member1"],
            "creationTimestamp": "2025-03-01T12:00:00Z",
        },
        {**TAINT_TASK, "fromCluster": "member2"},
    ]
    assert filled_task(binding)["preservedLabelState"] == {CLUSTER_LABEL: JOB_ID}


def test_nothing_to_fill_says_so() -> None:
    binding = evicted_by_taint(with_cluster_rules(flink_binding()))
    set_health(binding, "member1", "Unknown", {})
    decision = decide_cluster_failover_state(binding)
    assert decision.patch is None
    assert [event.reason for event in decision.events] == [EVENT_STATE_NOT_FOUND]


def test_application_failover_tasks_and_filled_tasks_are_left_alone() -> None:
    binding = evicted_by_taint(with_cluster_rules(flink_binding()))
    binding["spec"]["gracefulEvictionTasks"][0].update(reason="ApplicationFailure", producer="x")
    assert decide_cluster_failover_state(binding).patch is None
    binding = evicted_by_taint(with_cluster_rules(flink_binding()))
    binding["spec"]["gracefulEvictionTasks"][0]["preservedLabelState"] = {CLUSTER_LABEL: OTHER_JOB}
    assert decide_cluster_failover_state(binding).patch is None


def test_without_cluster_rules_nothing_is_filled() -> None:
    assert decide_cluster_failover_state(evicted_by_taint(flink_binding())).patch is None


def test_filling_twice_changes_nothing_the_second_time() -> None:
    binding = evicted_by_taint(with_cluster_rules(flink_binding()))
    decision = decide_cluster_failover_state(binding)
    assert [event.reason for event in decision.events] == [EVENT_STATE_FILLED]
    assert decide_cluster_failover_state(merge_patch(binding, decision.patch)).patch is None
