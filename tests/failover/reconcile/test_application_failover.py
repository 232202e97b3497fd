"""Application failover decisions, driven by an injected clock over documented bindings."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from failover.core.loop_settings import DecisionSettings
from failover.reconcile.application_failover import UNHEALTHY_SINCE_ANNOTATION, decide_application_failover
from tests.failover.binding_builders import JOB_ID, at, flink_binding, nginx_binding, set_health, stamp
from tests.patches import merge_patch

SETTINGS = DecisionSettings()
ALIAS = "application.karmada.io/failover-jobid"


def step(binding, seconds, settings=SETTINGS):
    """Decide at T0+seconds and return (decision, binding as stored after the patch)."""
    decision = decide_application_failover(binding, settings, at(seconds))
    return decision, merge_patch(binding, decision.patch)


def timers(binding):
    raw = binding["metadata"].get("annotations", {}).get(UNHEALTHY_SINCE_ANNOTATION)
    return json.loads(raw) if raw else {}


def test_healthy_binding_needs_nothing():
    decision = decide_application_failover(flink_binding(), SETTINGS, at(0))
    assert decision.patch is None and decision.events == () and decision.requeue_after is None


def test_first_unhealthy_report_is_recorded_on_the_binding_with_requeue_at_toleration():
    decision, stored = step(flink_binding(member1="Unhealthy"), 0)
    assert timers(stored) == {"member1": stamp(0)}
    assert decision.evicted == () and decision.requeue_after == timedelta(seconds=60)
    assert stored["spec"]["clusters"] == [{"name": "member1", "replicas": 1}]


def test_timer_survives_a_restart_because_it_lives_in_the_annotation():
    _, stored = step(flink_binding(member1="Unhealthy"), 0)
    # A new process sees only the stored object: the remaining time is counted from the first report.
    decision, again = step(stored, 45)
    assert decision.patch is None and decision.requeue_after == timedelta(seconds=15)


def test_failover_after_toleration_removes_cluster_and_appends_task():
    _, stored = step(flink_binding(member1="Unhealthy"), 0)
    decision, after = step(stored, 60)
    assert decision.evicted == ("member1",)
    assert after["spec"]["clusters"] == []
    assert after["spec"]["gracefulEvictionTasks"] == [
        {
            "fromCluster": "member1",
            "purgeMode": "Directly",
            "reason": "ApplicationFailure",
            "message": "application on member1 was Unhealthy for longer than tolerationSeconds",
            "producer": "resource-binding-application-failover-controller",
            "replicas": 1,
            "preservedLabelState": {ALIAS: JOB_ID},
            "clustersBeforeFailover": ["member1"],
            "creationTimestamp": stamp(60),
        }
    ]
    assert UNHEALTHY_SINCE_ANNOTATION not in after["metadata"]["annotations"]
    assert [event.reason for event in decision.events] == ["ApplicationFailover"]


def test_not_failed_over_one_second_before_toleration():
    _, stored = step(flink_binding(member1="Unhealthy"), 0)
    decision, _ = step(stored, 59)
    assert decision.evicted == () and decision.requeue_after == timedelta(seconds=1)


def test_unknown_health_does_not_reset_timer():
    """Karmada #7431: Unhealthy/Unknown flapping restarted the toleration every time."""
    binding = flink_binding(member1="Unhealthy")
    _, binding = step(binding, 0)
    set_health(binding, "member1", "Unknown")
    decision, binding = step(binding, 30)
    assert decision.patch is None and timers(binding) == {"member1": stamp(0)}
    set_health(binding, "member1", "Unhealthy")
    decision, _ = step(binding, 61)
    assert decision.evicted == ("member1",)


def test_unknown_alone_does_not_start_timer():
    decision, stored = step(flink_binding(member1="Unknown"), 0)
    assert decision.patch is None and timers(stored) == {}


def test_healthy_report_resets_timer():
    _, binding = step(flink_binding(member1="Unhealthy"), 0)
    set_health(binding, "member1", "Healthy")
    decision, binding = step(binding, 30)
    assert decision.patch == {"metadata": {"annotations": {UNHEALTHY_SINCE_ANNOTATION: None}}}
    set_health(binding, "member1", "Unhealthy")
    decision, binding = step(binding, 70)
    assert decision.evicted == () and timers(binding) == {"member1": stamp(70)}


