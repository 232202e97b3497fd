"""Restore through `/mutate` with real AdmissionReviews: every patched object is checked against the Flink operator's
own CRD schema (nothing refused, nothing pruned) and against its validator's rules on the patched fields."""

import json
import os

import aiohttp
import jsonpatch
import pytest

from failover.core.api import FLINK_RESOURCES
from failover.state.checkpoints import open_store
from failover.state.flink_config import VALIDATOR_KEYS, validate_job_spec, validate_redeploy
from failover.state.profiles import load_profiles
from failover.state.savepoint import PREVIOUS_JOB_IDS_ANNOTATION
from relay.serve import RelayServer
from relay.settings import SavepointSettings, Settings
from tests.admission_reviews import admission_review, decoded_patch
from tests.crd_schema import schema_problems
from tests.tls_clients import client_tls
from webhook.blocking import BlockingPool
from webhook.handlers import AdmissionHandlers
from webhook.mutators import savepoint_mutators
from webhook.review import complete, parse_review

LABEL = "application.karmada.io/failover-jobid"
JOB = "0123456789abcdef0123456789abcdef"
ROTATED = "89abcdef0123456789abcdef01234567"
PLURALS = {resource.kind: resource.plural for resource in FLINK_RESOURCES}


@pytest.fixture
def pool():
    lookup_pool = BlockingPool(2)
    yield lookup_pool
    lookup_pool.shutdown()


@pytest.fixture
def root(tmp_path):
    """A shared checkpoint volume: Flink's own layout, a newer savepoint of the job (savepoint-on-deletion)."""
    checkpoints = tmp_path / "volume" / "checkpoints" / JOB
    for n, completed_at in ((7, 1000), (8, None)):
        (checkpoints / f"chk-{n}").mkdir(parents=True)
        if completed_at:
            (checkpoints / f"chk-{n}" / "_metadata").write_bytes(b"m")
            os.utime(checkpoints / f"chk-{n}" / "_metadata", (completed_at, completed_at))
    return tmp_path / "volume"


def configuration(root, **extra):
    return {
        "state.checkpoints.dir": f"file://{root}/checkpoints",
        "state.savepoints.dir": f"file://{root}/savepoints",
        **extra,
    }


def job_spec(**job):
    return {
        "jarURI": "local:///opt/flink/examples/streaming/StateMachineExample.jar",
        "parallelism": 2,
        "upgradeMode": "stateless",
        **job,
    }


def flink_deployment(flink_configuration=None, labels=None, **job):
    spec = {
        "image": "flink:1.20",
        "flinkVersion": "v1_20",
        "serviceAccount": "flink",
        "job": job_spec(**job),
        "jobManager": {"resource": {"memory": "2048m", "cpu": 1}},
        "taskManager": {"resource": {"memory": "2048m", "cpu": 1}},
    }
    if flink_configuration is not None:
        spec["flinkConfiguration"] = flink_configuration
    return {
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkDeployment",
        "metadata": {"name": "basic-example", "namespace": "flink", "labels": labels or {LABEL: JOB}},
        "spec": spec,
    }


def handlers(root, pool, **options):
    """The configured root is the checkpoint directory (for workloads that name none); the whole volume is an
    allowed root too, so the savepoint directory a workload names can be read."""
    profiles = load_profiles([], label=LABEL, layouts=("{root}/{job_id}",))
    return AdmissionHandlers(
        mutators=savepoint_mutators(
            profiles,
            open_store(str(root / "checkpoints")),
            executor=pool,
            cache_ttl=0,
            allowed_roots=(open_store(str(root)),),
            **options,
        )
    )


async def mutate(handlers, obj, operation="CREATE", old=None):
    admission = parse_review(json.dumps(admission_review(obj, operation, old=old)).encode())
    return complete(admission, await handlers.mutate(admission))


def job_of(obj):
    spec = obj["spec"]
    return spec["template"]["spec"] if obj["kind"] == "FlinkBlueGreenDeployment" else spec


def assert_operator_accepts(patched, original, old=None):
    """The CRD keeps the patched object whole, and the validator refuses it for no reason it did not already have."""
    assert schema_problems(patched, PLURALS[patched["kind"]]) == []
    spec, before = job_of(patched), job_of(original)
    for generation in VALIDATOR_KEYS:
        if validate_job_spec(before["job"], before.get("flinkConfiguration"), generation) is None:
            assert validate_job_spec(spec["job"], spec.get("flinkConfiguration"), generation) is None, generation
    assert validate_redeploy(spec["job"], job_of(old)["job"] if old else None) is None


