"""Checkpoint discovery and savepoint injection against a real S3-protocol server (moto, over HTTP, via s3fs)."""

import json
import os
import subprocess
import sys
import time
import uuid

import jsonpatch
import yaml

from failover.state.checkpoints import FLINK_NATIVE_LAYOUT, KARMADA_EXAMPLE_LAYOUT, Outcome, open_store, parse_layout
from failover.state.jobid import JobId
from failover.state.profiles import load_profiles
from failover.state.restore import PREVIOUS_JOB_ID, RestoreQuery, find_restore_point
from tests.admission_reviews import admission_review, decoded_patch
from tests.processes import free_port
from tests.storage.s3_options import options
from webhook.blocking import BlockingPool
from webhook.handlers import AdmissionHandlers
from webhook.metrics import AdmissionMetrics
from webhook.mutators import savepoint_mutators
from webhook.review import complete, parse_review

JOB = JobId("0123456789abcdef0123456789abcdef")
LABEL = "application.karmada.io/failover-jobid"
ROTATED = JobId("89abcdef0123456789abcdef01234567")
DEFAULT = (parse_layout(KARMADA_EXAMPLE_LAYOUT),)
NATIVE = (parse_layout(FLINK_NATIVE_LAYOUT),)


def lookup(store, layouts, savepoint_layouts, namespace, job, roots=(), **query):
    return find_restore_point((store, *roots), layouts, savepoint_layouts, RestoreQuery(namespace, (job,), **query))


def write_checkpoints(fs, prefix, completed=(), in_progress=()):
    for n in completed:
        fs.pipe(f"{prefix}/chk-{n}/_metadata", b"metadata")
        fs.pipe(f"{prefix}/chk-{n}/0b1c-state", b"state")
    for n in in_progress:
        fs.pipe(f"{prefix}/chk-{n}/0b1c-state", b"state")


def test_newest_completed_checkpoint_on_s3(bucket, s3_endpoint):
    fs, name = bucket
    write_checkpoints(fs, f"{name}/flink/{JOB}/checkpoints", completed=(8, 9, 10), in_progress=(11,))
    fs.pipe(f"{name}/flink/{JOB}/checkpoints/shared/x", b"shared state")
    store = open_store(f"s3://{name}", options(s3_endpoint))
    result = lookup(store, DEFAULT, (), "flink", JOB)
    assert result.outcome is Outcome.FOUND
    assert result.path == f"s3://{name}/flink/{JOB}/checkpoints/chk-10"


def test_a_lookup_is_one_listing_of_the_jobs_checkpoints_on_s3(bucket, s3_endpoint):
    """Issue 27: with the newest checkpoint in progress a lookup cost four requests (LIST, then a HEAD of each
    candidate's _metadata, and s3fs's LIST after the missing one); N jobs at once meant 4N. One listing answers it."""
    fs, name = bucket
    write_checkpoints(fs, f"{name}/flink/{JOB}/checkpoints", completed=(8, 9), in_progress=(10,))
    fs.pipe(f"{name}/flink/{JOB}/checkpoints/shared/x", b"shared state")
    store = open_store(f"s3://{name}", options(s3_endpoint))
    store.fs.ls(f"{name}/")  # the client exists from here on; its requests are counted
    requests = []
    store.fs.s3.meta.events.register("before-send.s3", lambda request, **_: requests.append(request.method))
    result = lookup(store, DEFAULT, (), "flink", JOB)
    assert result.path == f"s3://{name}/flink/{JOB}/checkpoints/chk-9"
    assert requests == ["GET"]


def test_flink_native_layout_on_s3_under_a_prefix(bucket, s3_endpoint):
    fs, name = bucket
    write_checkpoints(fs, f"{name}/flink-checkpoints/{JOB}", completed=(99, 100))
    store = open_store(f"s3://{name}/flink-checkpoints/", options(s3_endpoint))
    result = lookup(store, NATIVE, (), "", JOB)
    assert result.path == f"s3://{name}/flink-checkpoints/{JOB}/chk-100"


def test_a_checkpoint_completed_after_a_lookup_is_seen_by_the_next(bucket, s3_endpoint):
    fs, name = bucket
    prefix = f"{name}/flink/{JOB}/checkpoints"
    write_checkpoints(fs, prefix, completed=(1,), in_progress=(2,))
    store = open_store(f"s3://{name}", options(s3_endpoint))
    assert lookup(store, DEFAULT, (), "flink", JOB).path.endswith("/chk-1")
    fs.pipe(f"{prefix}/chk-2/_metadata", b"metadata")
    assert lookup(store, DEFAULT, (), "flink", JOB).path.endswith("/chk-2")


