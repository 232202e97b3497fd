"""A restore through real Karmada after the Flink operator rotated the job id (operator 1.10+, FLINK-35831): the id
Karmada preserves is the current run's, not the one the previous run checkpointed under. That run's newest state is
the savepoint the operator took when Karmada deleted the failed copy (`kubernetes.operator.job.savepoint-on-deletion`),
in the savepoint directory its flinkConfiguration names, newer than its own early checkpoint: the copy Karmada
creates in the new member must restart from that savepoint, chosen by completion time (docs/restore.md)."""

from __future__ import annotations

import os
import time

import pytest

from failover.core.api import DEFAULT_JOB_ID_LABEL
from failover.state.history import read_history
from failover.state.restore import PREVIOUS_JOB_ID
from failover.state.savepoint import AUDIT_FALLBACK, PREVIOUS_JOB_IDS_ANNOTATION
from tests.karmada.workloads import FlinkJob, new_job_id, stateful_policy
from tests.karmada_env import KarmadaEnv
from tests.reporting import report

pytestmark = pytest.mark.karmada

TOLERATION_SECONDS = 10
FAILOVER_TIMEOUT_SECONDS = TOLERATION_SECONDS + 50


def test_a_rotated_job_id_restores_from_its_newest_state(
    karmada_env: KarmadaEnv, namespace: str, request: pytest.FixtureRequest
) -> None:
    env = karmada_env
    job = FlinkJob(env, namespace)
    job.create(stateful_policy("flink", namespace, job.name, env.members, toleration_seconds=TOLERATION_SECONDS))
    first = job.wait_placed()
    state_dir = job.state_dir  # the workload's state.checkpoints.dir

    # The first run checkpointed; then an upgrade started a second run under a new job id (the operator writes it to
    # status before submitting), which failed soon after.
    first_run = new_job_id()
    job.run_healthy(first, first_run)
    job.write_checkpoints(first_run, completed=(40, 41))
    rotated = new_job_id()
    job.run_healthy(first, rotated)
    job.write_checkpoints(rotated, completed=(1,))  # one early checkpoint of the rotated run, older than its savepoint
    # The operator's savepoint on deletion of the failed copy: the rotated run's own, the newest state there is.
    savepoint = state_dir / "savepoints" / f"savepoint-{rotated[:6]}-{os.urandom(6).hex()}"
    savepoint.mkdir(parents=True)
    (savepoint / "_metadata").write_bytes(b"flink savepoint metadata")
    older = time.time() - 60
    for run in (first_run, rotated):
        for chk in (state_dir / run).rglob("_metadata"):
            os.utime(chk, (older, older))

    job.report_unhealthy(first, rotated)
    unhealthy_at = time.monotonic()

    second, restored = job.wait_restored_outside(first, timeout=FAILOVER_TIMEOUT_SECONDS)
    seconds = time.monotonic() - unhealthy_at

    assert restored["metadata"]["labels"][DEFAULT_JOB_ID_LABEL] == rotated
    assert restored["spec"]["job"]["initialSavepointPath"] == f"file://{savepoint}"
    assert restored["spec"]["job"]["upgradeMode"] == "savepoint"  # both directories are configured
    assert "state" not in restored["spec"]["job"] or restored["spec"]["job"]["state"] == "running"
    report(
        request,
        "karmada",
        f"rotated job id: failover {first} -> {second} restored the savepoint on deletion in {seconds:.1f} s",
    )


def test_a_rotated_job_id_without_state_restores_from_the_previous_job_id(
    karmada_env: KarmadaEnv, namespace: str, request: pytest.FixtureRequest
) -> None:
    """The rotated run failed before it wrote any state, and the operator took no savepoint: the job id Karmada
    preserves has nothing to restore. The loop saw the earlier run's job id in the binding's reflected status
    (failover/state/history.py), the Work mutator put it on the new copy as failover-relay.io/previous-job-ids, and the
    restore falls back to that run's newest checkpoint, naming the fallback in the audit annotation."""
    env = karmada_env
    job = FlinkJob(env, namespace)
    first, first_run = job.start_stateful(TOLERATION_SECONDS)
    newest = job.write_checkpoints(first_run, completed=(40, 41)) / "chk-41"
    env.wait_until(
        lambda: first_run in [run.job_id for run in read_history(job.binding() or {}).runs],
        30,
        "the loop recorded the first run in the binding's history",
    )

    rotated = new_job_id()  # the operator wrote the new id to the status; the job failed before any checkpoint
    job.report_unhealthy(first, rotated)
    unhealthy_at = time.monotonic()
    second, restored = job.wait_restored_outside(first, timeout=FAILOVER_TIMEOUT_SECONDS)
    seconds = time.monotonic() - unhealthy_at

    assert restored["metadata"]["labels"][DEFAULT_JOB_ID_LABEL] == rotated
    assert restored["metadata"]["annotations"][PREVIOUS_JOB_IDS_ANNOTATION] == first_run
    assert restored["spec"]["job"]["initialSavepointPath"] == f"file://{newest}"
    fallbacks = [
        value
        for annotations in env.audit_annotations(f"karmada-es-{second}")
        for key, value in annotations.items()
        if key.endswith(f"/{AUDIT_FALLBACK}-0")
    ]
    assert fallbacks and set(fallbacks) == {PREVIOUS_JOB_ID}
    move = env.wait_until(
        lambda: next((m for m in read_history(job.binding() or {}).moves if m.restore), None),
        30,
        "the history's move with the restore path",
    )
    assert (move.from_cluster, move.to, move.job_id, move.restore) == (first, (second,), rotated, f"file://{newest}")
    report(
        request,
        "karmada",
        f"rotated job id without state: failover {first} -> {second} restored the previous "
        f"job id's checkpoint in {seconds:.1f} s",
    )