@pytest.mark.parametrize(
    "variant",
    [
        "no directories",
        "both directories",
        "Flink 1.20 keys only",
        "nested YAML",
        "suspended",
        "last-state",
        "savepoint without savepoint dir",
    ],
)
async def test_created_deployments_restore_and_stay_valid_for_the_operator(root, pool, variant):
    config = {
        "no directories": None,
        "both directories": configuration(root),
        "Flink 1.20 keys only": {
            "execution.checkpointing.dir": f"{root}/checkpoints",
            "execution.checkpointing.savepoint-dir": f"{root}/savepoints",
        },
        "nested YAML": {
            "state": {"checkpoints": {"dir": f"{root}/checkpoints"}, "savepoints": {"dir": f"{root}/savepoints"}}
        },
        "suspended": configuration(root),
        "last-state": configuration(root, **{"high-availability.type": "kubernetes"}),
        "savepoint without savepoint dir": {"state.checkpoints.dir": f"{root}/checkpoints"},
    }[variant]
    job = {
        "suspended": {"state": "suspended"},
        "last-state": {"upgradeMode": "last-state"},
        "savepoint without savepoint dir": {"upgradeMode": "savepoint"},
    }.get(variant, {})
    obj = flink_deployment(config, **job)
    response = await mutate(handlers(root, pool), obj)
    assert response["allowed"]
    patched = jsonpatch.apply_patch(obj, decoded_patch(response))
    assert patched["spec"]["job"]["initialSavepointPath"].endswith(f"/checkpoints/{JOB}/chk-7")
    assert patched["spec"]["job"].get("state") == job.get("state")  # never forced
    assert_operator_accepts(patched, obj)
    expected_mode = {
        "both directories": "savepoint",
        "nested YAML": "savepoint",
        "suspended": "savepoint",
        "last-state": "last-state",
        "savepoint without savepoint dir": "savepoint",
    }.get(variant, "stateless")
    assert patched["spec"]["job"]["upgradeMode"] == expected_mode


async def test_a_savepoint_taken_on_deletion_wins_and_is_spelled_as_the_workload_spells_it(root, pool):
    savepoint = root / "savepoints" / f"savepoint-{JOB[:6]}-a1b2c3d4e5f6"
    savepoint.mkdir(parents=True)
    (savepoint / "_metadata").write_bytes(b"m")
    obj = flink_deployment(configuration(root))
    response = await mutate(handlers(root, pool), obj)
    patched = jsonpatch.apply_patch(obj, decoded_patch(response))
    assert patched["spec"]["job"]["initialSavepointPath"] == f"file://{savepoint}"
    assert_operator_accepts(patched, obj)


async def test_session_job_and_blue_green_deployment_restore_within_their_schemas(root, pool):
    session = {
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkSessionJob",
        "metadata": {
            "name": "job",
            "namespace": "flink",
            "labels": {"application.karmada.io/cluster-failover-jobid": JOB},
        },
        "spec": {"deploymentName": "session", "job": job_spec()},
    }
    blue_green = {
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkBlueGreenDeployment",
        "metadata": {"name": "bg", "namespace": "flink", "labels": {"resourcebinding.karmada.io/failover-jobid": JOB}},
        "spec": {
            "template": {
                "spec": {
                    "image": "flink:1.20",
                    "flinkVersion": "v1_20",
                    "flinkConfiguration": configuration(root),
                    "job": job_spec(),
                }
            }
        },
    }
    for obj in (session, blue_green):
        response = await mutate(handlers(root, pool), obj)
        patched = jsonpatch.apply_patch(obj, decoded_patch(response))
        assert job_of(patched)["job"]["initialSavepointPath"].endswith(f"/{JOB}/chk-7"), obj["kind"]
        assert_operator_accepts(patched, obj)
    assert job_of(patched)["job"]["upgradeMode"] == "savepoint"


async def test_a_rotated_job_id_restores_the_previous_runs_state_and_says_so(root, pool):
    obj = flink_deployment(configuration(root), labels={LABEL: ROTATED})
    obj["metadata"]["annotations"] = {PREVIOUS_JOB_IDS_ANNOTATION: JOB}
    response = await mutate(handlers(root, pool), obj)
    patched = jsonpatch.apply_patch(obj, decoded_patch(response))
    assert patched["spec"]["job"]["initialSavepointPath"].endswith(f"/{JOB}/chk-7")
    assert response["auditAnnotations"]["savepoint-fallback"] == "previous-job-id"
    assert response["auditAnnotations"]["savepoint-job-id"] == JOB
    assert any("fallback previous-job-id" in warning for warning in response["warnings"])
    assert_operator_accepts(patched, obj)


def deployed(obj):
    return {
        **obj,
        "status": {
            "reconciliationStatus": {"lastReconciledSpec": json.dumps({"job": obj["spec"]["job"]}), "state": "DEPLOYED"}
        },
    }


