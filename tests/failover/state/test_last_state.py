"""The last good preserved state of each copy (failover/state/last_state.py): recorded while Healthy, kept until a new
copy runs it."""

from __future__ import annotations

import copy
import json
from typing import Any

from failover.state.last_state import (
    LAST_STATE_ANNOTATION,
    Rule,
    decide_last_state,
    evaluate_rule,
    preservation_rules,
    recorded_state,
    recorded_states,
)
from tests.failover.binding_builders import (
    CLUSTER_LABEL,
    JOB_ID,
    OTHER_JOB,
    at,
    flink_binding,
    preemption_task,
    set_health,
    stamp,
    with_cluster_rules,
)
from tests.patches import merge_patch

LABEL = "application.karmada.io/failover-jobid"
APP_PRODUCER = "resource-binding-application-failover-controller"


def recorded(binding: dict[str, Any], now: float) -> dict[str, Any]:
    return merge_patch(binding, decide_last_state(binding, at(now)))


def test_a_healthy_copy_is_recorded_with_every_rule_and_the_time_it_was_first_seen() -> None:
    binding = recorded(with_cluster_rules(flink_binding()), 10)
    assert recorded_state(binding, "member1") == {LABEL: JOB_ID, CLUSTER_LABEL: JOB_ID}
    assert recorded_states(binding)["member1"].at == at(10)


def test_an_unchanged_healthy_copy_costs_no_write() -> None:
    binding = recorded(flink_binding(), 10)
    assert decide_last_state(binding, at(500)) is None


def test_new_values_move_the_record_time() -> None:
    binding = recorded(flink_binding(), 10)
    set_health(binding, "member1", "Healthy", {"jobStatus": {"jobId": OTHER_JOB}})
    binding = recorded(binding, 20)
    assert recorded_state(binding, "member1") == {LABEL: OTHER_JOB}
    assert recorded_states(binding)["member1"].at == at(20)


def test_an_unhealthy_or_unknown_copy_does_not_overwrite_the_last_good_state() -> None:
    binding = recorded(flink_binding(), 10)
    set_health(binding, "member1", "Unhealthy", {"jobStatus": {"jobId": OTHER_JOB}})
    assert decide_last_state(binding, at(20)) is None
    set_health(binding, "member1", "Unknown", {})
    assert decide_last_state(binding, at(30)) is None
    assert recorded_state(binding, "member1") == {LABEL: JOB_ID}


def test_a_copy_missing_a_value_is_not_recorded_half() -> None:
    binding = with_cluster_rules(flink_binding())
    binding["spec"]["failover"]["cluster"]["statePreservation"]["rules"][0]["jsonPath"] = "{ .jobStatus.savepoint }"
    assert decide_last_state(binding, at(10)) is None


def test_an_invalid_label_value_is_never_recorded() -> None:
    binding = flink_binding()
    set_health(binding, "member1", "Healthy", {"jobStatus": {"jobId": "../../etc/passwd"}})
    assert decide_last_state(binding, at(10)) is None


def test_the_record_outlives_the_eviction_and_the_end_of_its_task() -> None:
    binding = recorded(flink_binding(), 10)
    binding["spec"]["clusters"] = [{"name": "member2", "replicas": 1}]
    binding["spec"]["gracefulEvictionTasks"] = []
    set_health(binding, "member1", "Unknown", {})
    set_health(binding, "member2", "Unhealthy", {})  # the new copy is not running yet
    assert decide_last_state(binding, at(20)) is None
    assert recorded_state(binding, "member1") == {LABEL: JOB_ID}


def test_the_old_record_goes_once_every_target_runs_with_a_record_of_its_own() -> None:
    binding = recorded(flink_binding(), 10)
    binding["spec"]["clusters"] = [{"name": "member2", "replicas": 1}]
    binding["status"]["aggregatedStatus"] = []
    set_health(binding, "member2", "Healthy", {"jobStatus": {"jobId": OTHER_JOB}})
    binding = recorded(binding, 30)
    assert set(recorded_states(binding)) == {"member2"}


def test_a_cluster_still_being_evicted_keeps_its_record() -> None:
    binding = recorded(flink_binding(), 10)
    binding["spec"]["clusters"] = [{"name": "member2", "replicas": 1}]
    binding["spec"]["gracefulEvictionTasks"] = [
        {"fromCluster": "member1", "purgeMode": "Directly", "reason": "ApplicationFailure", "producer": APP_PRODUCER}
    ]
    binding["status"]["aggregatedStatus"] = []
    set_health(binding, "member2", "Healthy", {"jobStatus": {"jobId": OTHER_JOB}})
    binding = recorded(binding, 30)
    assert set(recorded_states(binding)) == {"member1", "member2"}


def test_a_copy_preempted_by_a_task_we_do_not_own_loses_its_record_at_once() -> None:
    """Karmada PR #7832: the scheduler evicts a preempted workload statelessly; its old state must not follow it."""
    binding = recorded(flink_binding(), 10)
    binding["spec"]["clusters"] = []
    binding["spec"]["gracefulEvictionTasks"] = [preemption_task("member1")]
    binding = recorded(binding, 20)
    assert recorded_states(binding) == {}


def test_a_binding_without_rules_drops_the_annotation() -> None:
    binding = recorded(flink_binding(), 10)
    del binding["spec"]["failover"]["application"]["statePreservation"]
    assert decide_last_state(binding, at(20)) == {"metadata": {"annotations": {LAST_STATE_ANNOTATION: None}}}


def test_an_edited_annotation_is_read_tolerantly() -> None:
    binding = copy.deepcopy(flink_binding())
    binding["metadata"]["annotations"][LAST_STATE_ANNOTATION] = json.dumps(
        {"member1": {"labels": {LABEL: 5}, "at": stamp(0)}, "member2": "x", "member3": {"labels": {}, "at": "no"}}
    )
    assert recorded_states(binding) == {}
    binding["metadata"]["annotations"][LAST_STATE_ANNOTATION] = "not json"
    assert recorded_states(binding) == {}


def test_rules_of_both_failover_kinds_are_read_in_order_without_duplicates() -> None:
    binding = with_cluster_rules(flink_binding())
    binding["spec"]["failover"]["cluster"]["statePreservation"]["rules"].append(
        {"aliasLabelName": LABEL, "jsonPath": "{ .other }"}
    )
    assert [rule.alias for rule in preservation_rules(binding)] == [LABEL, CLUSTER_LABEL]
    assert [rule.alias for rule in preservation_rules(binding, "cluster")] == [CLUSTER_LABEL, LABEL]


def test_evaluate_rule_reports_what_is_wrong() -> None:
    status = {"jobStatus": {"jobId": JOB_ID}}
    assert evaluate_rule(Rule(LABEL, "{ .jobStatus.jobId }"), status).value == JOB_ID
    assert evaluate_rule(Rule(LABEL, "{ .nothing }"), status).missing
    assert evaluate_rule(Rule(LABEL, "{ .jobStatus.jobId }"), None).missing
    assert "does not parse" in evaluate_rule(Rule(LABEL, "{ .a[ }"), status).problem
    assert "aliasLabelName" in evaluate_rule(Rule("Bad Label", "{ .a }"), status).problem
