"""Partitions and control-plane outages against real Karmada (issue 25 items 1, 3 and 6): the member, its copy and the
tests' direct view of it keep running while the control plane cannot reach the member (its TCP relay stopped,
`KarmadaEnv.partition_member`), or while karmada-apiserver itself is down (`KarmadaEnv.stop_control_plane`).

Settings as tests/karmada/test_dead_cluster.py (docs/operations.md, "Cluster failover and a dead cluster"): the
ClusterTaintPolicy tainting a not-Ready cluster NoExecute, the taint manager's Directly eviction, the relay's
`fencing: notReady`. Each test prints its timings; docs/operations.md, "Failure modes, measured" has them.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.karmada.outages import (
    CLUSTER_JOB_ID_LABEL,
    CopyWatch,
    back_to_normal,
    cluster_ready,
    grant_fencing_in_members,
    recorded_state,
    stateful_cluster_policy,
    taint_not_ready_clusters,
)
from tests.karmada.workloads import FlinkJob, new_job_id, restore_path
from tests.karmada_env import KarmadaEnv
from tests.support import report

pytestmark = pytest.mark.karmada

FENCE_AFTER_SECONDS = 20  # the outage test's: 3 x fenceAfterSeconds of outage stays a minute
# Karmada's 30 s failure threshold plus status rounds whose requests to a cut member hang until they time out
# (measured: 78 s on a loaded machine).
NOT_READY_SECONDS = 150
HEAL_AFTER_NOT_READY_SECONDS = 10  # well before the default fenceAfterSeconds (60)
AFTER_HEAL_SECONDS = 60  # a fence period and a few status rounds after the partition heals
NOT_READY_TAINT = "failover.example.io/not-ready"  # manifests/karmada/cluster-taint-policy.yaml
TAINT_TOLERATION_SECONDS = 120  # outlasts the partition and the 30 s Karmada takes to call the member Ready again


def running_job(env: KarmadaEnv, namespace: str, taint_toleration: int | None = None) -> tuple[FlinkJob, str, str]:
    """The job running and its state recorded; with `taint_toleration`, the policy tolerates the ClusterTaintPolicy's
    NoExecute taint that long (the taint manager honours `tolerationSeconds`: `taint_manager.go`
    `getMinTolerationTime`)."""
    grant_fencing_in_members(env)
    job = FlinkJob(env, namespace)
    policy = stateful_cluster_policy("flink", namespace, job.name, env.members, toleration_seconds=300)
    if taint_toleration is not None:
        policy["spec"]["placement"]["clusterTolerations"] = [
            {
                "key": NOT_READY_TAINT,
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": taint_toleration,
            }
        ]
    job.create(policy)
    first = job.wait_placed()
    job_id = new_job_id()
    job.run_healthy(first, job_id)
    env.wait_until(lambda: job_id in recorded_state(job), 30, "the relay's record of the last healthy state")
    return job, first, job_id


def untouched(job: FlinkJob, member: str) -> dict[str, Any]:
    """The copy in `member`, read directly there: present, not being deleted, not suspended."""
    copy = job.copy_in(member)
    assert copy is not None, f"the copy in {member} is gone"
    assert not copy["metadata"].get("deletionTimestamp"), f"the copy in {member} is being deleted"
    assert copy["spec"]["job"].get("state", "running") == "running", f"the copy in {member} was suspended"
    return copy


@pytest.fixture
def short_fence(karmada_env: KarmadaEnv):
    karmada_env.restart_relay({"controllers": {"fenceAfterSeconds": FENCE_AFTER_SECONDS}})
    yield
    karmada_env.restart_relay()


def test_a_control_plane_outage_longer_than_every_fence_timer_moves_and_suspends_nothing(
    karmada_env: KarmadaEnv, namespace: str, short_fence: None, request: pytest.FixtureRequest
) -> None:
    env = karmada_env
    job, first, _ = running_job(env, namespace)
    outage = 3 * FENCE_AFTER_SECONDS
    with taint_not_ready_clusters(env), CopyWatch(job) as watch:
        env.stop_control_plane()
        stopped = time.monotonic()
        while time.monotonic() - stopped < outage:
            untouched(job, first)
            time.sleep(2)
        back = env.start_control_plane()
        after = time.monotonic()
        while time.monotonic() - after < AFTER_HEAL_SECONDS:
            untouched(job, first)
            assert job.placed_on() == [first] and job.eviction_tasks() == []
            time.sleep(2)
    assert watch.overlaps == [] and set(watch.seen) == {first}
    report(
        request,
        "karmada",
        f"control-plane outage: karmada-apiserver down {outage} s (3 x fenceAfterSeconds {FENCE_AFTER_SECONDS}),"
        f" back in {back:.1f} s, then {AFTER_HEAL_SECONDS} s watched: nothing moved, the one copy on {first}"
        f" never suspended or deleted ({watch.samples} samples)",
    )


def test_a_partition_healing_before_the_fence_leaves_one_copy(
    karmada_env: KarmadaEnv, namespace: str, request: pytest.FixtureRequest
) -> None:
    env = karmada_env
    job, first, _ = running_job(env, namespace)
    with taint_not_ready_clusters(env), CopyWatch(job) as watch:
        env.partition_member(first)
        cut = time.monotonic()
        env.wait_until(lambda: not cluster_ready(env, first), NOT_READY_SECONDS, f"{first} NotReady")
        not_ready = time.monotonic() - cut
        time.sleep(HEAL_AFTER_NOT_READY_SECONDS)
        untouched(job, first)
        env.heal_member(first)
        healed = time.monotonic()
        back_to_normal(env, first)
        ready_again = time.monotonic() - healed
        time.sleep(AFTER_HEAL_SECONDS)
        placed = job.placed_on()
        copies = [member for member in env.members if job.copy_in(member) is not None]
    assert watch.overlaps == [], f"two copies at once: {watch.overlaps[:3]}"
    assert len(placed) == 1 and copies == placed, (placed, copies)
    moved = placed != [first]
    report(
        request,
        "karmada",
        f"partition healing before the fence: {first} NotReady {not_ready:.1f} s after the cut, healed"
        f" {HEAL_AFTER_NOT_READY_SECONDS} s later, Ready and untainted again {ready_again:.1f} s after;"
        " one copy throughout,"
        f" {'moved to ' + placed[0] + ' (the taint manager had evicted it)' if moved else 'not moved'}",
    )


def test_a_partition_healing_within_the_policy_s_taint_toleration_moves_nothing(
    karmada_env: KarmadaEnv, namespace: str, request: pytest.FixtureRequest
) -> None:
    """The way to keep a short partition from moving anything: the policy tolerates the not-ready taint for a while."""
    env = karmada_env
    job, first, _ = running_job(env, namespace, taint_toleration=TAINT_TOLERATION_SECONDS)
    with taint_not_ready_clusters(env), CopyWatch(job) as watch:
        env.partition_member(first)
        cut = time.monotonic()
        env.wait_until(lambda: not cluster_ready(env, first), NOT_READY_SECONDS, f"{first} NotReady")
        not_ready = time.monotonic() - cut
        time.sleep(HEAL_AFTER_NOT_READY_SECONDS)
        env.heal_member(first)
        healed = time.monotonic()
        back = back_to_normal(env, first)
        watched = time.monotonic()
        while time.monotonic() - watched < AFTER_HEAL_SECONDS / 2:
            untouched(job, first)
            assert job.placed_on() == [first] and job.eviction_tasks() == []
            time.sleep(2)
        partition = healed - cut
    assert watch.overlaps == [] and set(watch.seen) == {first}
    report(
        request,
        "karmada",
        f"partition of {partition:.0f} s (NotReady after {not_ready:.1f} s, healed {HEAL_AFTER_NOT_READY_SECONDS} s"
        f" later) under a {TAINT_TOLERATION_SECONDS} s taint toleration: nothing moved, Ready and untainted"
        f" {back:.1f} s after the heal, one copy on {first} never suspended or deleted",
    )


def test_a_partitioned_member_s_job_comes_back_elsewhere_and_its_copy_goes_when_the_partition_heals(
    karmada_env: KarmadaEnv, namespace: str, request: pytest.FixtureRequest
) -> None:
    """What a partition does today (issue 25 item 2 is not built): the fence releases the old Work after
    fenceAfterSeconds without reaching the member, so its copy keeps running beside the new one until the partition
    heals, and is deleted seconds after."""
    env = karmada_env
    job, first, job_id = running_job(env, namespace)
    checkpoints = job.write_checkpoints(job_id, completed=(4,))
    with taint_not_ready_clusters(env), CopyWatch(job) as watch:
        env.partition_member(first)
        cut = time.monotonic()
        env.wait_until(lambda: not cluster_ready(env, first), NOT_READY_SECONDS, f"{first} NotReady")
        not_ready = time.monotonic() - cut
        second, copy = job.wait_restored_outside(first, timeout=180)
        back = time.monotonic() - cut
        assert copy["metadata"]["labels"][CLUSTER_JOB_ID_LABEL] == job_id
        assert restore_path(copy) == checkpoints / "chk-4"
        untouched(job, first)  # still running in the partitioned member: the overlap
        both_from = time.monotonic()
        time.sleep(20)
        env.heal_member(first)
        healed = time.monotonic()
        env.wait_until(lambda: job.copy_in(first) is None, 90, f"the stale copy in {first} deleted")
        stale = time.monotonic() - healed
        overlap = time.monotonic() - both_from
        back_to_normal(env, first)
    assert job.placed_on() == [second] and job.copy_in(second) is not None
    assert stale < 20, f"stale copy deleted {stale:.1f} s after the partition healed"
    report(
        request,
        "karmada",
        f"partitioned Push member {first}: NotReady {not_ready:.1f} s after the cut, new copy on {second} with its"
        f" state {back:.1f} s after the cut ({back - not_ready:.1f} s after NotReady); the old copy ran beside it"
        f" {overlap:.1f} s (the partition after the fence) and went {stale:.1f} s after the heal"
        f" ({len(watch.overlaps)} overlapping samples)",
    )