async def test_a_late_path_redeploys_only_when_opted_in(root, pool):
    # Admitted without a path (fail-open, the storage was down); the operator deployed it statelessly.
    old = deployed(flink_deployment(configuration(root)))
    new = deployed(flink_deployment(configuration(root), savepointRedeployNonce=None))
    del new["spec"]["job"]["savepointRedeployNonce"]
    default = await mutate(handlers(root, pool), new, "UPDATE", old)
    patched = jsonpatch.apply_patch(new, decoded_patch(default))
    assert "savepointRedeployNonce" not in patched["spec"]["job"]
    assert any("operator ignores it" in warning for warning in default["warnings"])
    opted_in = await mutate(handlers(root, pool, late_restore=True), new, "UPDATE", old)
    redeployed = jsonpatch.apply_patch(new, decoded_patch(opted_in))
    assert redeployed["spec"]["job"]["savepointRedeployNonce"] == 1
    assert_operator_accepts(redeployed, new, old)
    again = await mutate(handlers(root, pool, late_restore=True), redeployed, "UPDATE", old)
    assert "patch" not in again  # the nonce moves once


async def test_update_keeps_a_carried_path_only_when_it_belongs(root, pool):
    created = flink_deployment(configuration(root), initialSavepointPath=f"file://{root}/checkpoints/{JOB}/chk-7")
    resynced = flink_deployment(configuration(root))
    response = await mutate(handlers(root, pool), resynced, "UPDATE", created)
    assert (
        jsonpatch.apply_patch(resynced, decoded_patch(response))["spec"]["job"]["initialSavepointPath"]
        == created["spec"]["job"]["initialSavepointPath"]
    )
    assert response["auditAnnotations"]["savepoint-outcome"] == "found"
    foreign = flink_deployment(configuration(root), initialSavepointPath="file:///etc/other-tenant/chk-1")
    response = await mutate(handlers(root, pool), resynced, "UPDATE", foreign)
    path = jsonpatch.apply_patch(resynced, decoded_patch(response))["spec"]["job"]["initialSavepointPath"]
    assert path == f"file://{root}/checkpoints/{JOB}/chk-7"  # looked up afresh, inside the root


@pytest.mark.parametrize(
    "directory, reason",
    [
        ("checkpoints", "relative"),
        ("{root}/../other-tenant", "'..'"),
        ("/other-tenant/checkpoints", "outside the allowed roots"),
        ("gopher://host/checkpoints", "scheme"),
        ("s3://AKIA:secret@bucket/checkpoints", "credentials"),
    ],
)
async def test_hostile_configuration_gets_the_configured_answer_with_the_reason(root, pool, directory, reason):
    obj = flink_deployment({"state.checkpoints.dir": directory.format(root=root)})
    response = await mutate(handlers(root, pool), obj)
    assert response["allowed"] and "patch" not in response
    assert response["auditAnnotations"]["savepoint-outcome"] == "refused-directory"
    assert reason in response["auditAnnotations"]["savepoint-reason"] and "secret" not in json.dumps(response)
    closed = await mutate(handlers(root, pool, failure_mode="closed"), obj)
    assert not closed["allowed"] and closed["status"]["code"] in (400, 403, 422)
    assert closed["status"]["message"].startswith("spec.flinkConfiguration: no restore point")


async def test_state_loss_is_warned_at_admission(root, pool):
    obj = flink_deployment(
        configuration(root, **{"execution.checkpointing.externalized-checkpoint-retention": "DELETE_ON_CANCELLATION"})
    )
    response = await mutate(handlers(root, pool), obj)
    assert any("DELETE_ON_CANCELLATION" in warning for warning in response["warnings"])
    response = await mutate(handlers(root, pool), flink_deployment())
    assert any("sets no checkpoint dir" in warning for warning in response["warnings"])


async def test_restore_over_real_tls_with_the_default_layout(root, tmp_path):
    settings = Settings(
        port=0, cert_dir=tmp_path / "certs", savepoint=SavepointSettings(checkpoint_root=f"file://{root}")
    )
    relay = RelayServer(settings)
    await relay.start()
    obj = flink_deployment(configuration(root))
    try:
        async with aiohttp.ClientSession() as session:
            async with session.post(
                f"{relay.url}/mutate", json=admission_review(obj), ssl=client_tls(relay.files.ca_file)
            ) as http:
                assert http.status == 200
                response = (await http.json())["response"]
    finally:
        await relay.stop()
    patched = jsonpatch.apply_patch(obj, decoded_patch(response))
    assert patched["spec"]["job"]["initialSavepointPath"] == f"file://{root}/checkpoints/{JOB}/chk-7"
    assert_operator_accepts(patched, obj)
