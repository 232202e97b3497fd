"""The binding as the loop's cache keeps it: the decisions read from it what they read from the whole object."""

from __future__ import annotations

import copy
from typing import Any

from controllers.loop.cache import binding_cached_form, work_cached_form
from failover.state.empty_start import START_WITHOUT_STATE_ANNOTATION, accepted_job_ids, deployed_restore_path
from failover.state.history import decide_history
from failover.state.last_state import decide_last_state
from failover.state.restoration import terminally_failed
from tests.failover.binding_builders import JOB_ID, at, flink_binding, set_health
from tests.failover.restoration_builders import deployed_status, moved_without_checkpoint
from tests.failover.work_builders import work

RECONCILIATION = {"lastReconciledSpec": "{...the whole spec...}", "state": "DEPLOYED"}


def reflected_flink_status(binding: dict[str, Any]) -> dict[str, Any]:
    status = binding["status"]["aggregatedStatus"][0]["status"]
    status.update({"reconciliationStatus": RECONCILIATION, "clusterInfo": {"flink-version": "1.20.1"}})
    status["jobStatus"]["upgradeSavepointPath"] = "s3://state/sp-1"
    binding["metadata"]["managedFields"] = [{"manager": "karmada-controller-manager"}]
    return binding


def test_only_the_fields_the_loop_reads_are_kept_and_its_decisions_do_not_change() -> None:
    full = reflected_flink_status(flink_binding())
    full["spec"]["failover"]["cluster"] = {
        "statePreservation": {"rules": [{"aliasLabelName": "a.io/state", "jsonPath": "{.lifecycleState}"}]}
    }
    cached = binding_cached_form(full)
    assert set(cached["status"]["aggregatedStatus"][0]["status"]) == {"jobStatus", "lifecycleState"}
    assert "managedFields" not in cached["metadata"]
    assert full["status"]["aggregatedStatus"][0]["status"]["reconciliationStatus"] == RECONCILIATION  # not mutated
    for decide in (lambda b: decide_last_state(b, at(10)), lambda b: decide_history(b, (), at(10))):
        assert decide(cached) == decide(full)


def test_a_terminal_failure_reads_the_same_from_the_cached_binding() -> None:
    """The lifecycle is not a statePreservation field, but FAILED there ends a moved copy's restore grace."""
    full = reflected_flink_status(flink_binding())
    status = full["status"]["aggregatedStatus"][0]["status"]
    status.update({"lifecycleState": "FAILED", "error": "Recovery is suppressed by NoRestartBackoffTimeStrategy"})
    status["jobStatus"]["state"] = "RECONCILING"
    cached = binding_cached_form(full)
    assert terminally_failed(cached["status"]["aggregatedStatus"][0])
    assert terminally_failed(cached["status"]["aggregatedStatus"][0]) == terminally_failed(
        full["status"]["aggregatedStatus"][0]
    )


def test_a_rule_that_may_read_anything_keeps_the_whole_status() -> None:
    full = reflected_flink_status(flink_binding())
    full["spec"]["failover"]["application"]["statePreservation"]["rules"][0]["jsonPath"] = "{..jobId}"
    cached = binding_cached_form(copy.deepcopy(full))
    assert cached["status"] == full["status"]


def test_the_copies_a_move_brings_keep_what_says_whether_they_were_deployed_from_a_path() -> None:
    binding = moved_without_checkpoint()
    set_health(binding, "member2", "Healthy", deployed_status(None))
    set_health(binding, "member3", "Healthy", deployed_status(None))  # not brought by the move
    cached = {
        item["clusterName"]: item["status"] for item in binding_cached_form(binding)["status"]["aggregatedStatus"]
    }
    assert deployed_restore_path({"status": cached["member2"]}) == ""
    assert "reconciliationStatus" not in cached["member3"]


def test_the_acceptance_of_a_lost_state_is_kept_of_a_works_manifests() -> None:
    manifest = {
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkDeployment",
        "metadata": {
            "name": "foo",
            "namespace": "default",
            "labels": {"a": "b"},
            "annotations": {START_WITHOUT_STATE_ANNOTATION: JOB_ID, "other": "x"},
        },
    }
    cached = work_cached_form(work(manifest, cluster="member2"))
    assert accepted_job_ids([cached], "member2") == {JOB_ID}
    assert cached["spec"]["workload"]["manifests"][0]["metadata"]["annotations"] == {
        START_WITHOUT_STATE_ANNOTATION: JOB_ID
    }
