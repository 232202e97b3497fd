"""Savepoint injection through `/mutate`: real AdmissionReviews, real checkpoint trees, patches applied with
jsonpatch."""

import asyncio
import json
import threading
import time

import aiohttp
import jsonpatch
import pytest
import structlog

from failover.core.api import FLINK_DEPLOYMENT
from failover.state.checkpoints import KARMADA_EXAMPLE_LAYOUT, CheckpointStore, open_store
from failover.state.profiles import load_profiles
from relay.serve import RelayServer
from relay.settings import SavepointSettings, Settings
from tests.admission_reviews import admission_review, decoded_patch
from tests.tls_clients import client_tls
from webhook.blocking import BlockingPool
from webhook.handlers import AdmissionHandlers
from webhook.metrics import AdmissionMetrics
from webhook.mutators import SavepointMutator, savepoint_mutators
from webhook.review import complete, parse_review

LABEL = "application.karmada.io/failover-jobid"
JOB = "0123456789abcdef0123456789abcdef"
PROFILES = load_profiles([], label=LABEL, layouts=(KARMADA_EXAMPLE_LAYOUT,))


def flink_deployment(job_id=JOB, **job):
    labels = {"app": "basic-example"} | ({LABEL: job_id} if job_id is not None else {})
    spec_job = {"jarURI": "local:///opt/flink/examples/streaming/StateMachineExample.jar", "upgradeMode": "stateless"}
    spec_job.update(job)
    return {
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkDeployment",
        "metadata": {"name": "basic-example", "namespace": "flink", "labels": labels},
        "spec": {"image": "flink:1.17", "flinkVersion": "v1_17", "job": spec_job},
    }


def checkpoint_tree(root, *completed, in_progress=()):
    directory = root / "flink" / JOB / "checkpoints"
    for n in completed + tuple(in_progress):
        (directory / f"chk-{n}").mkdir(parents=True)
        if n in completed:
            (directory / f"chk-{n}" / "_metadata").write_bytes(b"m")
    return directory


@pytest.fixture
def pool():
    lookup_pool = BlockingPool(2)
    yield lookup_pool
    lookup_pool.shutdown()


def handlers_for(store, pool, metrics=None, **options):
    return AdmissionHandlers(mutators=savepoint_mutators(PROFILES, store, executor=pool, metrics=metrics, **options))


async def mutate(handlers, obj, operation="CREATE", old=None, dry_run=False):
    review = admission_review(obj, operation, old=old, dry_run=dry_run)
    admission = parse_review(json.dumps(review).encode())
    return complete(admission, await handlers.mutate(admission))


def lookups(metrics, outcome):
    return metrics.registry.get_sample_value("failover_relay_savepoint_lookups_total", {"outcome": outcome}) or 0


async def test_create_gets_the_newest_completed_checkpoint(tmp_path, pool):
    directory = checkpoint_tree(tmp_path, 5, 6, in_progress=(7,))
    metrics = AdmissionMetrics()
    response = await mutate(handlers_for(open_store(str(tmp_path)), pool, metrics), flink_deployment())
    assert response["allowed"]
    job = jsonpatch.apply_patch(flink_deployment(), decoded_patch(response))["spec"]["job"]
    assert job["initialSavepointPath"] == f"{directory}/chk-6"
    assert job["upgradeMode"] == "stateless" and "state" not in job  # no directories configured: left alone
    assert response["auditAnnotations"]["savepoint-outcome"] == "found"
    assert lookups(metrics, "found") == 1


async def test_update_resync_keeps_what_create_set(tmp_path, pool):
    checkpoint_tree(tmp_path, 1)
    handlers = handlers_for(open_store(str(tmp_path)), pool)
    created = jsonpatch.apply_patch(flink_deployment(), decoded_patch(await mutate(handlers, flink_deployment())))
    checkpoint_tree(tmp_path / "later", 1)  # unrelated; the path must come from the old object, not a new lookup
    resynced = flink_deployment()
    response = await mutate(handlers, resynced, "UPDATE", old=created)
    assert jsonpatch.apply_patch(resynced, decoded_patch(response)) == created
    # the object already carrying everything gets no patch
    response = await mutate(handlers, created, "UPDATE", old=created)
    assert "patch" not in response and response["allowed"]


