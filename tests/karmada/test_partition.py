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
    prefer_home,
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
BOTH_RUNNING_SECONDS = 20  # how long the long partition goes on after the new copy is up
AFTER_HEAL_SECONDS = 30  # three status rounds after a partition heals, in which nothing may move any more
NOT_READY_TAINT = "failover.example.io/not-ready"  # manifests/karmada/cluster-taint-policy.yaml
# Outlasts both partitions (the long one: NotReady, the 60 s fence, the new copy, 20 s more) and the 30 s Karmada takes
# to call the member Ready and untaint it again.
TAINT_TOLERATION_SECONDS = 300


def running_job(
    env: KarmadaEnv, namespace: str, name: str, home: str, taint_toleration: int | None = None
) -> tuple[FlinkJob, str]:
    """The job running on `home` (other members only when it has to move) and its state recorded; with
    `taint_toleration`, the policy tolerates the ClusterTaintPolicy's NoExecute taint that long (the taint manager
    honours `tolerationSeconds`: `taint_manager.go` `getMinTolerationTime`)."""
    job = FlinkJob(env, namespace, name)
    others = [member for member in env.members if member != home]
    policy = prefer_home(
        stateful_cluster_policy(f"p-{name}", namespace, job.name, env.members, toleration_seconds=300), home, others
    )
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
    assert job.wait_placed() == home
    job_id = new_job_id()
    job.run_healthy(home, job_id)
    env.wait_until(lambda: job_id in recorded_state(job), 30, "the relay's record of the last healthy state")
    return job, job_id


def untouched(job: FlinkJob, member: str) -> dict[str, Any]:
    """The copy in `member`, read directly there: present, not being deleted, not suspended."""
    copy = job.copy_in(member)
    assert copy is not None, f"the copy of {job.name} in {member} is gone"
    assert not copy["metadata"].get("deletionTimestamp"), f"the copy of {job.name} in {member} is being deleted"
    assert copy["spec"]["job"].get("state", "running") == "running", f"the copy of {job.name} in {member} was suspended"
    return copy


def unmoved(job: FlinkJob, member: str) -> None:
    """`untouched`, and Karmada still places the job on `member` alone, with no eviction task."""
    untouched(job, member)
    assert job.placed_on() == [member] and job.eviction_tasks() == [], f"{job.name} was moved"


def cut_until_not_ready(env: KarmadaEnv, member: str) -> float:
    """Partition `member` and wait until Karmada calls it NotReady; the seconds that took."""
    env.partition_member(member)
    cut = time.monotonic()
    env.wait_until(lambda: not cluster_ready(env, member), NOT_READY_SECONDS, f"{member} NotReady")
    return time.monotonic() - cut


@pytest.fixture
def short_fence(karmada_env: KarmadaEnv):
    karmada_env.restart_relay({"controllers": {"fenceAfterSeconds": FENCE_AFTER_SECONDS}})
    yield
    karmada_env.restart_relay()


def test_a_control_plane_outage_longer_than_every_fence_timer_moves_and_suspends_nothing(
    karmada_env: KarmadaEnv, namespace: str, short_fence: None, request: pytest.FixtureRequest
) -> None:
    env = karmada_env
    grant_fencing_in_members(env)
    first = env.members[0]
    job, _ = running_job(env, namespace, "job", first)
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
            unmoved(job, first)
            time.sleep(2)
    assert watch.overlaps == [] and set(watch.seen) == {first}
    report(
        request,
        "karmada",
        f"control-plane outage: karmada-apiserver down {outage} s (3 x fenceAfterSeconds {FENCE_AFTER_SECONDS}),"
        f" back in {back:.1f} s, then {AFTER_HEAL_SECONDS} s watched: nothing moved, the one copy on {first}"
        f" never suspended or deleted ({watch.samples} samples)",
    )