def test_toleration_zero_fails_over_on_first_unhealthy_report():
    binding = flink_binding(member1="Unhealthy")
    binding["spec"]["failover"]["application"]["decisionConditions"]["tolerationSeconds"] = 0
    decision, _ = step(binding, 0)
    assert decision.evicted == ("member1",)


def test_missing_toleration_uses_karmada_default_300():
    binding = flink_binding(member1="Unhealthy")
    del binding["spec"]["failover"]["application"]["decisionConditions"]["tolerationSeconds"]
    decision, _ = step(binding, 0)
    assert decision.requeue_after == timedelta(seconds=300)


@pytest.mark.parametrize(
    "policy_mode, spelling, written",
    [
        ("Gracefully", "new", "Gracefully"),
        ("Graciously", "new", "Gracefully"),
        ("Gracefully", "legacy", "Graciously"),
        ("Directly", "legacy", "Immediately"),
        ("Immediately", "new", "Directly"),
        ("Never", "legacy", "Never"),
    ],
)
def test_purge_mode_is_written_in_the_configured_spelling(policy_mode, spelling, written):
    binding = nginx_binding(["member1", "member2"], purge_mode=policy_mode)
    binding["spec"]["failover"]["application"]["decisionConditions"]["tolerationSeconds"] = 0
    set_health(binding, "member1", "Unhealthy")
    decision, _ = step(binding, 0, DecisionSettings(purge_mode_spelling=spelling))
    assert decision.new_tasks[0]["purgeMode"] == written


def test_gracefully_task_carries_grace_period_and_never_task_suppresses_deletion():
    graceful = nginx_binding(["member1", "member2"], purge_mode="Gracefully", gracePeriodSeconds=900)
    never = nginx_binding(["member1", "member2"], purge_mode="Never")
    for binding in (graceful, never):
        binding["spec"]["failover"]["application"]["decisionConditions"]["tolerationSeconds"] = 0
        set_health(binding, "member1", "Unhealthy")
    graceful_task = step(graceful, 0)[0].new_tasks[0]
    never_task = step(never, 0)[0].new_tasks[0]
    assert graceful_task["gracePeriodSeconds"] == 900 and "suppressDeletion" not in graceful_task
    assert never_task["suppressDeletion"] is True and "gracePeriodSeconds" not in never_task


def test_gracefully_without_grace_period_gets_600():
    binding = nginx_binding(["member1", "member2"], purge_mode="Gracefully")
    binding["spec"]["failover"]["application"]["decisionConditions"]["tolerationSeconds"] = 0
    set_health(binding, "member1", "Unhealthy")
    assert step(binding, 0)[0].new_tasks[0]["gracePeriodSeconds"] == 600


def test_only_the_failed_cluster_leaves_and_clusters_before_failover_lists_all():
    binding = nginx_binding(["member1", "member2", "member3"])
    set_health(binding, "member2", "Unhealthy")
    _, binding = step(binding, 0)
    decision, after = step(binding, 120)
    assert [c["name"] for c in after["spec"]["clusters"]] == ["member1", "member3"]
    task = decision.new_tasks[0]
    assert task["fromCluster"] == "member2" and task["replicas"] == 2
    assert task["clustersBeforeFailover"] == ["member1", "member2", "member3"]
    assert "preservedLabelState" not in task


def test_zero_replica_cluster_task_has_no_replicas():
    binding = nginx_binding(["member1", "member2"])
    binding["spec"]["clusters"][0]["replicas"] = 0
    binding["spec"]["failover"]["application"]["decisionConditions"]["tolerationSeconds"] = 0
    set_health(binding, "member1", "Unhealthy")
    assert "replicas" not in step(binding, 0)[0].new_tasks[0]


def test_cluster_binding_uses_its_producer_and_needs_no_propagate_deps():
    binding = nginx_binding(["member1", "member2"])
    binding["kind"] = "ClusterResourceBinding"
    del binding["spec"]["propagateDeps"]
    binding["spec"]["failover"]["application"]["decisionConditions"]["tolerationSeconds"] = 0
    set_health(binding, "member1", "Unhealthy")
    task = step(binding, 0)[0].new_tasks[0]
    assert task["producer"] == "cluster-resource-binding-application-failover-controller"


