"""The mission, against Karmada's own scheduler and controllers: a FlinkDeployment with a single-cluster placement and
a stateful application-failover policy fails over, and the copy Karmada creates in the new member restarts from the
newest completed checkpoint of the failed job (../shared/reference/real-karmada.md, scenario a). The job is real
(issue 26, tests/karmada/records.py): its JobManager dies (kill -9 of its MiniCluster) and the operator reports the
copy failing; the new copy's job restores from the path the relay injected, and the records are checked."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from failover.core.api import DEFAULT_JOB_ID_LABEL
from tests.flink_job import Probe, RunningJob
from tests.karmada.records import (
    FLINK_CONFIGURATION,
    FLINK_VERSION,
    KEYS,
    RATE,
    check_records,
    kill_at_any_moment,
    newest_completed,
)
from tests.karmada.workloads import FlinkJob, restore_path, stateful_policy
from tests.karmada_env import KarmadaEnv
from tests.reporting import report

pytestmark = pytest.mark.karmada

TOLERATION_SECONDS = 10
# Toleration, then Karmada's binding controller requeues a Directly purge every 5 s until the old Work is gone
# (binding/common.go requeueIntervalForDirectlyPurge), then the Work reaches the member: about 15 s, measured.
FAILOVER_TIMEOUT_SECONDS = TOLERATION_SECONDS + 50


def test_flink_job_fails_over_with_its_job_id_and_newest_completed_checkpoint(
    karmada_env: KarmadaEnv,
    namespace: str,
    request: pytest.FixtureRequest,
    flink_probes: Path,
    flink_jobs: list[RunningJob],
    tmp_path: Path,
) -> None:
    env = karmada_env
    probe = Probe.of(flink_probes, FLINK_VERSION)
    job = FlinkJob(env, namespace)
    job.create(
        stateful_policy("flink", namespace, job.name, env.members, toleration_seconds=TOLERATION_SECONDS),
        flink_configuration=FLINK_CONFIGURATION,
    )
    first = job.wait_placed()
    flink_jobs.append(old := job.run_flink(first, probe, tmp_path / "old", KEYS, RATE))
    job_id = old.job_id
    env.wait_until(lambda: len(old.completed()) >= 2, 60, "two checkpoints of the job completed")

    killed_at = kill_at_any_moment(old)  # the JobManager dies (OutOfMemoryError), its job with it
    job.report_unhealthy(first, job_id)  # and the operator says so
    unhealthy_at = time.monotonic()
    checkpoint = newest_completed(job.state_dir / job_id)

    second, restored = job.wait_restored_outside(first, timeout=FAILOVER_TIMEOUT_SECONDS)
    seconds = time.monotonic() - unhealthy_at

    assert restored["metadata"]["labels"][DEFAULT_JOB_ID_LABEL] == job_id
    assert restore_path(restored) == checkpoint
    assert restored["spec"]["job"]["upgradeMode"] == "savepoint"
    # Karmada's own record of the failover: the task from the failed member, with the state it preserved.
    [task] = job.eviction_tasks()
    assert task["fromCluster"] == first
    assert task["purgeMode"] == "Directly"
    assert task["preservedLabelState"] == {DEFAULT_JOB_ID_LABEL: job_id}
    # The Work Karmada wrote for the new member carries the same restore state the member got.
    work_manifest = job.work(second)["spec"]["workload"]["manifests"][0]
    assert restore_path(work_manifest) == checkpoint
    flink_jobs.append(new := job.run_flink(second, probe, tmp_path / "new", KEYS, RATE))
    running_seconds = new.arrived["running"][0] - unhealthy_at
    # purgeMode Directly: Karmada removes the old copy.
    env.wait_until(lambda: job.copy_in(first) is None, 30, f"the copy in {first} deleted")
    assert job.work(first) is None
    report(
        request,
        "karmada",
        f"failover {first} -> {second}: unhealthy to new copy with restore path in "
        f"{seconds:.1f} s (tolerationSeconds {TOLERATION_SECONDS})",
    )
    recovery = check_records(old, new, checkpoint, killed_at)
    report(
        request,
        "karmada",
        recovery.line(
            f"failover {first} -> {second}", "the unhealthy report", running_seconds, running_seconds - seconds
        ),
    )