def test_savepoint_on_s3(bucket, s3_endpoint):
    fs, name = bucket
    fs.pipe(f"{name}/savepoints/flink/{JOB}/savepoint-012345-0123456789ab/_metadata", b"m")
    store = open_store(f"s3://{name}", options(s3_endpoint))
    result = lookup(store, DEFAULT, (parse_layout("{root}/savepoints/{namespace}/{job_id}"),), "flink", JOB)
    assert (result.source, result.path) == (
        "savepoint",
        f"s3://{name}/savepoints/flink/{JOB}/savepoint-012345-0123456789ab",
    )


def test_missing_job_on_s3_is_not_found(bucket, s3_endpoint):
    fs, name = bucket
    write_checkpoints(fs, f"{name}/flink/{'f' * 32}/checkpoints", completed=(1,))
    result = lookup(open_store(f"s3://{name}", options(s3_endpoint)), DEFAULT, (), "flink", JOB)
    assert result.outcome is Outcome.NOT_FOUND


def test_missing_bucket_is_a_storage_error(s3_endpoint):
    store = open_store(f"s3://no-such-bucket-{uuid.uuid4().hex[:8]}", options(s3_endpoint))
    result = lookup(store, DEFAULT, (), "flink", JOB)
    assert result.outcome is Outcome.STORAGE_ERROR
    assert "does not exist" in result.reason


async def test_webhook_injects_an_s3_checkpoint(bucket, s3_endpoint):
    fs, name = bucket
    write_checkpoints(fs, f"{name}/flink/{JOB}/checkpoints", completed=(3,), in_progress=(4,))
    pool = BlockingPool(2)
    metrics = AdmissionMetrics()
    profiles = load_profiles([], label=LABEL, layouts=(KARMADA_EXAMPLE_LAYOUT,))
    # A generous deadline: this test is about what is injected, and the first s3fs call (session, credentials,
    # connection to moto) alone can take over the production 2 s on a loaded two-core runner.
    handlers = AdmissionHandlers(
        mutators=savepoint_mutators(
            profiles, open_store(f"s3://{name}", options(s3_endpoint)), executor=pool, metrics=metrics, deadline=15.0
        )
    )
    obj = {
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkDeployment",
        "metadata": {"name": "basic-example", "namespace": "flink", "labels": {LABEL: JOB.value}},
        "spec": {"job": {"jarURI": "local:///x.jar", "upgradeMode": "last-state"}},
    }
    try:
        request = parse_review(json.dumps(admission_review(obj)).encode())
        verdict = await handlers.mutate(request)
    finally:
        pool.shutdown()
    job = jsonpatch.apply_patch(obj, decoded_patch(complete(request, verdict)))["spec"]["job"]
    assert job == {
        "jarURI": "local:///x.jar",
        "upgradeMode": "last-state",
        "initialSavepointPath": f"s3://{name}/flink/{JOB}/checkpoints/chk-3",
    }
    assert metrics.registry.get_sample_value("failover_relay_savepoint_lookups_total", {"outcome": "found"}) == 1


async def test_unreachable_s3_is_answered_within_the_deadline():
    pool = BlockingPool(2)
    profiles = load_profiles([], label=LABEL, layouts=(FLINK_NATIVE_LAYOUT,))
    store = open_store("s3://ckpt", options(f"http://127.0.0.1:{free_port()}"))  # nothing listens there
    handlers = AdmissionHandlers(mutators=savepoint_mutators(profiles, store, executor=pool, deadline=1.0))
    obj = {
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkDeployment",
        "metadata": {"name": "f", "namespace": "flink", "labels": {LABEL: JOB.value}},
        "spec": {},
    }
    started = time.monotonic()
    try:
        request = parse_review(json.dumps(admission_review(obj)).encode())
        verdict = await handlers.mutate(request)
    finally:
        pool.shutdown()
    assert time.monotonic() - started < 2.5
    response = complete(request, verdict)
    assert response["allowed"] and "patch" not in response
    assert response["auditAnnotations"]["savepoint-outcome"] in ("timeout", "storage-error")


def test_the_workloads_own_s3a_directories_are_searched_and_spelled_its_way(bucket, s3_endpoint):
    fs, name = bucket
    write_checkpoints(fs, f"{name}/team-a/checkpoints/{JOB}", completed=(5,))
    fs.pipe(f"{name}/team-a/savepoints/savepoint-{JOB.value[:6]}-0123456789ab/_metadata", b"m")
    store = open_store(f"s3://{name}", options(s3_endpoint))
    result = lookup(
        store,
        NATIVE,
        (),
        "flink",
        JOB,
        checkpoint_dir=f"s3a://{name}/team-a/checkpoints",
        savepoint_dir=f"s3a://{name}/team-a/savepoints",
    )
    assert result.outcome is Outcome.FOUND
    # Both completed within the same second on the server: the savepoint wins the tie (self-contained).
    assert result.path.startswith(f"s3a://{name}/team-a/")


