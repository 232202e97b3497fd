import copy

import jsonpatch
import pytest

from failover.core.api import FLINK_DEPLOYMENT
from failover.core.verdict import clip
from failover.state.checkpoints import DEFAULT_LAYOUT, LookupResult, Outcome
from failover.state.flink_config import OPERATOR_1_8, VALIDATOR_KEYS, validate_job_spec, validate_redeploy
from failover.state.profiles import FLINK_BLUE_GREEN_DEPLOYMENT, FLINK_SESSION_JOB, TRIGGER_LABELS, load_profiles
from failover.state.savepoint import (
    AUDIT_FALLBACK,
    AUDIT_JOB_ID,
    AUDIT_OUTCOME,
    AUDIT_PATH,
    AUDIT_REASON,
    CARRIED_FORWARD,
    FAIL_CLOSED,
    FAIL_OPEN,
    PREVIOUS_JOB_IDS_ANNOTATION,
    UPGRADE_SAVEPOINT_PATH_ANNOTATION,
    claim_mode,
    injection_off_verdict,
    injection_verdict,
    patch_fields,
    plan_lookup,
)

LABEL = "application.karmada.io/failover-jobid"
JOB = "0123456789abcdef0123456789abcdef"
OTHER = "fedcba9876543210fedcba9876543210"
CHECKPOINT = f"s3://flink/checkpoints/{JOB}/chk-42"
FOUND = LookupResult(Outcome.FOUND, CHECKPOINT, "checkpoint", job_id=JOB)
PROFILES = load_profiles([], label=LABEL, layouts=(DEFAULT_LAYOUT,))
PROFILE = PROFILES[FLINK_DEPLOYMENT]
# Both key generations, so every operator 1.8+ accepts upgradeMode: savepoint.
STATEFUL = {"state.checkpoints.dir": "s3://flink/checkpoints", "state.savepoints.dir": "s3://flink/savepoints"}


def flink_deployment(job_id=JOB, configuration=None, **job):
    """The Flink operator's basic example, as Karmada propagates it after a failover (label injected)."""
    spec_job = {
        "jarURI": "local:///opt/flink/examples/streaming/StateMachineExample.jar",
        "parallelism": 2,
        "upgradeMode": "stateless",
    }
    spec_job.update(job)
    labels = {"app": "basic-example"}
    if job_id is not None:
        labels[LABEL] = job_id
    spec = {"image": "flink:1.17", "flinkVersion": "v1_17", "serviceAccount": "flink", "job": spec_job}
    if configuration is not None:
        spec["flinkConfiguration"] = configuration
    return {
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkDeployment",
        "metadata": {"name": "basic-example", "namespace": "flink", "labels": labels},
        "spec": spec,
    }


def apply(obj, verdict):
    return jsonpatch.apply_patch(obj, list(verdict.patch))


def operator_refusal(obj):
    """What the operator's validator says about the job spec, for every operator generation."""
    job, configuration = obj["spec"]["job"], obj["spec"].get("flinkConfiguration")
    return [refusal for generation in VALIDATOR_KEYS if (refusal := validate_job_spec(job, configuration, generation))]


def test_found_checkpoint_sets_the_path_and_nothing_else_without_directories():
    obj = flink_deployment()
    verdict = injection_verdict(PROFILE, obj, FOUND, FAIL_OPEN, "flink")
    assert verdict.allowed
    assert list(verdict.patch) == [{"op": "add", "path": "/spec/job/initialSavepointPath", "value": CHECKPOINT}]
    job = apply(obj, verdict)["spec"]["job"]
    assert job["upgradeMode"] == "stateless" and "state" not in job
    assert verdict.audit == {AUDIT_OUTCOME: "found", AUDIT_PATH: CHECKPOINT, AUDIT_JOB_ID: JOB}
    assert operator_refusal(apply(obj, verdict)) == []


def test_upgrade_mode_becomes_savepoint_when_both_directories_are_configured():
    obj = flink_deployment(configuration=STATEFUL)
    patched = apply(obj, injection_verdict(PROFILE, obj, FOUND, FAIL_OPEN, "flink"))
    assert patched["spec"]["job"]["upgradeMode"] == "savepoint"
    assert operator_refusal(patched) == []


