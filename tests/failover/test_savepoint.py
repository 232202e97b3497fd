import copy

import jsonpatch
import pytest

from failover.checkpoints import DEFAULT_LAYOUT, LookupResult, Outcome
from failover.profiles import load_profiles
from failover.api import FLINK_DEPLOYMENT
from failover.savepoint import (
    AUDIT_OUTCOME,
    AUDIT_PATH,
    AUDIT_REASON,
    CARRIED_FORWARD,
    FAIL_CLOSED,
    FAIL_OPEN,
    injection_verdict,
    patch_fields,
    plan_lookup,
)

LABEL = "application.karmada.io/failover-jobid"
JOB = "0123456789abcdef0123456789abcdef"
CHECKPOINT = f"s3://flink/flink/{JOB}/checkpoints/chk-42"
FOUND = LookupResult(Outcome.FOUND, CHECKPOINT, "checkpoint")
PROFILE = load_profiles([], label=LABEL, layouts=(DEFAULT_LAYOUT,))[FLINK_DEPLOYMENT]


def flink_deployment(job_id=JOB, **job):
    """The Flink operator's basic example, as Karmada propagates it after a failover (label injected)."""
    spec_job = {"jarURI": "local:///opt/flink/examples/streaming/StateMachineExample.jar", "parallelism": 2,
                "upgradeMode": "stateless"}
    spec_job.update(job)
    labels = {"app": "basic-example"}
    if job_id is not None:
        labels[LABEL] = job_id
    return {
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkDeployment",
        "metadata": {"name": "basic-example", "namespace": "flink", "labels": labels},
        "spec": {"image": "flink:1.17", "flinkVersion": "v1_17", "serviceAccount": "flink", "job": spec_job},
    }


def apply(obj, verdict):
    return jsonpatch.apply_patch(obj, list(verdict.patch))


def test_found_checkpoint_sets_path_upgrade_mode_and_state():
    obj = flink_deployment()
    verdict = injection_verdict(PROFILE, obj, FOUND, FAIL_OPEN, "flink")
    assert verdict.allowed and not verdict.warnings
    job = apply(obj, verdict)["spec"]["job"]
    assert job["initialSavepointPath"] == CHECKPOINT
    assert job["upgradeMode"] == "savepoint"
    assert job["state"] == "running"
    assert job["jarURI"] == obj["spec"]["job"]["jarURI"]
    assert verdict.audit == {AUDIT_OUTCOME: "found", AUDIT_PATH: CHECKPOINT}


def test_patch_uses_add_for_absent_fields_and_replace_for_present_ones():
    verdict = injection_verdict(PROFILE, flink_deployment(state="suspended"), FOUND, FAIL_OPEN)
    assert list(verdict.patch) == [
        {"op": "add", "path": "/spec/job/initialSavepointPath", "value": CHECKPOINT},
        {"op": "replace", "path": "/spec/job/upgradeMode", "value": "savepoint"},
        {"op": "replace", "path": "/spec/job/state", "value": "running"},
    ]


@pytest.mark.parametrize("mode", ["savepoint", "last-state"])
def test_stateful_upgrade_mode_is_kept(mode):
    verdict = injection_verdict(PROFILE, flink_deployment(upgradeMode=mode), FOUND, FAIL_OPEN)
    assert apply(flink_deployment(upgradeMode=mode), verdict)["spec"]["job"]["upgradeMode"] == mode
    assert not any(op["path"].endswith("upgradeMode") for op in verdict.patch)


def test_missing_job_section_is_created_once():
    obj = flink_deployment()
    del obj["spec"]["job"]
    verdict = injection_verdict(PROFILE, obj, FOUND, FAIL_OPEN)
    assert list(verdict.patch) == [{"op": "add", "path": "/spec/job", "value": {
        "initialSavepointPath": CHECKPOINT, "upgradeMode": "savepoint", "state": "running"}}]