def test_without_propagate_deps_nothing_moves_but_a_warning_says_why():
    """Karmada #3738: the failover silently did nothing."""
    binding = flink_binding(member1="Unhealthy")
    binding["spec"]["propagateDeps"] = False
    decision, _ = step(binding, 1000)
    assert decision.evicted == () and decision.patch is None
    assert [(e.type, e.reason) for e in decision.events] == [("Warning", "FailoverNeedsPropagateDeps")]
    assert "member1" in decision.events[0].message


def test_without_failover_application_a_stale_timer_is_dropped():
    _, binding = step(flink_binding(member1="Unhealthy"), 0)
    del binding["spec"]["failover"]
    decision, after = step(binding, 10)
    assert UNHEALTHY_SINCE_ANNOTATION not in after["metadata"]["annotations"] and decision.evicted == ()


def test_cluster_already_in_an_eviction_task_is_not_timed_again():
    binding = nginx_binding(["member1", "member2"])
    binding["spec"]["gracefulEvictionTasks"] = [
        {"fromCluster": "member1", "reason": "TaintUntolerated", "producer": "TaintManager"}
    ]
    set_health(binding, "member1", "Unhealthy")
    decision, _ = step(binding, 0)
    assert decision.patch is None


def test_corrupt_timer_annotation_restarts_the_timer_instead_of_failing():
    binding = flink_binding(member1="Unhealthy")
    binding["metadata"]["annotations"][UNHEALTHY_SINCE_ANNOTATION] = "{not json"
    decision, after = step(binding, 5)
    assert timers(after) == {"member1": stamp(5)} and decision.evicted == ()


def test_deleting_binding_is_left_alone():
    binding = flink_binding(member1="Unhealthy")
    binding["metadata"]["deletionTimestamp"] = stamp(0)
    assert decide_application_failover(binding, SETTINGS, at(1000)).patch is None


def test_malformed_binding_does_not_raise():
    for junk in ({}, {"spec": []}, {"spec": {"clusters": "x", "failover": {"application": {}}}, "status": 3}, []):
        assert decide_application_failover(junk, SETTINGS, at(0)).patch is None


# --- state preservation ---------------------------------------------------------------------------------------


def unhealthy_flink_without_job_id():
    binding = flink_binding(member1="Unhealthy")
    binding["status"]["aggregatedStatus"][0]["status"] = {"lifecycleState": "FAILED"}
    return binding


def test_jsonpath_finding_nothing_waits_a_bounded_time_then_evicts_without_state():
    binding = unhealthy_flink_without_job_id()
    _, binding = step(binding, 0)
    waiting, binding = step(binding, 60)
    assert waiting.evicted == () and waiting.requeue_after == timedelta(seconds=60)
    assert [(e.type, e.reason) for e in waiting.events] == [("Warning", "PreservedStateNotFound")]
    decision, after = step(binding, 120)
    assert decision.evicted == ("member1",)
    assert "preservedLabelState" not in decision.new_tasks[0]
    assert ("Warning", "PreservedStateIncomplete") in [(e.type, e.reason) for e in decision.events]


def test_state_that_appears_during_the_wait_is_preserved():
    binding = unhealthy_flink_without_job_id()
    _, binding = step(binding, 0)
    _, binding = step(binding, 60)
    set_health(binding, "member1", "Unhealthy", {"jobStatus": {"jobId": JOB_ID}})
    decision, _ = step(binding, 90)
    assert decision.new_tasks[0]["preservedLabelState"] == {ALIAS: JOB_ID}


def test_state_wait_is_configurable():
    binding = unhealthy_flink_without_job_id()
    _, binding = step(binding, 0)
    decision, _ = step(binding, 65, DecisionSettings(state_wait=timedelta(seconds=5)))
    assert decision.evicted == ("member1",)


def test_documented_jobID_typo_does_not_block_the_eviction_forever():
    binding = flink_binding(member1="Unhealthy")
    binding["spec"]["failover"]["application"]["statePreservation"]["rules"][0]["jsonPath"] = "{ .jobStatus.jobID }"
    _, binding = step(binding, 0)
    assert step(binding, 60)[0].evicted == ()
    assert step(binding, 120)[0].evicted == ("member1",)