@pytest.mark.parametrize(
    "configuration",
    [
        {"state.checkpoints.dir": "s3://flink/checkpoints"},  # no savepoint dir: "could not be upgraded with savepoint"
        {"state.savepoints.dir": "s3://flink/savepoints"},  # no checkpoint dir: "Checkpoint directory ... defined"
        {"state.checkpoints.dir": " ", "state.savepoints.dir": "s3://flink/savepoints"},  # whitespace-only is unset
        # Flink 1.20 keys only: operators 1.8/1.9 (built on Flink 1.18) read only the state.* keys.
        {"execution.checkpointing.dir": "s3://flink/c", "execution.checkpointing.savepoint-dir": "s3://flink/s"},
    ],
)
def test_upgrade_mode_is_left_alone_where_the_validator_would_refuse_savepoint(configuration):
    obj = flink_deployment(configuration=configuration)
    patched = apply(obj, injection_verdict(PROFILE, obj, FOUND, FAIL_OPEN))
    assert patched["spec"]["job"]["upgradeMode"] == "stateless"
    assert operator_refusal(
        {**patched, "spec": {**patched["spec"], "job": {**patched["spec"]["job"], "upgradeMode": "savepoint"}}}
    ), "the refused alternative really is refused"


def test_job_state_is_never_forced():
    for operation, old in (("CREATE", None), ("UPDATE", flink_deployment(state="suspended"))):
        obj = flink_deployment(state="suspended", configuration=STATEFUL)
        verdict = injection_verdict(PROFILE, obj, FOUND, FAIL_OPEN, operation=operation, old_object=old)
        assert apply(obj, verdict)["spec"]["job"]["state"] == "suspended"
        assert not any(op["path"].endswith("/state") for op in verdict.patch)


def test_patch_uses_add_for_absent_fields_and_replace_for_present_ones():
    verdict = injection_verdict(PROFILE, flink_deployment(configuration=STATEFUL), FOUND, FAIL_OPEN)
    assert list(verdict.patch) == [
        {"op": "add", "path": "/spec/job/initialSavepointPath", "value": CHECKPOINT},
        {"op": "replace", "path": "/spec/job/upgradeMode", "value": "savepoint"},
    ]


@pytest.mark.parametrize("mode", ["savepoint", "last-state"])
def test_stateful_upgrade_mode_is_kept(mode):
    obj = flink_deployment(upgradeMode=mode, configuration=STATEFUL)
    verdict = injection_verdict(PROFILE, obj, FOUND, FAIL_OPEN)
    assert apply(obj, verdict)["spec"]["job"]["upgradeMode"] == mode
    assert not any(op["path"].endswith("upgradeMode") for op in verdict.patch)


def test_validator_port_matches_the_operators_rules():
    job = {"upgradeMode": "savepoint"}
    assert validate_job_spec(job, {}) == (
        "Checkpoint directory[execution.checkpointing.dir] must be defined for last-state and savepoint upgrade modes"
    )
    assert validate_job_spec(job, {"state.checkpoints.dir": "s3://c"}) == (
        "Job could not be upgraded with savepoint while config key[execution.checkpointing.savepoint-dir] is not set"
    )
    assert validate_job_spec(job, {"execution.checkpointing.dir": "s3://c"}, OPERATOR_1_8).startswith(
        "Checkpoint directory[state.checkpoints.dir]"
    )
    assert validate_job_spec({"upgradeMode": "last-state"}, {"state.checkpoints.dir": "s3://c"}) is None
    assert validate_job_spec({}, {}) is None  # JobSpec's default upgradeMode is stateless
    nested = {"state": {"checkpoints": {"dir": "s3://c"}, "savepoints": {"dir": "s3://s"}}}  # YAML config, 1.11+
    assert validate_job_spec(job, nested, OPERATOR_1_8) is None
    assert validate_redeploy({"savepointRedeployNonce": 1}, {}) == (
        "InitialSavepointPath must not be empty for savepoint redeployment"
    )
    assert validate_redeploy({"savepointRedeployNonce": 1, "initialSavepointPath": "s3://p"}, {}) is None
    assert validate_redeploy({"savepointRedeployNonce": 1}, {"savepointRedeployNonce": 1}) is None


def test_missing_job_section_is_created_once():
    obj = flink_deployment()
    del obj["spec"]["job"]
    verdict = injection_verdict(PROFILE, obj, FOUND, FAIL_OPEN)
    assert list(verdict.patch) == [{"op": "add", "path": "/spec/job", "value": {"initialSavepointPath": CHECKPOINT}}]