def test_missing_spec_is_created():
    obj = flink_deployment()
    del obj["spec"]
    verdict = injection_verdict(PROFILE, obj, FOUND, FAIL_OPEN)
    assert [op["path"] for op in verdict.patch] == ["/spec"]
    assert apply(obj, verdict)["spec"]["job"]["state"] == "running"


def test_null_job_section_is_replaced():
    obj = flink_deployment()
    obj["spec"]["job"] = None
    verdict = injection_verdict(PROFILE, obj, FOUND, FAIL_OPEN)
    assert [(op["op"], op["path"]) for op in verdict.patch] == [("replace", "/spec/job")]
    assert apply(obj, verdict)["spec"]["job"]["initialSavepointPath"] == CHECKPOINT


def test_job_of_the_wrong_type_is_denied():
    obj = flink_deployment()
    obj["spec"]["job"] = "not an object"
    verdict = injection_verdict(PROFILE, obj, FOUND, FAIL_OPEN)
    assert not verdict.allowed
    assert "spec.job: must be an object" in verdict.message


def test_applying_the_patch_twice_changes_nothing():
    obj = flink_deployment()
    once = apply(obj, injection_verdict(PROFILE, obj, FOUND, FAIL_OPEN))
    again = injection_verdict(PROFILE, once, FOUND, FAIL_OPEN)
    assert again.patch == ()
    assert again.audit[AUDIT_OUTCOME] == "already-set"
    assert apply(once, injection_verdict(PROFILE, obj, FOUND, FAIL_OPEN)) == once


def test_object_already_carrying_the_path_gets_no_patch():
    obj = flink_deployment(initialSavepointPath=CHECKPOINT, upgradeMode="savepoint", state="running")
    assert injection_verdict(PROFILE, obj, FOUND, FAIL_OPEN).patch == ()


def test_different_path_is_replaced_on_create():
    obj = flink_deployment(initialSavepointPath="s3://old/savepoint-1")
    ops = injection_verdict(PROFILE, obj, FOUND, FAIL_OPEN).patch
    assert ops[0] == {"op": "replace", "path": "/spec/job/initialSavepointPath", "value": CHECKPOINT}


def test_no_label_means_nothing_to_do():
    assert plan_lookup(PROFILE, flink_deployment(job_id=None), "CREATE").skip
    obj = flink_deployment()
    obj["metadata"]["labels"] = "not a map"
    assert plan_lookup(PROFILE, obj, "CREATE").skip


def test_valid_label_asks_for_a_lookup():
    plan = plan_lookup(PROFILE, flink_deployment(), "CREATE")
    assert plan.job_id.value == JOB and plan.result is None and not plan.skip


@pytest.mark.parametrize("value", ["../../etc", "x" * 200, JOB.upper(), "", 7])
def test_invalid_label_is_answered_without_a_lookup(value):
    plan = plan_lookup(PROFILE, flink_deployment(job_id=value), "CREATE")
    assert plan.job_id is None
    assert plan.result.outcome is Outcome.INVALID_JOB_ID
    assert plan.result.reason.startswith("job id ")


def test_warning_for_a_200_character_label_keeps_its_reason():
    plan = plan_lookup(PROFILE, flink_deployment(job_id="a" * 200), "CREATE")
    warning = injection_verdict(PROFILE, flink_deployment(), plan.result, FAIL_OPEN).warnings[0]
    assert len(warning) <= 120
    assert "is not a Flink JobID (32 lowercase hex chars, got 200)" in warning


def test_update_carries_the_path_set_at_creation_forward():
    old = apply(flink_deployment(), injection_verdict(PROFILE, flink_deployment(), FOUND, FAIL_OPEN))
    resynced = flink_deployment()  # the control plane's template never holds the path
    plan = plan_lookup(PROFILE, resynced, "UPDATE", old)
    assert plan.job_id is None
    assert plan.result.path == CHECKPOINT and plan.result.source == CARRIED_FORWARD
    assert apply(resynced, injection_verdict(PROFILE, resynced, plan.result, FAIL_OPEN))["spec"]["job"] == \
        old["spec"]["job"]


