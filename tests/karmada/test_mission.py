"""The mission, against Karmada's own scheduler and controllers: a FlinkDeployment with a single-cluster placement and
a stateful application-failover policy fails over, and the copy Karmada creates in the new member restarts from the
newest completed checkpoint of the failed job (../shared/reference/real-karmada.md, scenario a)."""

from __future__ import annotations

import time

import pytest

from failover.core.api import DEFAULT_JOB_ID_LABEL
from tests.karmada.workloads import FlinkJob, restore_path
from tests.karmada_env import KarmadaEnv
from tests.support import report

pytestmark = pytest.mark.karmada

TOLERATION_SECONDS = 10
# Toleration, then Karmada's binding controller requeues a Directly purge every 5 s until the old Work is gone
# (binding/common.go requeueIntervalForDirectlyPurge), then the Work reaches the member: about 15 s, measured.
FAILOVER_TIMEOUT_SECONDS = TOLERATION_SECONDS + 50


def test_flink_job_fails_over_with_its_job_id_and_newest_completed_checkpoint(
    karmada_env: KarmadaEnv, namespace: str, request: pytest.FixtureRequest
) -> None:
    env = karmada_env
    job = FlinkJob(env, namespace)
    first, job_id = job.start_stateful(TOLERATION_SECONDS)
    checkpoints = job.write_checkpoints(job_id, completed=(1, 2), incomplete=(3,))

    job.report_unhealthy(first, job_id)
    unhealthy_at = time.monotonic()

    second, restored = job.wait_restored_outside(first, timeout=FAILOVER_TIMEOUT_SECONDS)
    seconds = time.monotonic() - unhealthy_at

    assert restored["metadata"]["labels"][DEFAULT_JOB_ID_LABEL] == job_id
    assert restore_path(restored) == checkpoints / "chk-2"
    assert restored["spec"]["job"]["upgradeMode"] == "savepoint"
    # Karmada's own record of the failover: the task from the failed member, with the state it preserved.
    [task] = job.eviction_tasks()
    assert task["fromCluster"] == first
    assert task["purgeMode"] == "Directly"
    assert task["preservedLabelState"] == {DEFAULT_JOB_ID_LABEL: job_id}
    # The Work Karmada wrote for the new member carries the same restore state the member got.
    work_manifest = job.work(second)["spec"]["workload"]["manifests"][0]
    assert restore_path(work_manifest) == checkpoints / "chk-2"
    # purgeMode Directly: Karmada removes the old copy.
    env.wait_until(lambda: job.copy_in(first) is None, 30, f"the copy in {first} deleted")
    assert job.work(first) is None
    report(
        request,
        "karmada",
        f"failover {first} -> {second}: unhealthy to new copy with restore path in "
        f"{seconds:.1f} s (tolerationSeconds {TOLERATION_SECONDS})",
    )