async def test_dry_run_is_answered_the_same_way(tmp_path, pool):
    checkpoint_tree(tmp_path, 3)
    handlers = handlers_for(open_store(str(tmp_path)), pool)
    real = await mutate(handlers, flink_deployment())
    dry = await mutate(handlers, flink_deployment(), dry_run=True)
    real.pop("uid"), dry.pop("uid")
    assert dry == real


async def test_object_without_the_label_is_left_alone(tmp_path, pool):
    checkpoint_tree(tmp_path, 3)
    metrics = AdmissionMetrics()
    response = await mutate(handlers_for(open_store(str(tmp_path)), pool, metrics), flink_deployment(job_id=None))
    assert response["allowed"] and "patch" not in response and "warnings" not in response
    assert lookups(metrics, "found") == lookups(metrics, "not-found") == 0


@pytest.mark.parametrize("value", ["../../etc", "a" * 63, JOB.upper()])
async def test_bad_label_is_refused_without_touching_storage(tmp_path, pool, value):
    checkpoint_tree(tmp_path, 3)
    metrics = AdmissionMetrics()
    obj = flink_deployment(job_id=value)
    response = await mutate(handlers_for(open_store(str(tmp_path)), pool, metrics), obj)
    assert response["allowed"] and "patch" not in response
    assert "is not a Flink JobID" in response["warnings"][0]
    assert response["auditAnnotations"]["savepoint-outcome"] == "invalid-job-id"
    assert lookups(metrics, "invalid-job-id") == 1
    closed = await mutate(handlers_for(open_store(str(tmp_path)), pool, failure_mode="closed"), obj)
    assert not closed["allowed"]
    assert closed["status"]["message"].startswith(f"metadata.labels[{LABEL}]")


async def test_missing_checkpoint_fails_open_or_closed(tmp_path, pool):
    checkpoint_tree(tmp_path, in_progress=(1,))
    metrics = AdmissionMetrics()
    response = await mutate(handlers_for(open_store(str(tmp_path)), pool, metrics), flink_deployment())
    assert response["allowed"] and "patch" not in response
    assert "no completed checkpoint" in response["warnings"][0]
    assert response["auditAnnotations"]["savepoint-outcome"] == "not-found"
    assert lookups(metrics, "not-found") == 1
    closed = await mutate(handlers_for(open_store(str(tmp_path)), pool, failure_mode="closed"), flink_deployment())
    assert not closed["allowed"] and "no completed checkpoint" in closed["status"]["message"]


async def test_absent_storage_root_is_a_storage_error(tmp_path, pool):
    metrics = AdmissionMetrics()
    response = await mutate(handlers_for(open_store(str(tmp_path / "unmounted")), pool, metrics), flink_deployment())
    assert response["allowed"] and "does not exist" in response["warnings"][0]
    assert lookups(metrics, "storage-error") == 1


class HangingFileSystem:
    """A storage that accepts the request and never answers (until the test lets it go)."""

    def __init__(self):
        self.release = threading.Event()
        self.calls = 0

    def ls(self, path, detail=True, **kwargs):
        self.calls += 1
        self.release.wait(10)
        raise FileNotFoundError(path)

    info = ls


@pytest.mark.parametrize("mode", ["open", "closed"])
async def test_hanging_storage_is_answered_within_the_deadline(pool, mode):
    fs = HangingFileSystem()
    metrics = AdmissionMetrics()
    handlers = handlers_for(CheckpointStore(fs, "ckpt", "s3://ckpt"), pool, metrics, deadline=0.2, failure_mode=mode)
    started = time.monotonic()
    try:
        responses = await asyncio.gather(*(mutate(handlers, flink_deployment()) for _ in range(5)))
    finally:
        fs.release.set()
    assert time.monotonic() - started < 1.5
    assert fs.calls == 1  # concurrent admissions of one job share one lookup
    for response in responses:
        if mode == "open":
            assert response["allowed"] and "timed out after 0.2s" in response["warnings"][0]
        else:
            assert not response["allowed"] and "timed out after 0.2s" in response["status"]["message"]
        assert response["auditAnnotations"]["savepoint-outcome"] == "timeout"
    assert lookups(metrics, "timeout") == 5