def test_update_without_a_previous_path_looks_up():
    plan = plan_lookup(PROFILE, flink_deployment(), "UPDATE", flink_deployment())
    assert plan.job_id.value == JOB


def test_update_with_a_changed_job_id_looks_up_again():
    old = flink_deployment(job_id="f" * 32, initialSavepointPath="s3://x/chk-1")
    assert plan_lookup(PROFILE, flink_deployment(), "UPDATE", old).job_id.value == JOB


@pytest.mark.parametrize("outcome, reason", [
    (Outcome.NOT_FOUND, "no completed checkpoint in s3://x"),
    (Outcome.TIMEOUT, "checkpoint lookup timed out after 2s"),
    (Outcome.STORAGE_ERROR, "storage error: PermissionError: denied (x)"),
    (Outcome.INVALID_JOB_ID, "job id '../../etc' is not a Flink JobID"),
])
def test_fail_open_admits_unchanged_with_warning_and_audit(outcome, reason):
    verdict = injection_verdict(PROFILE, flink_deployment(), LookupResult(outcome, reason=reason), FAIL_OPEN)
    assert verdict.allowed and verdict.patch == ()
    assert verdict.warnings == (f"no savepoint set: {reason}",)
    assert verdict.audit == {AUDIT_OUTCOME: outcome.value, AUDIT_REASON: reason}


def test_fail_closed_denies_with_the_reason():
    result = LookupResult(Outcome.TIMEOUT, reason="checkpoint lookup timed out after 2s")
    verdict = injection_verdict(PROFILE, flink_deployment(), result, FAIL_CLOSED)
    assert not verdict.allowed
    assert verdict.message == ("spec.job.initialSavepointPath: no restore point for flink/basic-example: "
                               "checkpoint lookup timed out after 2s")
    assert verdict.audit[AUDIT_OUTCOME] == "timeout"


def test_fail_closed_names_the_label_for_an_invalid_job_id():
    plan = plan_lookup(PROFILE, flink_deployment(job_id="../../etc"), "CREATE")
    verdict = injection_verdict(PROFILE, flink_deployment(job_id="../../etc"), plan.result, FAIL_CLOSED)
    assert verdict.message.startswith(f"metadata.labels[{LABEL}]: ")
    assert "'../../etc' is not a Flink JobID" in verdict.message


def test_long_reasons_are_clipped_in_audit_annotations():
    verdict = injection_verdict(PROFILE, flink_deployment(), LookupResult(Outcome.NOT_FOUND, reason="r" * 2000),
                                FAIL_OPEN)
    assert len(verdict.audit[AUDIT_REASON]) == 512


def test_value_templates_render_job_id_and_namespace():
    from failover.profiles import load_profiles as load
    from failover.api import GroupKind

    profile = load([{"kind": "Job", "group": "example.com", "version": "v1", "targets": [
        {"field": "spec.restore.from", "value": "{path}"},
        {"field": "spec.restore.note", "value": "{namespace}/{job_id}"}]}],
        label=LABEL, layouts=(DEFAULT_LAYOUT,))[GroupKind("example.com", "Job")]
    obj = {"apiVersion": "example.com/v1", "kind": "Job", "metadata": {"labels": {LABEL: JOB}}, "spec": {}}
    patched = apply(obj, injection_verdict(profile, obj, FOUND, FAIL_OPEN, "team"))
    assert patched["spec"]["restore"] == {"from": CHECKPOINT, "note": f"team/{JOB}"}


def test_field_names_with_slashes_and_tildes_are_escaped():
    ops, problems = patch_fields({"spec": {}}, [(("spec", "a/b~c"), "v", frozenset())])
    assert not problems
    assert ops == [{"op": "add", "path": "/spec/a~1b~0c", "value": "v"}]
    assert jsonpatch.apply_patch({"spec": {}}, ops) == {"spec": {"a/b~c": "v"}}


def test_patch_does_not_modify_the_input():
    obj = flink_deployment()
    before = copy.deepcopy(obj)
    injection_verdict(PROFILE, obj, FOUND, FAIL_OPEN)
    assert obj == before