def test_missing_spec_is_created():
    obj = flink_deployment()
    del obj["spec"]
    verdict = injection_verdict(PROFILE, obj, FOUND, FAIL_OPEN)
    assert [op["path"] for op in verdict.patch] == ["/spec"]
    assert apply(obj, verdict)["spec"]["job"] == {"initialSavepointPath": CHECKPOINT}


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
    obj = flink_deployment(configuration=STATEFUL)
    once = apply(obj, injection_verdict(PROFILE, obj, FOUND, FAIL_OPEN))
    again = injection_verdict(PROFILE, once, FOUND, FAIL_OPEN)
    assert again.patch == ()
    assert again.audit[AUDIT_OUTCOME] == "already-set"
    assert apply(once, injection_verdict(PROFILE, obj, FOUND, FAIL_OPEN)) == once


def test_object_already_carrying_the_path_gets_no_patch():
    obj = flink_deployment(initialSavepointPath=CHECKPOINT, upgradeMode="savepoint", configuration=STATEFUL)
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
    assert [job.value for job in plan.query.job_ids] == [JOB] and plan.result is None and not plan.skip
    assert plan.query.namespace == "flink" and plan.query.checkpoint_dir is None


@pytest.mark.parametrize("value", ["../../etc", "x" * 200, JOB.upper(), "", 7])
def test_invalid_label_is_answered_without_a_lookup(value):
    plan = plan_lookup(PROFILE, flink_deployment(job_id=value), "CREATE")
    assert plan.query is None
    assert plan.result.outcome is Outcome.INVALID_JOB_ID
    assert plan.result.reason.startswith("job id ")


def test_warning_for_a_200_character_label_keeps_its_reason():
    plan = plan_lookup(PROFILE, flink_deployment(job_id="a" * 200), "CREATE")
    warning = injection_verdict(PROFILE, flink_deployment(), plan.result, FAIL_OPEN).warnings[0]
    assert len(warning) <= 120
    assert "is not a Flink JobID (32 lowercase hex chars, got 200)" in warning


def test_update_offers_the_path_set_at_creation_to_carry_forward():
    old = apply(flink_deployment(), injection_verdict(PROFILE, flink_deployment(), FOUND, FAIL_OPEN))
    resynced = flink_deployment()  # the control plane's template never holds the path
    plan = plan_lookup(PROFILE, resynced, "UPDATE", old)
    assert plan.carried == CHECKPOINT and plan.query is not None  # kept only if it belongs (restore.py decides)
    carried = LookupResult(Outcome.FOUND, CHECKPOINT, CARRIED_FORWARD)
    verdict = injection_verdict(PROFILE, resynced, carried, FAIL_OPEN, operation="UPDATE", old_object=old)
    assert apply(resynced, verdict)["spec"]["job"] == old["spec"]["job"]


def test_update_without_a_previous_path_looks_up():
    plan = plan_lookup(PROFILE, flink_deployment(), "UPDATE", flink_deployment())
    assert plan.carried is None and plan.query.job_ids[0].value == JOB


def test_update_with_a_changed_job_id_looks_up_again():
    old = flink_deployment(job_id="f" * 32, initialSavepointPath="s3://x/chk-1")
    plan = plan_lookup(PROFILE, flink_deployment(), "UPDATE", old)
    assert plan.carried is None and plan.query.job_ids[0].value == JOB


@pytest.mark.parametrize(
    "outcome, reason",
    [
        (Outcome.NOT_FOUND, "no completed checkpoint in s3://x"),
        (Outcome.TIMEOUT, "checkpoint lookup timed out after 2s"),
        (Outcome.STORAGE_ERROR, "storage error: PermissionError: denied (x)"),
        (Outcome.INVALID_JOB_ID, "job id '../../etc' is not a Flink JobID"),
    ],
)
def test_fail_open_admits_unchanged_with_warning_and_audit(outcome, reason):
    verdict = injection_verdict(PROFILE, flink_deployment(), LookupResult(outcome, reason=reason), FAIL_OPEN)
    assert verdict.allowed and verdict.patch == ()
    assert verdict.warnings == (f"no savepoint set: {reason}",)
    assert verdict.audit == {AUDIT_OUTCOME: outcome.value, AUDIT_REASON: reason}