async def test_a_lookup_that_overruns_its_deadline_says_afterwards_what_it_ended_with(pool):
    fs = HangingFileSystem()
    mutator = SavepointMutator(
        PROFILES[FLINK_DEPLOYMENT], CheckpointStore(fs, "ckpt", "s3://ckpt"), executor=pool, deadline=0.2
    )
    with structlog.testing.capture_logs() as logs:
        decided = await mutator.decide(flink_deployment(), "CREATE", None, "flink")
        assert decided.outcome == "timeout"
        fs.release.set()
        async with asyncio.timeout(5):
            [ended] = await mutator.overrun()
    assert ended.outcome.value == "storage-error"  # HangingFileSystem raises FileNotFoundError from ls
    [overran] = [log for log in logs if log["event"] == "savepoint_lookup_overran"]
    assert overran["job_id"] == JOB and overran["outcome"] == "storage-error" and overran["seconds"] > 0.2
    assert await mutator.overrun() == [], "nothing left running"


class CountingFileSystem:
    def __init__(self, fs):
        self.fs = fs
        self.calls = 0

    def ls(self, path, detail=True, **kwargs):
        self.calls += 1
        return self.fs.ls(path, detail=detail, **kwargs)

    def info(self, path, **kwargs):
        self.calls += 1
        return self.fs.info(path, **kwargs)


async def test_repeated_admissions_are_served_from_the_cache_until_it_expires(tmp_path, pool):
    checkpoint_tree(tmp_path, 2)
    local = open_store(str(tmp_path))
    fs = CountingFileSystem(local.fs)
    now = [100.0]
    mutator = SavepointMutator(
        PROFILES[FLINK_DEPLOYMENT],
        CheckpointStore(fs, local.fs_root, local.url_root),
        executor=pool,
        cache=__import__("failover.state.checkpoints").state.checkpoints.LookupCache(10),
        clock=lambda: now[0],
    )
    handlers = AdmissionHandlers(mutators={FLINK_DEPLOYMENT: mutator})
    with structlog.testing.capture_logs() as logs:
        first = await mutate(handlers, flink_deployment())
        calls = fs.calls
        assert await mutate(handlers, flink_deployment(name="x")) is not None
        second = await mutate(handlers, flink_deployment())
    assert fs.calls == calls and decoded_patch(second) == decoded_patch(first)
    # Only the lookup that reached the storage has its own line; the review's line carries the cached outcome.
    assert [(log["event"], log["cached"]) for log in logs] == [("savepoint_lookup", False)]
    now[0] += 10
    await mutate(handlers, flink_deployment())
    assert fs.calls > calls


async def test_other_versions_of_the_kind_are_not_touched(tmp_path, pool):
    checkpoint_tree(tmp_path, 2)
    review = admission_review(flink_deployment())
    review["request"]["kind"]["version"] = "v1beta2"
    admission = parse_review(json.dumps(review).encode())
    response = complete(admission, await handlers_for(open_store(str(tmp_path)), pool).mutate(admission))
    assert response["allowed"] and "patch" not in response


async def test_mutation_over_real_tls_through_the_relay_server(tmp_path):
    checkpoint_tree(tmp_path / "ckpt", 11, 12, in_progress=(13,))
    settings = Settings(
        port=0,
        cert_dir=tmp_path / "certs",
        savepoint=SavepointSettings(checkpoint_root=f"file://{tmp_path / 'ckpt'}", layouts=(KARMADA_EXAMPLE_LAYOUT,)),
    )
    relay = RelayServer(settings)
    await relay.start()
    try:
        async with aiohttp.ClientSession() as session:
            async with session.post(
                f"{relay.url}/mutate", json=admission_review(flink_deployment()), ssl=client_tls(relay.files.ca_file)
            ) as http:
                assert http.status == 200
                response = (await http.json())["response"]
            async with session.get(f"{relay.url}/metrics", ssl=client_tls(relay.files.ca_file)) as http:
                exposition = await http.text()
    finally:
        await relay.stop()
    patched = jsonpatch.apply_patch(flink_deployment(), decoded_patch(response))
    assert patched["spec"]["job"]["initialSavepointPath"] == f"file://{tmp_path}/ckpt/flink/{JOB}/checkpoints/chk-12"
    assert 'failover_relay_savepoint_lookups_total{outcome="found"} 1.0' in exposition
