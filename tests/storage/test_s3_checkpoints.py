"""Checkpoint discovery and savepoint injection against a real S3-protocol server (moto, over HTTP, via s3fs)."""

import json
import time
import uuid

import boto3
import jsonpatch
import pytest
import s3fs

from failover.checkpoints import DEFAULT_LAYOUT, FLINK_NATIVE_LAYOUT, Outcome, find_restore_point, open_store, \
    parse_layout
from failover.jobid import JobId
from failover.profiles import load_profiles
from tests.support import admission_review, decoded_patch
from webhook.handlers import AdmissionHandlers
from webhook.metrics import AdmissionMetrics
from webhook.mutators import LookupPool, savepoint_mutators
from webhook.review import complete, parse_review

JOB = JobId("0123456789abcdef0123456789abcdef")
LABEL = "application.karmada.io/failover-jobid"
DEFAULT = (parse_layout(DEFAULT_LAYOUT),)


def options(endpoint):
    return {"endpoint_url": endpoint, "key": "testing", "secret": "testing",
            "client_kwargs": {"region_name": "us-east-1"}, "skip_instance_cache": True}


@pytest.fixture
def bucket(s3_endpoint):
    name = f"ckpt-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1", aws_access_key_id="testing",
                 aws_secret_access_key="testing").create_bucket(Bucket=name)
    return s3fs.S3FileSystem(**options(s3_endpoint)), name


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
    result = find_restore_point(store, DEFAULT, (), "flink", JOB)
    assert result.outcome is Outcome.FOUND
    assert result.path == f"s3://{name}/flink/{JOB}/checkpoints/chk-10"


def test_flink_native_layout_on_s3_under_a_prefix(bucket, s3_endpoint):
    fs, name = bucket
    write_checkpoints(fs, f"{name}/flink-checkpoints/{JOB}", completed=(99, 100))
    store = open_store(f"s3://{name}/flink-checkpoints/", options(s3_endpoint))
    result = find_restore_point(store, (parse_layout(FLINK_NATIVE_LAYOUT),), (), "", JOB)
    assert result.path == f"s3://{name}/flink-checkpoints/{JOB}/chk-100"


def test_a_checkpoint_completed_after_a_lookup_is_seen_by_the_next(bucket, s3_endpoint):
    fs, name = bucket
    prefix = f"{name}/flink/{JOB}/checkpoints"
    write_checkpoints(fs, prefix, completed=(1,), in_progress=(2,))
    store = open_store(f"s3://{name}", options(s3_endpoint))
    assert find_restore_point(store, DEFAULT, (), "flink", JOB).path.endswith("/chk-1")
    fs.pipe(f"{prefix}/chk-2/_metadata", b"metadata")
    assert find_restore_point(store, DEFAULT, (), "flink", JOB).path.endswith("/chk-2")


def test_savepoint_fallback_on_s3(bucket, s3_endpoint):
    fs, name = bucket
    fs.pipe(f"{name}/savepoints/flink/{JOB}/savepoint-012345-0123456789ab/_metadata", b"m")
    store = open_store(f"s3://{name}", options(s3_endpoint))
    result = find_restore_point(store, DEFAULT, (parse_layout("{root}/savepoints/{namespace}/{job_id}"),),
                                "flink", JOB)
    assert (result.source, result.path) == ("savepoint",
                                            f"s3://{name}/savepoints/flink/{JOB}/savepoint-012345-0123456789ab")


def test_missing_job_on_s3_is_not_found(bucket, s3_endpoint):
    fs, name = bucket
    write_checkpoints(fs, f"{name}/flink/{'f' * 32}/checkpoints", completed=(1,))
    result = find_restore_point(open_store(f"s3://{name}", options(s3_endpoint)), DEFAULT, (), "flink", JOB)
    assert result.outcome is Outcome.NOT_FOUND


def test_missing_bucket_is_a_storage_error(s3_endpoint):
    store = open_store(f"s3://no-such-bucket-{uuid.uuid4().hex[:8]}", options(s3_endpoint))
    result = find_restore_point(store, DEFAULT, (), "flink", JOB)
    assert result.outcome is Outcome.STORAGE_ERROR
    assert "does not exist" in result.reason


async def test_webhook_injects_an_s3_checkpoint(bucket, s3_endpoint):
    fs, name = bucket
    write_checkpoints(fs, f"{name}/flink/{JOB}/checkpoints", completed=(3,), in_progress=(4,))
    pool = LookupPool(2)
    metrics = AdmissionMetrics()
    profiles = load_profiles([], label=LABEL, layouts=(DEFAULT_LAYOUT,))
    handlers = AdmissionHandlers(mutators=savepoint_mutators(
        profiles, open_store(f"s3://{name}", options(s3_endpoint)), executor=pool, metrics=metrics))
    obj = {"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
           "metadata": {"name": "basic-example", "namespace": "flink", "labels": {LABEL: JOB.value}},
           "spec": {"job": {"jarURI": "local:///x.jar", "upgradeMode": "last-state"}}}
    try:
        request = parse_review(json.dumps(admission_review(obj)).encode())
        verdict = await handlers.mutate(request)
    finally:
        pool.shutdown()
    job = jsonpatch.apply_patch(obj, decoded_patch(complete(request, verdict)))["spec"]["job"]
    assert job == {"jarURI": "local:///x.jar", "upgradeMode": "last-state", "state": "running",
                   "initialSavepointPath": f"s3://{name}/flink/{JOB}/checkpoints/chk-3"}
    assert metrics.registry.get_sample_value("failover_relay_savepoint_lookups_total", {"outcome": "found"}) == 1


async def test_unreachable_s3_is_answered_within_the_deadline():
    from tests.storage.conftest import free_port

    pool = LookupPool(2)
    profiles = load_profiles([], label=LABEL, layouts=(DEFAULT_LAYOUT,))
    store = open_store("s3://ckpt", options(f"http://127.0.0.1:{free_port()}"))  # nothing listens there
    handlers = AdmissionHandlers(mutators=savepoint_mutators(profiles, store, executor=pool, deadline=1.0))
    obj = {"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
           "metadata": {"name": "f", "namespace": "flink", "labels": {LABEL: JOB.value}}, "spec": {}}
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
