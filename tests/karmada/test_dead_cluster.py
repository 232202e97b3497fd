"""A whole member cluster dies (its kube-apiserver really stopped): the Flink job comes back on another cluster,
restored from its newest completed checkpoint, within two minutes of the first failed health probe; when the dead
cluster returns, its stale copy is deleted within seconds. The job is real, so the records can prove the restore: each
copy runs the keyed-counter job of flink-probe/ in a MiniCluster started from the copy's own spec, and its real job id
and RUNNING are reported into the copy's status; the old one is killed (-9) with its member's apiserver, as on a dead
node. The records decide: the new job goes on from the restored checkpoint's counts, no record is lost, and what is
counted twice is what the old job counted after that checkpoint, less than one checkpoint interval.

Settings (docs/operations.md "Cluster failover and a dead cluster"): karmada-controller-manager
`--feature-gates=Failover=true --enable-no-execute-taint-eviction=false --cluster-status-update-frequency=10s` and the
default `--cluster-failure-threshold=30s`; a ClusterTaintPolicy tainting a not-Ready cluster NoExecute; the relay's
defaults (`fencing: notReady`, `fenceAfterSeconds: 60`). No StatefulFailoverInjection gate.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from failover.core.api import DEFAULT_JOB_ID_LABEL
from failover.state.history import CLUSTER_FAILOVER, DEAD_CLUSTER_RETURN, read_history
from tests.flink_job import Probe, RunningJob
from tests.karmada.outages import (
    CLUSTER_JOB_ID_LABEL,
    CopyWatch,
    cluster_ready,
    events_of,
    grant_fencing_in_members,
    recorded_state,
    stateful_cluster_policy,
    taint_not_ready_clusters,
)
from tests.karmada.records import (
    FLINK_CONFIGURATION,
    FLINK_VERSION,
    KEYS,
    RATE,
    check_records,
    kill_at_any_moment,
    newest_completed,
)
from tests.karmada.workloads import FlinkJob, restore_path
from tests.karmada_env import KarmadaEnv
from tests.reporting import report

pytestmark = pytest.mark.karmada

# Karmada: 30 s failure threshold (+ up to one 10 s status round); the relay: 60 s fence. Target 120 s.
BACK_WITH_STATE_SECONDS = 120
STALE_COPY_SECONDS = 15  # after the member's apiserver answers again (the relay tries every 5 s)


def test_a_dead_cluster_s_job_comes_back_elsewhere_with_its_state_and_its_stale_copy_goes_on_return(
    karmada_env: KarmadaEnv,
    namespace: str,
    request: pytest.FixtureRequest,
    flink_probes: Path,
    flink_jobs: list[RunningJob],
    tmp_path: Path,
) -> None:
    env = karmada_env
    probe = Probe.of(flink_probes, FLINK_VERSION)
    grant_fencing_in_members(env)
    job = FlinkJob(env, namespace)
    job.create(
        stateful_cluster_policy("flink", namespace, job.name, env.members, toleration_seconds=300),
        flink_configuration=FLINK_CONFIGURATION,
    )
    first = job.wait_placed()
    flink_jobs.append(old := job.run_flink(first, probe, tmp_path / "old", KEYS, RATE))
    job_id = old.job_id
    env.wait_until(lambda: len(old.completed()) >= 2, 60, "two checkpoints of the job completed")
    env.wait_until(lambda: job_id in recorded_state(job), 30, "the relay's record of the last healthy state")

    with taint_not_ready_clusters(env), CopyWatch(job) as watch:
        killed_at = kill_at_any_moment(old)  # the node dies: its job with it, then its apiserver
        env.stop_member(first)
        stopped_at = time.monotonic()  # the next health probe of the member fails
        restorable = newest_completed(job.state_dir / job_id)

        # NotReady (the failure threshold and status rounds), then the brake's window (30 s).
        task = env.wait_until(lambda: next(iter(job.eviction_tasks()), None), 150, "the relay's eviction task")
        task_seconds = time.monotonic() - stopped_at

        second, copy = job.wait_restored_outside(first, timeout=BACK_WITH_STATE_SECONDS + 60)
        back_seconds = time.monotonic() - stopped_at

        # The relay's task, as the taint manager writes it (the producer Karmada's controllers key on), with the
        # state in the same write: the first version of the task seen carries it.
        assert task["producer"] == "TaintManager" and task["reason"] == "TaintUntolerated"
        assert task["fromCluster"] == first and task["purgeMode"] == "Directly"
        assert task.get("preservedLabelState") == {CLUSTER_JOB_ID_LABEL: job_id}
        assert copy["metadata"]["labels"][CLUSTER_JOB_ID_LABEL] == job_id
        assert restore_path(copy) == restorable
        assert copy["spec"]["job"]["upgradeMode"] == "savepoint"
        assert events_of(env, job.namespace, "ClusterFenced"), "the fencing is visible as an event"
        assert back_seconds < BACK_WITH_STATE_SECONDS, f"back with state after {back_seconds:.1f} s"
        flink_jobs.append(new := job.run_flink(second, probe, tmp_path / "new", KEYS, RATE))
        running_seconds = new.arrived["running"][0] - stopped_at

        env.start_member(first)
        answering_at = time.monotonic()
        env.wait_until(lambda: job.copy_in(first) is None, 90, f"the stale copy in {first} deleted")
        stale_seconds = time.monotonic() - answering_at
        ready_lag = env.wait_until(
            lambda: cluster_ready(env, first) and time.monotonic() - answering_at, 120, f"{first} Ready again"
        )
        assert job.copy_in(second) is not None and job.placed_on() == [second]
        # The history on the binding tells both moves: the cluster failover, and the stale copy deleted on return.
        moves = env.wait_until(
            lambda: (m := read_history(job.binding() or {}).moves) and len(m) >= 2 and m,
            30,
            "the failover history with the return",
        )
        assert [(m.kind, m.from_cluster) for m in moves] == [(CLUSTER_FAILOVER, first), (DEAD_CLUSTER_RETURN, first)]
        assert moves[0].to == (second,) and moves[0].job_id == job_id

    assert stale_seconds < STALE_COPY_SECONDS, f"stale copy removed {stale_seconds:.1f} s after the member answered"
    # Never two copies where both could be seen (the dead member cannot be sampled while it is down).
    assert [members for _, members in watch.overlaps if first not in members] == []

    recovery = check_records(old, new, restorable, killed_at)
    report(
        request,
        "karmada",
        f"dead cluster {first}: eviction task {task_seconds:.1f} s, back on {second} "
        f"with label and restore path {back_seconds:.1f} s after the apiserver stopped "
        f"(failure threshold 30 s, fenceAfterSeconds 60)",
    )
    report(
        request,
        "karmada",
        f"split brain on return: stale copy in {first} deleted {stale_seconds:.1f} s after its "
        f"apiserver answered again; Karmada reported it Ready after {ready_lag:.1f} s",
    )
    report(
        request,
        "karmada",
        recovery.line(f"dead cluster {first}", "the member's stop", running_seconds, running_seconds - back_seconds),
    )
    assert (
        DEFAULT_JOB_ID_LABEL not in copy["metadata"]["labels"]
        or copy["metadata"]["labels"][DEFAULT_JOB_ID_LABEL] == job_id
    )
