"""No silent empty start (failover/state/empty_start.py): a moved copy deployed without the state its move carried, or
parked by a closed-mode savepoint webhook, is recorded with its reason until it is restored by hand, accepted or gone;
and the savepoint webhook's closed mode lets a copy through that names its own path or accepts the loss."""

from __future__ import annotations

import json
from typing import Any

import pytest

from failover.core.api import FLINK_DEPLOYMENT
from failover.core.names import ObjectRef
from failover.state.checkpoints import DEFAULT_LAYOUT, LookupResult, Outcome
from failover.state.empty_start import (
    EVENT_PARKED,
    EVENT_RESOLVED,
    EVENT_STARTED_WITHOUT_STATE,
    NO_PATH,
    START_WITHOUT_STATE_ANNOTATION,
    STARTED_WITHOUT_STATE_ANNOTATION,
    decide_state_losses,
    deployed_restore_path,
    newly_empty,
    parked_reason,
    state_losses,
    watched_clusters,
)
from failover.state.empty_start import (
    Outcome as Loss,
)
from failover.state.profiles import load_profiles
from failover.state.savepoint import FAIL_CLOSED, FAIL_OPEN, injection_verdict
from tests.failover.binding_builders import JOB_ID, at, set_health
from tests.failover.restoration_builders import LABEL, deployed_status, moved_to_member2, moved_without_checkpoint
from tests.failover.work_builders import work
from tests.patches import merge_patch

PATH = "s3://state/default/" + JOB_ID + "/chk-7"
# What Karmada reports of a copy the member's apiserver refused (the execution controller's or the agent's apply).
REFUSED = (
    'admission webhook "savepoints.mutate.failover-relay.io" denied the request: spec.job.initialSavepointPath: '
    f"no restore point for foo: no completed checkpoint under s3://state/default/{JOB_ID}"
)
TEMPLATE = ObjectRef("FlinkDeployment", "foo", "default", "4b9e1b4e-1111-2222-3333-444455556666")


def reported(binding: dict[str, Any], status: dict[str, Any], health: str = "Healthy") -> dict[str, Any]:
    set_health(binding, "member2", health, status)
    return binding


def refused(binding: dict[str, Any]) -> dict[str, Any]:
    set_health(binding, "member2", "Unknown", {})
    item = next(item for item in binding["status"]["aggregatedStatus"] if item["clusterName"] == "member2")
    # As Karmada v1.19 reports a refused apply: the message, and no `applied` (omitempty, so false is left out).
    item.pop("applied", None)
    item["appliedMessage"] = REFUSED
    return binding


def foo_works(accepted: str | None = None) -> list[dict[str, Any]]:
    manifest: dict[str, Any] = {
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkDeployment",
        "metadata": {"name": "foo", "namespace": "default"},
    }
    if accepted is not None:
        manifest["metadata"]["annotations"] = {START_WITHOUT_STATE_ANNOTATION: accepted}
    return [work(manifest, cluster="member2")]


def decided(binding: dict[str, Any], works: list[dict[str, Any]] | None = None, **explained: str) -> tuple[Any, Any]:
    decision = decide_state_losses(binding, foo_works() if works is None else works, explained, at(60))
    return decision, merge_patch(binding, decision.patch) if decision.patch else binding


def test_the_deployed_path_is_read_from_the_operators_last_reconciled_spec() -> None:
    assert deployed_restore_path({"status": deployed_status(PATH)}) == PATH
    assert deployed_restore_path({"status": deployed_status(None)}) == ""
    assert deployed_restore_path({"status": {"jobStatus": {}}}) is None  # not deployed yet
    for hostile in ("{", "[" * 100_000, json.dumps({"spec": "x"}), "x" * (2 << 20)):
        assert deployed_restore_path({"status": {"reconciliationStatus": {"lastReconciledSpec": hostile}}}) is None


def test_a_copy_deployed_without_a_path_is_recorded_with_its_reason_and_an_event_on_the_template() -> None:
    binding = reported(moved_without_checkpoint(), deployed_status(None))
    assert newly_empty(binding) == {"member2": JOB_ID}
    decision, after = decided(binding, member2="no restorable state: no completed checkpoint")
    [loss] = decision.found
    assert (loss.cluster, loss.job_id, loss.outcome, loss.reason) == (
        "member2",
        JOB_ID,
        Loss.EMPTY,
        "no restorable state: no completed checkpoint",
    )
    [event] = decision.events
    assert (event.type, event.reason, event.regarding) == ("Warning", EVENT_STARTED_WITHOUT_STATE, TEMPLATE)
    assert event.regarding.uid == TEMPLATE.uid
    assert f"kubectl annotate flinkdeployment foo {START_WITHOUT_STATE_ANNOTATION}={JOB_ID}" in event.message
    assert state_losses(after)["member2"].outcome is Loss.EMPTY
    assert decide_state_losses(after, foo_works(), {}, at(90)).patch is None  # recorded once
    assert newly_empty(after) == {}


def test_without_an_explanation_the_reason_points_to_the_member_relays_log() -> None:
    decision, _ = decided(reported(moved_without_checkpoint(), deployed_status(None)))
    assert decision.found[0].reason == NO_PATH


def test_a_copy_deployed_from_a_path_is_no_loss() -> None:
    binding = reported(moved_without_checkpoint(), deployed_status(PATH))
    assert newly_empty(binding) == {}
    assert decided(binding)[0].patch is None


def test_a_copy_is_judged_while_its_moves_task_is_still_in_flight() -> None:
    """A parked copy is never Healthy: its task would end only at its grace period."""
    binding = refused(moved_to_member2())
    assert binding["spec"]["gracefulEvictionTasks"] and watched_clusters(binding) == {"member2"}
    decision, after = decided(binding)
    [loss] = decision.found
    assert loss.outcome is Loss.PARKED and loss.reason.startswith("no restore point for foo")
    assert decision.events[0].reason == EVENT_PARKED and "parked, not running" in decision.events[0].message