def test_fail_closed_denies_with_the_reason():
    result = LookupResult(Outcome.TIMEOUT, reason="checkpoint lookup timed out after 2s")
    verdict = injection_verdict(PROFILE, flink_deployment(), result, FAIL_CLOSED)
    assert not verdict.allowed
    assert verdict.message == (
        "spec.job.initialSavepointPath: no restore point for flink/basic-example: checkpoint lookup timed out after 2s"
    )
    assert verdict.audit[AUDIT_OUTCOME] == "timeout"


def test_fail_closed_names_the_label_for_an_invalid_job_id():
    plan = plan_lookup(PROFILE, flink_deployment(job_id="../../etc"), "CREATE")
    verdict = injection_verdict(PROFILE, flink_deployment(job_id="../../etc"), plan.result, FAIL_CLOSED)
    assert verdict.message.startswith(f"metadata.labels[{LABEL}]: ")
    assert "'../../etc' is not a Flink JobID" in verdict.message


def test_long_reasons_are_clipped_in_audit_annotations():
    verdict = injection_verdict(
        PROFILE, flink_deployment(), LookupResult(Outcome.NOT_FOUND, reason="r" * 2000), FAIL_OPEN
    )
    assert len(verdict.audit[AUDIT_REASON]) == 512


def test_value_templates_render_job_id_and_namespace():
    from failover.core.api import GroupKind
    from failover.state.profiles import load_profiles as load

    profile = load(
        [
            {
                "kind": "Job",
                "group": "example.com",
                "version": "v1",
                "targets": [
                    {"field": "spec.restore.from", "value": "{path}"},
                    {"field": "spec.restore.note", "value": "{namespace}/{job_id}"},
                ],
            }
        ],
        label=LABEL,
        layouts=(DEFAULT_LAYOUT,),
    )[GroupKind("example.com", "Job")]
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


# Point 2: where the state is comes from the workload's own configuration.


def test_the_query_takes_the_workloads_own_directories():
    configuration = {
        "execution.checkpointing.dir": "s3://flink/new",
        "state.checkpoints.dir": "s3://flink/old",
        "state.savepoints.dir": "s3://flink/savepoints",
    }
    query = plan_lookup(PROFILE, flink_deployment(configuration=configuration), "CREATE").query
    assert (query.checkpoint_dir, query.savepoint_dir, query.per_job_checkpoints) == (
        "s3://flink/new",
        "s3://flink/savepoints",
        True,
    )


def test_create_subdir_off_searches_the_directory_itself():
    configuration = {"state.checkpoints.dir": "s3://flink/c", "execution.checkpointing.create-subdir": "FALSE"}
    assert not plan_lookup(PROFILE, flink_deployment(configuration=configuration), "CREATE").query.per_job_checkpoints
    # Without a directory of its own, there is nothing flat to search: the configured root keeps its layouts.
    query = plan_lookup(
        PROFILE, flink_deployment(configuration={"state.checkpoints.create-subdir": False}), "CREATE"
    ).query
    assert query.per_job_checkpoints and query.checkpoint_dir is None


def test_a_refused_directory_fails_closed_on_the_configuration():
    refused = LookupResult(Outcome.REFUSED_DIRECTORY, reason="state directory '../x' is relative")
    verdict = injection_verdict(PROFILE, flink_deployment(), refused, FAIL_CLOSED)
    assert verdict.message.startswith("spec.flinkConfiguration: no restore point")
    open_verdict = injection_verdict(PROFILE, flink_deployment(), refused, FAIL_OPEN)
    assert open_verdict.allowed and open_verdict.patch == ()
    assert open_verdict.audit[AUDIT_OUTCOME] == "refused-directory"


# Point 3: fallbacks are named; their inputs are read from the object, untrusted.


def test_fallbacks_are_named_in_the_audit_and_a_warning():
    result = LookupResult(
        Outcome.FOUND,
        "s3://flink/checkpoints/" + OTHER + "/chk-3",
        "checkpoint",
        job_id=OTHER,
        fallback="previous-job-id",
    )
    verdict = injection_verdict(PROFILE, flink_deployment(), result, FAIL_OPEN)
    assert verdict.audit[AUDIT_FALLBACK] == "previous-job-id" and verdict.audit[AUDIT_JOB_ID] == OTHER
    assert any("fallback previous-job-id" in warning for warning in verdict.warnings)