def test_partitions_move_only_what_does_not_tolerate_them_and_never_run_two_copies_once_healed(
    karmada_env: KarmadaEnv, namespace: str, request: pytest.FixtureRequest
) -> None:
    """Two partitions of one Push member, its jobs and their member-side view running throughout.

    The long one outlasts the fence: a job of the shipped policy is evicted at NotReady and its old Work released
    after fenceAfterSeconds without reaching the member (issue 25 item 2 is not built), so its old copy keeps running
    beside the new one until the partition heals, and is deleted seconds after. The short one heals 10 s after
    NotReady, before the fence: the move goes on once the member answers, one copy at a time. A job whose policy
    tolerates the not-ready taint longer than either partition is never moved, suspended or deleted."""
    env = karmada_env
    grant_fencing_in_members(env)
    home = env.members[0]
    tolerant, _ = running_job(env, namespace, "tolerant", home, taint_toleration=TAINT_TOLERATION_SECONDS)
    evicted, job_id = running_job(env, namespace, "evicted", home)
    checkpoints = evicted.write_checkpoints(job_id, completed=(4,))

    with taint_not_ready_clusters(env), CopyWatch(tolerant) as tolerant_watch:
        # The long partition.
        with CopyWatch(evicted) as long_watch:
            cut = time.monotonic()
            not_ready = cut_until_not_ready(env, home)
            second, copy = evicted.wait_restored_outside(home, timeout=180)
            back = time.monotonic() - cut
            assert copy["metadata"]["labels"][CLUSTER_JOB_ID_LABEL] == job_id
            assert restore_path(copy) == checkpoints / "chk-4"
            untouched(evicted, home)  # still running in the partitioned member: the overlap
            both_from = time.monotonic()
            time.sleep(BOTH_RUNNING_SECONDS)
            unmoved(tolerant, home)
            env.heal_member(home)
            healed = time.monotonic()
            env.wait_until(lambda: evicted.copy_in(home) is None, 90, f"the stale copy in {home} deleted")
            stale = time.monotonic() - healed
            overlap = time.monotonic() - both_from
            long_partition = healed - cut
            ready_again = back_to_normal(env, home)
        assert evicted.placed_on() == [second] and evicted.copy_in(second) is not None
        assert stale < 20, f"stale copy deleted {stale:.1f} s after the partition healed"

        # The short partition, with a job of the shipped policy started on the member since.
        short, _ = running_job(env, namespace, "short", home)
        with CopyWatch(short) as short_watch:
            short_not_ready = cut_until_not_ready(env, home)
            time.sleep(HEAL_AFTER_NOT_READY_SECONDS)
            env.heal_member(home)
            back_to_normal(env, home)
            time.sleep(AFTER_HEAL_SECONDS)
        placed = short.placed_on()
        copies = [member for member in env.members if short.copy_in(member) is not None]
        unmoved(tolerant, home)

    assert short_watch.overlaps == [], f"two copies at once after a short partition: {short_watch.overlaps[:3]}"
    assert len(placed) == 1 and copies == placed, (placed, copies)
    assert tolerant_watch.overlaps == [] and set(tolerant_watch.seen) == {home}
    short_move = f"moved to {placed[0]} (the taint manager had evicted it)" if placed != [home] else "not moved"
    report(
        request,
        "karmada",
        f"partitioned Push member {home}: NotReady {not_ready:.1f} s after the cut, new copy on {second} with its"
        f" state {back:.1f} s after the cut ({back - not_ready:.1f} s after NotReady); the old copy ran beside it"
        f" {overlap:.1f} s (the partition after the fence) and went {stale:.1f} s after the heal"
        f" ({len(long_watch.overlaps)} overlapping samples); Ready and untainted {ready_again:.1f} s after the heal."
        f" Partition healing {HEAL_AFTER_NOT_READY_SECONDS} s after NotReady ({short_not_ready:.1f} s after the cut):"
        f" one copy throughout, {short_move}."
        f" Under a {TAINT_TOLERATION_SECONDS} s taint toleration, through both ({long_partition:.0f} s and"
        f" {short_not_ready + HEAL_AFTER_NOT_READY_SECONDS:.0f} s): nothing moved, the one copy on {home} never"
        " suspended or deleted",
    )