@pytest.mark.parametrize("value", ["a" * 64, "job/with/slashes", "-leading-dash", "spaces are bad"])
def test_value_that_is_not_a_label_value_is_never_written(value):
    binding = flink_binding(member1="Unhealthy")
    binding["status"]["aggregatedStatus"][0]["status"]["jobStatus"]["jobId"] = value
    binding["spec"]["failover"]["application"]["decisionConditions"]["tolerationSeconds"] = 0
    decision, after = step(binding, 0)
    assert decision.evicted == ("member1",)
    assert "preservedLabelState" not in after["spec"]["gracefulEvictionTasks"][0]
    assert ("Warning", "PreservedStateInvalid") in [(e.type, e.reason) for e in decision.events]


def test_literal_text_rule_is_preserved_as_rendered():
    """Issue #5788's constant label: jsonPath text outside braces is literal."""
    binding = flink_binding(member1="Unhealthy")
    binding["spec"]["failover"]["application"]["statePreservation"]["rules"].append(
        {"aliasLabelName": "example.com/restore", "jsonPath": "from-{ .lifecycleState }"}
    )
    binding["spec"]["failover"]["application"]["decisionConditions"]["tolerationSeconds"] = 0
    state = step(binding, 0)[0].new_tasks[0]["preservedLabelState"]
    assert state == {ALIAS: JOB_ID, "example.com/restore": "from-STABLE"}


def test_invalid_alias_key_is_skipped_with_a_warning():
    binding = flink_binding(member1="Unhealthy")
    binding["spec"]["failover"]["application"]["statePreservation"]["rules"][0]["aliasLabelName"] = "bad key!"
    binding["spec"]["failover"]["application"]["decisionConditions"]["tolerationSeconds"] = 0
    decision, _ = step(binding, 0)
    assert decision.evicted == ("member1",) and "preservedLabelState" not in decision.new_tasks[0]
    assert decision.events[0].reason == "PreservedStateInvalid"


def test_second_failover_of_a_never_healthy_copy_keeps_the_first_state():
    """Karmada #6232: the second failover re-read the state from the broken copy and lost the job id."""
    binding = flink_binding(member1="Unhealthy")
    _, binding = step(binding, 0)
    _, binding = step(binding, 60)  # first failover: member1 -> (scheduler) member2
    binding["spec"]["clusters"] = [{"name": "member2", "replicas": 1}]
    binding["metadata"]["generation"] = 3
    binding["status"]["schedulerObservedGeneration"] = 3
    set_health(binding, "member2", "Unhealthy", {"jobStatus": {"jobId": "0" * 32}, "lifecycleState": "FAILED"})
    _, binding = step(binding, 60 + 300)  # the new copy's restore grace (DecisionSettings.restore_grace) is over
    decision, after = step(binding, 60 + 300 + 60)
    assert decision.evicted == ("member2",)
    second = after["spec"]["gracefulEvictionTasks"][-1]
    assert second["fromCluster"] == "member2" and second["preservedLabelState"] == {ALIAS: JOB_ID}
    assert ("Normal", "PreservedStateInherited") in [(e.type, e.reason) for e in decision.events]


def test_failover_of_a_cluster_that_ran_before_the_first_failover_reads_its_own_state():
    binding = flink_binding(member1="Healthy")
    binding["spec"]["clusters"] = [{"name": "member2", "replicas": 1}]
    binding["spec"]["gracefulEvictionTasks"] = [
        {
            "fromCluster": "member1",
            "reason": "ApplicationFailure",
            "producer": "x",
            "purgeMode": "Directly",
            "preservedLabelState": {ALIAS: "1" * 32},
            "clustersBeforeFailover": ["member1", "member2"],
            "creationTimestamp": stamp(0),
        }
    ]
    set_health(binding, "member2", "Unhealthy", {"jobStatus": {"jobId": JOB_ID}})
    binding["spec"]["failover"]["application"]["decisionConditions"]["tolerationSeconds"] = 0
    decision, _ = step(binding, 10)
    assert decision.new_tasks[0]["preservedLabelState"] == {ALIAS: JOB_ID}


def test_purge_mode_of_the_wrong_type_falls_back_to_gracefully():
    binding = nginx_binding(["member1", "member2"])
    binding["spec"]["failover"]["application"]["purgeMode"] = ["Never"]
    binding["spec"]["failover"]["application"]["decisionConditions"]["tolerationSeconds"] = 0
    set_health(binding, "member1", "Unhealthy")
    assert step(binding, 0)[0].new_tasks[0]["purgeMode"] == "Gracefully"