def test_recorded_fallbacks_are_read_and_hostile_ids_dropped():
    obj = flink_deployment()
    obj["metadata"]["annotations"] = {
        PREVIOUS_JOB_IDS_ANNOTATION: f"{OTHER}, ../../etc,{JOB.upper()},{OTHER}",
        UPGRADE_SAVEPOINT_PATH_ANNOTATION: "s3://flink/savepoints/savepoint-fedcba-1",
    }
    query = plan_lookup(PROFILE, obj, "CREATE").query
    assert [job.value for job in query.previous_job_ids] == [OTHER]
    assert query.upgrade_savepoint_path == "s3://flink/savepoints/savepoint-fedcba-1"
    reflected = flink_deployment()
    reflected["status"] = {"jobStatus": {"upgradeSavepointPath": "s3://flink/savepoints/savepoint-012345-1"}}
    assert plan_lookup(PROFILE, reflected, "CREATE").query.upgrade_savepoint_path.endswith("savepoint-012345-1")


# Point 5: several trigger labels, built-in profiles for the operator's other kinds.


@pytest.mark.parametrize("label", TRIGGER_LABELS)
def test_every_trigger_label_convention_is_accepted(label):
    obj = flink_deployment(job_id=None)
    obj["metadata"]["labels"][label] = JOB
    assert plan_lookup(PROFILE, obj, "CREATE").query.job_ids[0].value == JOB


def test_several_trigger_labels_give_several_candidate_ids():
    obj = flink_deployment()
    obj["metadata"]["labels"]["application.karmada.io/cluster-failover-jobid"] = OTHER
    obj["metadata"]["labels"]["resourcebinding.karmada.io/failover-jobid"] = "not-a-job-id"
    plan = plan_lookup(PROFILE, obj, "CREATE")
    assert [job.value for job in plan.query.job_ids] == [JOB, OTHER]


def test_only_invalid_trigger_labels_answer_with_the_reason():
    obj = flink_deployment(job_id="../x")
    obj["metadata"]["labels"]["resourcebinding.karmada.io/failover-jobid"] = "y"
    plan = plan_lookup(PROFILE, obj, "CREATE")
    assert plan.result.outcome is Outcome.INVALID_JOB_ID and plan.result.reason.startswith(LABEL)


def test_session_job_and_blue_green_deployment_are_built_in():
    session = PROFILES[FLINK_SESSION_JOB]
    assert session.path_targets[0].field == "spec.job.initialSavepointPath" and session.version == "v1beta1"
    blue_green = PROFILES[FLINK_BLUE_GREEN_DEPLOYMENT]
    assert blue_green.path_targets[0].field == "spec.template.spec.job.initialSavepointPath"
    obj = {
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkBlueGreenDeployment",
        "metadata": {"name": "bg", "namespace": "flink", "labels": {LABEL: JOB}},
        "spec": {
            "template": {
                "spec": {
                    "flinkConfiguration": STATEFUL,
                    "job": {"jarURI": "local:///x.jar", "upgradeMode": "stateless"},
                }
            }
        },
    }
    query = plan_lookup(blue_green, obj, "CREATE").query
    assert query.checkpoint_dir == "s3://flink/checkpoints"
    job = apply(obj, injection_verdict(blue_green, obj, FOUND, FAIL_OPEN))["spec"]["template"]["spec"]["job"]
    assert job == {"jarURI": "local:///x.jar", "upgradeMode": "savepoint", "initialSavepointPath": CHECKPOINT}


# Point 6: a path that arrives late, on an UPDATE of a deployed job.


def deployed(obj):
    return {**obj, "status": {"reconciliationStatus": {"lastReconciledSpec": '{"job": {}}', "state": "DEPLOYED"}}}


def test_late_path_on_a_deployed_job_warns_without_the_opt_in():
    old = deployed(flink_deployment())
    verdict = injection_verdict(
        PROFILE, deployed(flink_deployment()), FOUND, FAIL_OPEN, operation="UPDATE", old_object=old
    )
    assert [op["path"] for op in verdict.patch] == ["/spec/job/initialSavepointPath"]
    assert any("operator ignores it" in warning for warning in verdict.warnings)


