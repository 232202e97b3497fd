"""A second failover in a row keeps the first job's state (Karmada #6232): the copy that replaced the failed job
never became healthy and runs another job, so its job id must not travel on (../shared/reference/real-karmada.md,
scenario d). Karmada alone preserves the broken copy's id (applicationfailover/common.go buildTaskOptions reads the
evicted cluster's aggregatedStatus; binding/common.go injectReservedLabelState uses only the last task)."""

from __future__ import annotations

import time

import pytest

from failover.core.api import DEFAULT_JOB_ID_LABEL
from tests.karmada.workloads import FlinkJob, new_job_id, restore_path
from tests.karmada_env import KarmadaEnv
from tests.reporting import report

pytestmark = pytest.mark.karmada

TOLERATION_SECONDS = 10
FAILOVER_TIMEOUT_SECONDS = TOLERATION_SECONDS + 50


@pytest.fixture
def no_restore_grace(karmada_env: KarmadaEnv):
    """The broken copy is failed over after tolerationSeconds, not after the default restore grace (5 minutes),
    which tests/karmada/test_never_none.py covers."""
    karmada_env.restart_relay({"controllers": {"restoreGraceSeconds": 0}})
    yield
    karmada_env.restart_relay()


def test_second_failover_restores_the_first_job(
    karmada_env: KarmadaEnv, namespace: str, no_restore_grace: None, request: pytest.FixtureRequest
) -> None:
    env = karmada_env
    job = FlinkJob(env, namespace)
    first, job_id = job.start_stateful(TOLERATION_SECONDS)
    checkpoints = job.write_checkpoints(job_id, completed=(7, 8))

    job.report_unhealthy(first, job_id)
    second, _ = job.wait_restored_outside(first, timeout=FAILOVER_TIMEOUT_SECONDS)

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