def test_another_tenants_bucket_is_refused_without_a_request(bucket, s3_endpoint):
    fs, name = bucket
    store = open_store(f"s3://{name}/tenant-a", options(s3_endpoint))
    for directory in (
        f"s3://{name}/tenant-b/checkpoints",
        f"s3://other-{name}/checkpoints",
        f"s3://{name}/tenant-a/../tenant-b",
    ):
        result = lookup(store, NATIVE, (), "flink", JOB, checkpoint_dir=directory)
        assert result.outcome is Outcome.REFUSED_DIRECTORY, directory


def test_a_rotated_job_id_finds_the_previous_runs_checkpoint_on_s3(bucket, s3_endpoint):
    fs, name = bucket
    write_checkpoints(fs, f"{name}/checkpoints/{JOB}", completed=(17,))
    store = open_store(f"s3://{name}", options(s3_endpoint))
    result = find_restore_point(
        (store,),
        NATIVE,
        (),
        RestoreQuery("flink", (ROTATED,), previous_job_ids=(JOB,), checkpoint_dir=f"s3://{name}/checkpoints"),
    )
    assert (result.path, result.fallback) == (f"s3://{name}/checkpoints/{JOB}/chk-17", PREVIOUS_JOB_ID)


def test_only_the_jobs_own_complete_savepoints_are_listed_from_a_shared_directory(bucket, s3_endpoint):
    fs, name = bucket
    for other in range(30):  # other jobs' savepoints, side by side as Flink writes them
        fs.pipe(f"{name}/savepoints/savepoint-{other:06x}-{other:012x}/_metadata", b"m")
    fs.pipe(f"{name}/savepoints/savepoint-{JOB.value[:6]}-aaaaaaaaaaaa/_metadata", b"m")
    fs.pipe(f"{name}/savepoints/savepoint-{JOB.value[:6]}-aaaaaaaaaaaa/op-state", b"s")
    fs.pipe(f"{name}/savepoints/savepoint-{JOB.value[:6]}-bbbbbbbbbbbb/op-state", b"s")  # still being written
    fs.pipe(f"{name}/savepoints/savepoint-{JOB.value[:6]}-not-a-savepoint/_metadata", b"m")
    store = open_store(f"s3://{name}", options(s3_endpoint))
    result = lookup(store, NATIVE, (), "flink", JOB, savepoint_dir=f"s3://{name}/savepoints")
    assert (result.source, result.path) == (
        "savepoint",
        f"s3://{name}/savepoints/savepoint-{JOB.value[:6]}-aaaaaaaaaaaa",
    )
    empty = lookup(store, NATIVE, (), "flink", ROTATED, savepoint_dir=f"s3://{name}/savepoints")
    assert empty.outcome is Outcome.NOT_FOUND


def test_inject_cli_reads_the_bucket_through_storage_options(bucket, s3_endpoint, tmp_path):
    # The config file an S3/MinIO user writes: the endpoint and credentials in savepoint.storageOptions (s3fs's
    # option names), run through the real command line in its own process.
    fs, name = bucket
    write_checkpoints(fs, f"{name}/checkpoints/{JOB}", completed=(5, 6), in_progress=(7,))
    config = tmp_path / "relay.yaml"
    config.write_text(
        f"savepoint:\n"
        f"  checkpointRoot: s3://{name}/checkpoints\n"
        f"  storageOptions: {{endpoint_url: '{s3_endpoint}', key: testing, secret: testing}}\n"
    )
    manifest = tmp_path / "flink.yaml"
    manifest.write_text(
        "apiVersion: flink.apache.org/v1beta1\nkind: FlinkDeployment\n"
        f"metadata: {{name: job, namespace: flink, labels: {{{LABEL}: '{JOB}'}}}}\n"
        "spec: {image: 'flink:1.17', job: {jarURI: 'local:///x.jar', upgradeMode: savepoint}}\n"
    )
    environment = {key: value for key, value in os.environ.items() if not key.startswith("AWS_")}
    result = subprocess.run(
        [sys.executable, "-m", "relay.cli", "inject", "--config", str(config), str(manifest)],
        capture_output=True,
        text=True,
        timeout=60,
        env=environment,
    )
    assert result.returncode == 0, result.stderr
    injected = yaml.safe_load(result.stdout)["spec"]["job"]["initialSavepointPath"]
    assert injected == f"s3://{name}/checkpoints/{JOB}/chk-6"