def test_late_path_on_a_deployed_job_redeploys_with_the_opt_in():
    old = deployed(flink_deployment(savepointRedeployNonce=4))
    obj = deployed(flink_deployment(savepointRedeployNonce=4))
    verdict = injection_verdict(PROFILE, obj, FOUND, FAIL_OPEN, operation="UPDATE", old_object=old, late_restore=True)
    patched = apply(obj, verdict)
    assert patched["spec"]["job"]["savepointRedeployNonce"] == 5
    assert validate_redeploy(patched["spec"]["job"], old["spec"]["job"]) is None
    # Judged again (a reinvocation, or the same object re-sent), nothing changes: the nonce moves once.
    again = injection_verdict(PROFILE, patched, FOUND, FAIL_OPEN, operation="UPDATE", old_object=old, late_restore=True)
    assert again.patch == ()


def test_late_path_before_the_first_deployment_needs_no_redeploy():
    # Created suspended (or never deployed): the operator still reads initialSavepointPath when it deploys.
    obj = flink_deployment(state="suspended")
    verdict = injection_verdict(
        PROFILE, obj, FOUND, FAIL_OPEN, operation="UPDATE", old_object=flink_deployment(), late_restore=True
    )
    assert [op["path"] for op in verdict.patch] == ["/spec/job/initialSavepointPath"] and not verdict.warnings


# Point 7: warnings where the configuration guarantees a stateless restart.


@pytest.mark.parametrize(
    "configuration, expected",
    [
        (None, "sets no checkpoint dir"),
        (
            {**STATEFUL, "execution.checkpointing.externalized-checkpoint-retention": "delete_on_cancellation"},
            "DELETE_ON_CANCELLATION",
        ),
        ({"state.checkpoints.create-subdir": "false"}, "create-subdir is off"),
    ],
)
def test_stateless_restart_is_warned_at_admission(configuration, expected):
    plan = plan_lookup(PROFILE, flink_deployment(configuration=configuration), "CREATE")
    assert any(expected in warning for warning in plan.warnings)
    verdict = injection_verdict(
        PROFILE, flink_deployment(), LookupResult(Outcome.NOT_FOUND, reason="none"), FAIL_OPEN, warnings=plan.warnings
    )
    assert len(verdict.warnings) >= 2
    assert any(expected in clip(warning) for warning in verdict.warnings), "the reason survives the wire's clip"


def test_a_stateful_configuration_gets_no_warning():
    assert plan_lookup(PROFILE, flink_deployment(configuration=STATEFUL), "CREATE").warnings == ()


def test_a_configuration_that_claims_the_restored_snapshot_is_warned_and_the_sentinel_is_never_a_path():
    claiming = flink_deployment(configuration={**STATEFUL, "execution.state-recovery.claim-mode": "CLAIM"})
    plan = plan_lookup(PROFILE, claiming, "CREATE")
    assert any(warning.startswith("restore is unsafe: claim mode CLAIM") for warning in plan.warnings), plan.warnings
    assert claim_mode(PROFILE, claiming) == "CLAIM" and claim_mode(PROFILE, flink_deployment()) == "NO_CLAIM"
    assert not plan_lookup(PROFILE, flink_deployment(configuration=STATEFUL), "CREATE").warnings
    # Operator 1.16's last-state sentinel in upgradeSavepointPath is no path to fall back to.
    sentinel = flink_deployment(configuration=STATEFUL)
    sentinel["status"] = {"jobStatus": {"upgradeSavepointPath": "KUBERNETES_OPERATOR_LAST_STATE"}}
    assert plan_lookup(PROFILE, sentinel, "CREATE").query.upgrade_savepoint_path is None
    sentinel["status"]["jobStatus"]["upgradeSavepointPath"] = "s3://flink/savepoints/savepoint-1"
    assert plan_lookup(PROFILE, sentinel, "CREATE").query.upgrade_savepoint_path == "s3://flink/savepoints/savepoint-1"


def test_without_a_checkpoint_root_a_moved_copy_is_admitted_unchanged_and_told_it_starts_empty():
    verdict = injection_off_verdict(PROFILE, flink_deployment())
    assert verdict.allowed and verdict.patch == ()
    [warning] = verdict.warnings
    assert "no savepoint.checkpointRoot" in warning and JOB in warning and len(warning) <= 120
    assert verdict.audit == {AUDIT_OUTCOME: "injection-off"}
    # A copy that is not a moved one (no job id) has nothing to be told.
    assert injection_off_verdict(PROFILE, flink_deployment(job_id=None)) == injection_off_verdict(PROFILE, {})
    assert injection_off_verdict(PROFILE, flink_deployment(job_id=None)).warnings == ()
