"""A second failover in a row keeps the first job's state (Karmada #6232): the copy that replaced the failed job
never became healthy and runs another job, so its job id must not travel on (../shared/reference/real-karmada.md,
scenario d). Karmada alone preserves the broken copy's id (applicationfailover/common.go buildTaskOptions reads the
evicted cluster's aggregatedStatus; binding/common.go injectReservedLabelState uses only the last task)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from failover.core.api import DEFAULT_JOB_ID_LABEL
from tests.karmada.workloads import FlinkJob, new_job_id, restore_path
from tests.karmada_env import KarmadaEnv
from tests.reporting import report

pytestmark = pytest.mark.karmada

TOLERATION_SECONDS = 10
FAILOVER_TIMEOUT_SECONDS = TOLERATION_SECONDS + 50
# The relay reads a restoring copy's checkpoint storage every 10 s (controllers/reconcilers/restore_watch.py): the new
# job runs this long, so the relay has read its reports and its storage more than once before it fails.
RUNS_SECONDS = 12
# How operator 1.16 reports a job that failed for good: the lifecycle FAILED, the error Flink gave (Karmada #6232's),
# the job redeploying, which Karmada's FlinkDeployment health interpreter calls Unhealthy (a bare jobStatus FAILED it
# calls healthy, as it does every terminal state).
TERMINAL_FAILURE = "org.apache.flink.runtime.JobException: Recovery is suppressed by NoRestartBackoffTimeStrategy"


@pytest.fixture
def no_restore_grace(karmada_env: KarmadaEnv):
    """The broken copy is failed over after tolerationSeconds, not after the default restore grace (5 minutes),
    which tests/karmada/test_never_none.py covers."""
    karmada_env.restart_relay({"controllers": {"restoreGraceSeconds": 0}})
    yield
    karmada_env.restart_relay()


def failed_over_once(job: FlinkJob) -> tuple[str, str, Path, str]:
    """A stateful job with completed checkpoints 7 and 8 that failed over once: (its first member, its job id, its
    checkpoint directory, the member it moved to)."""
    first, job_id = job.start_stateful(TOLERATION_SECONDS)
    checkpoints = job.write_checkpoints(job_id, completed=(7, 8))
    job.report_unhealthy(first, job_id)
    second, _ = job.wait_restored_outside(first, timeout=FAILOVER_TIMEOUT_SECONDS)
    return first, job_id, checkpoints, second


def test_second_failover_restores_the_first_job(
    karmada_env: KarmadaEnv, namespace: str, no_restore_grace: None, request: pytest.FixtureRequest
) -> None:
    env = karmada_env
    job = FlinkJob(env, namespace)
    first, job_id, checkpoints, second = failed_over_once(job)

    # The restarted job never gets healthy, and it is another job (a fresh job id), as when a restore fails.
    broken_job_id = new_job_id()
    job.report_unhealthy(second, broken_job_id)
    env.wait_until(lambda: job.health(second) == "Unhealthy", 30, f"{second} Unhealthy")
    started = time.monotonic()
    third, restored = job.wait_restored_outside(first, second, timeout=FAILOVER_TIMEOUT_SECONDS)
    seconds = time.monotonic() - started

    assert restored["metadata"]["labels"][DEFAULT_JOB_ID_LABEL] == job_id
    assert restore_path(restored) == checkpoints / "chk-8"
    tasks = {task["fromCluster"]: task for task in job.eviction_tasks()}
    assert tasks[second]["preservedLabelState"] == {DEFAULT_JOB_ID_LABEL: job_id}
    report(
        request, "karmada", f"second failover {second} -> {third} in {seconds:.1f} s restored the first job from chk-8"
    )


def test_a_failover_before_the_new_job_checkpoints_restores_the_carried_state(
    karmada_env: KarmadaEnv, namespace: str, request: pytest.FixtureRequest
) -> None:
    """Restored means checkpointed. The first move's new copy runs (Healthy, a job id of its own) but its first
    checkpoint is slow (after a NO_CLAIM restore Flink 2.x takes a full one; recovering large in-flight state can take
    hours, FLIP-547), and the job fails for good before it completes. The second failover must restore the state the
    first move carried: the new job id has nothing to restore from. The terminal failure ends the restore grace at
    once (the default restoreGraceSeconds, 300 s, holds only a copy that is still restoring)."""
    env = karmada_env
    job = FlinkJob(env, namespace)
    first, job_id, checkpoints, second = failed_over_once(job)
    new_job = new_job_id()
    job.run_healthy(second, new_job)
    job.write_checkpoints(new_job, completed=(), incomplete=(1,))  # its first checkpoint, in progress
    time.sleep(RUNS_SECONDS)

    job.report(second, "RECONCILING", new_job, TERMINAL_FAILURE, lifecycle="FAILED")
    started = time.monotonic()
    # The first move's task ended when the new copy was healthy, so the scheduler may pick the first member again.
    third, restored = job.wait_restored_outside(second, timeout=FAILOVER_TIMEOUT_SECONDS)
    seconds = time.monotonic() - started

    assert restored["metadata"]["labels"][DEFAULT_JOB_ID_LABEL] == job_id
    assert restore_path(restored) == checkpoints / "chk-8"
    report(
        request,
        "karmada",
        f"a failover {first} -> {second} -> {third} before the new job's first checkpoint, {seconds:.1f} s after its"
        f" terminal failure (toleration {TOLERATION_SECONDS} s, restore grace ended by it): restored the carried"
        " state, chk-8 of the first job",
    )
