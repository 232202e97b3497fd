"""A Pull-mode member (`karmada-agent`) dies, agent and apiserver: the Flink job comes back on another cluster with its
state, and when the member and its agent return, the stale copy is gone within seconds while the new one is never
touched. The control plane cannot reach the member's apiserver (its Cluster names an address no host answers), so
Karmada's cluster proxy cannot delete anything there: the relay hands the old Work to the agent instead
(failover/fence/old_copy.py), and the returning agent deletes the copy itself. The second test partitions the
agent from karmada-apiserver instead, with the storage fence on: the old copy is suspended before the new one starts,
the target for a partitioned Pull member whose storage stays reachable.

The Pull member is started by this module's fixture only (`KarmadaEnv.start_pull_member`, about 16 s) and stopped
after it; no policy of the other tests names it. Settings as tests/karmada/test_dead_cluster.py's (the relay's
defaults: `fencing: notReady`, `fenceAfterSeconds: 60`; the ClusterTaintPolicy of docs/operations.md); a Pull
cluster turns NotReady when its agent stops renewing its Lease (karmada-controller-manager
`--cluster-monitor-grace-period`, 40 s by default).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.flink_job import Probe, RunningJob
from tests.karmada.operator import FlinkOperator
from tests.karmada.outages import (
    CLUSTER_JOB_ID_LABEL,
    SAVEPOINT_JOB,
    CopyWatch,
    cluster_ready,
    events_of,
    fence_files,
    prefer_home,
    recorded_state,
    stateful_cluster_policy,
    taint_not_ready_clusters,
)
from tests.karmada.records import FLINK_CONFIGURATION, FLINK_VERSION, KEYS, RATE, kill_at_any_moment, newest_completed
from tests.karmada.workloads import FlinkJob, new_job_id, relay_status, restore_path
from tests.karmada_env import KarmadaEnv
from tests.reporting import report

pytestmark = pytest.mark.karmada

# The targets for a dead Pull member: the new copy with its state at most this long after the agent stopped, and the
# stale copy gone at most this long after the agent started again.
BACK_WITH_STATE_SECONDS = 120
STALE_COPY_SECONDS = 10
UNTOUCHED_SECONDS = 15  # the new copy watched after the stale one went
# The targets for a partition with the storage fence: the new copy with its state at most this long after NotReady, at
# least this long after the old copy's suspension.
MOVE_TARGET_SECONDS = 60
MARGIN_TARGET_SECONDS = 2
NOT_READY_SECONDS = 120  # --cluster-monitor-grace-period (40 s) and a loaded machine


@pytest.fixture(scope="module")
def pull_member(karmada_env: KarmadaEnv, request: pytest.FixtureRequest) -> Iterator[str]:
    """member4, registered by karmada-agent in Pull mode, for this module only."""
    seconds = karmada_env.start_pull_member()
    report(
        request, "karmada", f"Pull member {karmada_env.pull_members[-1]} registered by karmada-agent in {seconds:.1f} s"
    )
    try:
        yield karmada_env.pull_members[-1]
    finally:
        karmada_env.stop_pull_member()


def test_a_dead_pull_members_job_comes_back_with_its_state_and_its_stale_copy_goes_when_the_agent_returns(
    karmada_env: KarmadaEnv,
    pull_member: str,
    namespace: str,
    request: pytest.FixtureRequest,
    flink_probes: Path,
    flink_jobs: list[RunningJob],
    tmp_path: Path,
) -> None:
    env, first = karmada_env, pull_member
    probe = Probe.of(flink_probes, FLINK_VERSION)
    job = FlinkJob(env, namespace)
    others = list(env.members)
    policy = stateful_cluster_policy("flink", namespace, job.name, (first, *others), toleration_seconds=300)
    job.create(prefer_home(policy, first, others), flink_configuration=FLINK_CONFIGURATION)
    assert job.wait_placed(timeout=120) == first
    flink_jobs.append(old := job.run_flink(first, probe, tmp_path / "old", KEYS, RATE))
    job_id = old.job_id
    env.wait_until(lambda: len(old.completed()) >= 2, 60, "two checkpoints of the job completed")
    env.wait_until(lambda: job_id in recorded_state(job), 30, "the relay's record of the last healthy state")
    relay_log_start = env.relay_log.stat().st_size

    with taint_not_ready_clusters(env), CopyWatch(job, members=(*env.members, first)) as watch:
        kill_at_any_moment(old)  # the node dies: its job, its agent and its apiserver
        env.stop_agent(first)
        stopped_at = time.monotonic()
        env.stop_member(first)
        restorable = newest_completed(job.state_dir / job_id)

        env.wait_until(lambda: not cluster_ready(env, first), 120, f"{first} not Ready")
        not_ready_seconds = time.monotonic() - stopped_at
        second, copy = job.wait_restored_outside(first, timeout=BACK_WITH_STATE_SECONDS + 60)
        back_seconds = time.monotonic() - stopped_at
        assert copy["metadata"]["labels"][CLUSTER_JOB_ID_LABEL] == job_id
        assert restore_path(copy) == restorable
        assert events_of(env, job.namespace, "ClusterFenced"), "the fencing is visible as an event"
        assert back_seconds < BACK_WITH_STATE_SECONDS, f"back with state after {back_seconds:.1f} s"
        # The old Work waits, terminating, for the agent: handed over, not released.
        handed = job.work(first)
        assert handed is not None and handed["metadata"].get("deletionTimestamp")
        assert "karmada.io/execution-controller" in handed["metadata"]["finalizers"]
        assert "resourcebinding.karmada.io/permanent-id" not in (handed["metadata"].get("labels") or {})
        shown = relay_status(env, f"{namespace}/{job.name}").stdout
        assert (
            f"fence: {first} fenced; its old copy FlinkDeployment {namespace}/{job.name} is deleted when its agent"
            in (shown)
        ), shown
        flink_jobs.append(job.run_flink(second, probe, tmp_path / "new", KEYS, RATE))
        new_copy = job.copy_in(second)
        assert new_copy is not None
        # Restart-safe: a relay restarted while the Work waits for the agent finds it handed over and leaves it so.
        restart_seconds = env.restart_relay()

        member_at = time.monotonic()  # the node is back: its apiserver, then its agent
        env.start_member(first)
        agent_at = time.monotonic()
        env.start_agent(first)
        env.wait_until(lambda: job.copy_in(first) is None, 120, f"the stale copy in {first} deleted")
        stale_seconds = time.monotonic() - agent_at
        ready_lag = env.wait_until(
            lambda: cluster_ready(env, first) and time.monotonic() - agent_at, 120, f"{first} Ready again"
        )
        env.wait_until(lambda: job.work(first) is None, 30, f"the old Work in karmada-es-{first} gone")
        time.sleep(UNTOUCHED_SECONDS)
        after = job.copy_in(second)
        assert after is not None and job.placed_on() == [second]
        assert (after["metadata"]["uid"], after["metadata"]["generation"]) == (
            new_copy["metadata"]["uid"],
            new_copy["metadata"]["generation"],
        ), "the new copy was never replaced nor changed"
        assert not job.eviction_tasks() or all(t["fromCluster"] == first for t in job.eviction_tasks())

    assert stale_seconds < STALE_COPY_SECONDS, f"stale copy removed {stale_seconds:.1f} s after the agent started"
    # Two copies side by side only from the member's return until its agent deleted the stale one.
    overlap = [at for at, members in watch.overlaps if first in members]
    overlap_seconds = max(overlap) - agent_at if overlap else 0.0
    before_agent = agent_at - member_at
    assert [members for _, members in watch.overlaps if first not in members] == []
    # Never through Karmada's cluster proxy, which cannot reach a Pull member.
    with env.relay_log.open() as log:
        log.seek(relay_log_start)
        tried = [
            line
            for line in log
            if line.startswith("{") and json.loads(line).get("cluster") == first and "member_copy" in line
        ]
    assert tried == [], f"the relay tried {first} through the proxy: {tried[:3]}"
    report(
        request,
        "karmada",
        f"dead Pull member {first}: NotReady {not_ready_seconds:.1f} s after its agent stopped, back on {second} with "
        f"label and restore path {back_seconds:.1f} s after (fenceAfterSeconds 60); relay restarted meanwhile "
        f"({restart_seconds:.1f} s)",
    )
    report(
        request,
        "karmada",
        f"Pull member return: stale copy in {first} deleted by its agent {stale_seconds:.1f} s after the agent was "
        f"started (last seen beside the new copy {overlap_seconds:.1f} s after; the apiserver was back "
        f"{before_agent:.1f} s before the agent); Ready after {ready_lag:.1f} s; the new copy on {second} untouched",
    )


def test_a_partitioned_pull_members_copy_is_suspended_through_the_storage_fence_before_its_job_moves(
    karmada_env: KarmadaEnv, pull_member: str, namespace: str, request: pytest.FixtureRequest
) -> None:
    """The agent cut off from karmada-apiserver (its TCP relay stopped, `KarmadaEnv.partition_agent`) while the member,
    its copy and its member relay run on, with the storage fence on (docs/operations.md, "The storage fence"): the
    relay writes a fence record for the old Work, member4's relay suspends the copy and acknowledges, and the relay
    hands the Work to the agent at once instead of after fenceAfterSeconds; the new copy starts elsewhere from the
    suspension's savepoint. When the partition heals, the agent deletes the suspended copy and the handed Work goes,
    and with it the fence record.

    The member relay's `/mutate` is registered in member4 as that section says: the agent, cut off from
    karmada-apiserver but not from its own member, re-applies the Work it last saw whenever the copy changes, which
    without the webhook set `spec.job.state` back to running within a second of each suspension (measured: the copy
    never stopped and the Work was handed over by the 60 s timer).

    The Flink operator is played by `FlinkOperator` as in tests/karmada/test_partition.py (whose docstring says what is
    real), leaving the JobManager up after the suspension as operator 1.16 does (FLINK-41262); copies and JobManager
    pods are read directly from the members' apiservers every 0.2 s (`CopyWatch`)."""
    env, home = karmada_env, pull_member
    env.start_member_relay(home)  # the control plane's storage fence is on by default
    try:
        job = FlinkJob(env, namespace)
        others = list(env.members)
        policy = stateful_cluster_policy("flink", namespace, job.name, (home, *others), toleration_seconds=300)
        job.create(prefer_home(policy, home, others), spec={"job": SAVEPOINT_JOB})
        assert job.wait_placed(timeout=120) == home
        job_id = new_job_id()
        job.run_healthy(home, job_id)
        job.write_checkpoints(job_id, completed=(4,))
        env.wait_until(lambda: job_id in recorded_state(job), 30, "the relay's record of the last healthy state")

        with (
            taint_not_ready_clusters(env),
            CopyWatch(job, members=(*env.members, home), jobmanagers=True) as watch,
            FlinkOperator(job, (*env.members, home)) as operator,
        ):
            env.partition_agent(home)
            try:
                cut = time.monotonic()
                env.wait_until(lambda: not cluster_ready(env, home), NOT_READY_SECONDS, f"{home} NotReady")
                not_ready_at = time.monotonic()
                second, copy = job.wait_restored_outside(home, timeout=180)
                back = time.monotonic() - not_ready_at
                watch.wait_seen(second)
                assert copy["metadata"]["labels"][CLUSTER_JOB_ID_LABEL] == job_id
                # The suspension's savepoint, newer than the last checkpoint.
                assert restore_path(copy) == operator.savepoint(home)
                new_copy = job.copy_in(second)
                assert new_copy is not None
                old = job.copy_in(home)
                assert old is not None and old["spec"]["job"]["state"] == "suspended", "the old copy runs again"
                handed = job.work(home)
                assert handed is not None and handed["metadata"].get("deletionTimestamp"), (
                    "the old Work not handed over"
                )
                assert "resourcebinding.karmada.io/permanent-id" not in (handed["metadata"].get("labels") or {})

                env.heal_agent(home)
                healed = time.monotonic()
                env.wait_until(lambda: job.copy_in(home) is None, 60, f"the stale copy in {home} deleted")
                stale = time.monotonic() - healed
                env.wait_until(lambda: job.work(home) is None, 30, f"the old Work in karmada-es-{home} gone")
                env.wait_until(lambda: fence_files(env, home) == [], 30, "the fence record removed")
            finally:
                env.heal_agent(home)  # again, on a failure: the taint policy waits for member4 Ready
        after = job.copy_in(second)  # taint_not_ready_clusters waited for member4 Ready and untainted meanwhile
        assert after is not None and job.placed_on() == [second]
        assert (after["metadata"]["uid"], after["metadata"]["generation"]) == (
            new_copy["metadata"]["uid"],
            new_copy["metadata"]["generation"],
        ), "the new copy was replaced or changed"
    finally:
        env.stop_member_relay(home)

    assert home in operator.suspended_at and home in operator.jobmanagers_gone
    jobmanager_gone = operator.jobmanagers_gone[home] - operator.suspended_at[home]
    not_ready = not_ready_at - cut
    suspended = watch.suspended[home] - not_ready_at
    created = watch.seen[second][0] - not_ready_at
    margin = created - suspended
    report(
        request,
        "karmada",
        f"partitioned Pull member {home}, storage fence: NotReady {not_ready:.1f} s after the cut; the old copy"
        f" suspended {suspended:.1f} s after NotReady, the new copy on {second} with its state (the suspension's"
        f" savepoint) {created:.1f} s after NotReady (restored copy seen {back:.1f} s after), margin {margin:.1f} s;"
        f" running side by side: {len(watch.running_overlaps)} samples of {watch.samples}; the JobManager the"
        f" operator left up (FLINK-41262) gone {jobmanager_gone:.1f} s after the suspension, JobManagers running in"
        f" two members: {len(watch.jobmanager_overlaps)} samples ({watch.jobmanager_misses} pod lists failed);"
        f" the suspended copy"
        f" deleted by the agent {stale:.1f} s after the heal; the new copy untouched",
    )
    assert watch.running_overlaps == [], f"two running copies: {watch.running_overlaps[:3]}"
    assert watch.jobmanager_overlaps == [], f"two running JobManagers: {watch.jobmanager_overlaps[:3]}"
    assert created <= MOVE_TARGET_SECONDS, f"the new copy {created:.1f} s after NotReady"
    assert margin >= MARGIN_TARGET_SECONDS, f"{margin:.1f} s between the suspension and the new copy"
    assert stale < STALE_COPY_SECONDS, f"stale copy deleted {stale:.1f} s after the heal"