def test_a_parked_copy_restored_by_hand_or_accepted_is_resolved() -> None:
    _, parked = decided(refused(moved_to_member2()))
    by_hand, after = decided(reported(parked, deployed_status("s3://state/by-hand/savepoint-1")))
    assert by_hand.resolved == ("member2",) and STARTED_WITHOUT_STATE_ANNOTATION not in after["metadata"]["annotations"]
    assert by_hand.events[0].reason == EVENT_RESOLVED and "restored by hand" in by_hand.events[0].message
    accepted, after = decided(reported(parked, deployed_status(None)), foo_works(accepted=JOB_ID))
    assert accepted.resolved == ("member2",) and "accepted" in accepted.events[0].message
    assert decided(after, foo_works(accepted=JOB_ID))[0].patch is None  # not found again


def test_a_parked_copy_deployed_without_a_path_becomes_an_empty_start() -> None:
    _, parked = decided(refused(moved_to_member2()))
    decision, after = decided(reported(parked, deployed_status(None)))
    assert decision.found[0].outcome is Loss.EMPTY and state_losses(after)["member2"].outcome is Loss.EMPTY


def test_acceptance_names_the_job_whose_state_is_given_up() -> None:
    binding = reported(moved_without_checkpoint(), deployed_status(None))
    assert decided(binding, foo_works(accepted=JOB_ID))[0].patch is None
    assert decided(binding, foo_works(accepted="0" * 32))[0].found  # another job's acceptance is not this one's


def test_a_loss_on_a_cluster_no_longer_targeted_goes_silently() -> None:
    _, after = decided(reported(moved_without_checkpoint(), deployed_status(None)))
    after["spec"]["clusters"] = [{"name": "member3", "replicas": 1}]
    decision = decide_state_losses(after, foo_works(), {}, at(90))
    assert decision.events == () and decision.patch == {
        "metadata": {"annotations": {STARTED_WITHOUT_STATE_ANNOTATION: None}}
    }


@pytest.mark.parametrize(
    "raw",
    [
        "{",
        "[]",
        json.dumps({"member2": {"since": "x", "jobId": JOB_ID, "outcome": "empty", "reason": ""}}),
        json.dumps({"member2": {"since": "2026-11-28T00:00:00Z", "jobId": "../x", "outcome": "empty", "reason": ""}}),
        json.dumps({"member2": {"since": "2026-11-28T00:00:00Z", "jobId": JOB_ID, "outcome": "gone", "reason": ""}}),
    ],
)
def test_an_annotation_that_does_not_read_is_no_loss(raw: str) -> None:
    binding = moved_without_checkpoint()
    binding["metadata"]["annotations"][STARTED_WITHOUT_STATE_ANNOTATION] = raw
    assert state_losses(binding) == {}


def test_the_parked_reason_is_only_the_savepoint_webhooks_refusal() -> None:
    assert parked_reason({"applied": False, "appliedMessage": REFUSED}).startswith("no restore point for foo")
    assert parked_reason({"applied": False, "appliedMessage": "quota exceeded"}) is None
    assert parked_reason({"applied": True, "appliedMessage": REFUSED}) is None
    # As Karmada v1.19 writes a refused apply: `applied` is omitempty, so false is left out.
    assert parked_reason({"clusterName": "member2", "appliedMessage": REFUSED}).startswith("no restore point for foo")
    assert parked_reason({"clusterName": "member2"}) is None


# The savepoint webhook's closed mode: parked unless the object restores by hand or accepts the loss.
FLINK = load_profiles([], label=LABEL, layouts=(DEFAULT_LAYOUT,))[FLINK_DEPLOYMENT]
NOT_FOUND = LookupResult(Outcome.NOT_FOUND, reason="no completed checkpoint")


def flink_object(path: str | None = None, accepted: str | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "foo", "namespace": "default", "labels": {LABEL: JOB_ID}}
    if accepted is not None:
        metadata["annotations"] = {START_WITHOUT_STATE_ANNOTATION: accepted}
    job: dict[str, Any] = {"jarURI": "local:///opt/flink/job.jar", "upgradeMode": "savepoint"}
    if path:
        job["initialSavepointPath"] = path
    return {
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkDeployment",
        "metadata": metadata,
        "spec": {"job": job},
    }


def test_closed_mode_parks_a_copy_with_the_marker_karmada_passes_on() -> None:
    verdict = injection_verdict(FLINK, flink_object(), NOT_FOUND, FAIL_CLOSED)
    assert not verdict.allowed and parked_reason({"applied": False, "appliedMessage": str(verdict.denials[0])})


def test_closed_mode_admits_a_copy_restored_by_hand_or_accepting_the_loss() -> None:
    by_hand = injection_verdict(FLINK, flink_object(path="s3://state/by-hand/savepoint-1"), NOT_FOUND, FAIL_CLOSED)
    assert by_hand.allowed and not by_hand.patch and "own path" in by_hand.warnings[0]
    accepted = injection_verdict(FLINK, flink_object(accepted=f"{'0' * 32}, {JOB_ID}"), NOT_FOUND, FAIL_CLOSED)
    assert accepted.allowed and not accepted.patch and START_WITHOUT_STATE_ANNOTATION in accepted.warnings[0]
    assert not injection_verdict(FLINK, flink_object(accepted="0" * 32), NOT_FOUND, FAIL_CLOSED).allowed
    assert injection_verdict(FLINK, flink_object(), NOT_FOUND, FAIL_OPEN).allowed
