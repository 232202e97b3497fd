"""Partitions and control-plane outages against real Karmada: the member, its copy, its member relay and the tests'
direct view of it keep running while the control plane cannot reach the member (its TCP relay stopped,
`KarmadaEnv.partition_member`), or while karmada-apiserver itself is down (`KarmadaEnv.stop_control_plane`).

Settings as tests/karmada/test_dead_cluster.py (docs/operations.md, "Cluster failover and a dead cluster"): the
ClusterTaintPolicy tainting a not-Ready cluster NoExecute, the taint manager's Directly eviction, the relay's `fencing:
notReady`; and the storage fence (docs/operations.md, "The storage fence"): the control plane relay's, on by default
with its checkpoint root, and a member relay for the partitioned member (`serve --member --fence-cluster`, by PID,
reading the same checkpoint root and its own member's apiserver). Each test prints its timings; docs/operations.md,
"Failure modes, measured" has them.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.karmada.operator import FlinkOperator
from tests.karmada.outages import (
    CLUSTER_JOB_ID_LABEL,
    SAVEPOINT_JOB,
    CopyWatch,
    back_to_normal,
    cluster_ready,
    events_of,
    fence_files,
    grant_fencing_in_members,
    prefer_home,
    recorded_state,
    stateful_cluster_policy,
    taint_not_ready_clusters,
)
from tests.karmada.workloads import FlinkJob, new_job_id, restore_path
from tests.karmada_env import KarmadaEnv
from tests.reporting import report

pytestmark = pytest.mark.karmada

FENCE_AFTER_SECONDS = 20  # the outage test's: 3 x fenceAfterSeconds of outage stays a minute
# Karmada's 30 s failure threshold plus status rounds whose requests to a cut member hang until they time out
# (measured: 78 s on a loaded machine).
NOT_READY_SECONDS = 150
HEAL_AFTER_NOT_READY_SECONDS = 10  # well before the default fenceAfterSeconds (60)
AFTER_MOVE_SECONDS = 10  # how long the long partition goes on after the new copy is up
MOVE_TARGET_SECONDS = 60  # target: the new copy with its state at most this long after NotReady
MARGIN_TARGET_SECONDS = 2  # and at least this long between the old copy's suspension and the new copy
AFTER_HEAL_SECONDS = 30  # three status rounds after a partition heals, in which nothing may move any more
NOT_READY_TAINT = "failover.example.io/not-ready"  # manifests/karmada/cluster-taint-policy.yaml
# Outlasts both partitions (the long one: NotReady, the 60 s fence, the new copy, 20 s more) and the 30 s Karmada takes
# to call the member Ready and untaint it again.
TAINT_TOLERATION_SECONDS = 300


def running_job(
    env: KarmadaEnv,
    namespace: str,
    name: str,
    home: str,
    taint_toleration: int | None = None,
    spec: dict[str, Any] | None = None,
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
    job.create(policy, spec=spec)
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


@pytest.fixture(scope="module")
def member_relay(karmada_env: KarmadaEnv) -> Iterator[str]:
    """The first member's relay with the storage fence's watcher, for this module's tests."""
    home = karmada_env.members[0]
    karmada_env.start_member_relay(home)
    yield home
    karmada_env.stop_member_relay(home)


@pytest.fixture
def short_fence(karmada_env: KarmadaEnv, member_relay: str):
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
    assert watch.overlaps == [] and set(watch.seen) == {first} and watch.suspended == {}
    assert fence_files(env, first) == [], "a fence record was written without a failover"
    report(
        request,
        "karmada",
        f"control-plane outage: karmada-apiserver down {outage} s (3 x fenceAfterSeconds {FENCE_AFTER_SECONDS}),"
        f" back in {back.ready:.1f} s, propagating again in {back.propagating:.1f} s, then {AFTER_HEAL_SECONDS} s"
        f" watched, storage fence and member relay on: nothing"
        f" moved, the one copy on {first} never suspended or deleted, no fence record ({watch.samples} samples)",
    )


def test_partitions_move_only_what_does_not_tolerate_them_and_never_run_two_copies(
    karmada_env: KarmadaEnv, namespace: str, member_relay: str, request: pytest.FixtureRequest
) -> None:
    """Two partitions of one Push member, its jobs, its member relay and their member-side view running throughout.

    The long one outlasts the move: a job of the shipped policy is evicted at NotReady; the relay writes a fence
    record for its old copy to the checkpoint storage, the member relay suspends that copy, and once it is stopped
    acknowledges, so the relay releases the old Work without waiting for fenceAfterSeconds and the new copy starts
    elsewhere from the suspension's savepoint; the old copy stays suspended until the partition heals and is then
    deleted. The short one heals 10 s after NotReady: its job is suspended by the same fence, then moved once the
    member answers, one copy at a time. A job whose policy tolerates the not-ready taint longer than either partition
    is never moved, suspended or deleted.

    Real: Karmada v1.19 (taint manager, scheduler, execution controller), the partition, both relays, the checkpoint
    storage (a local directory both relays read), the member apiservers and the copies' specs. Standing in for the
    Flink operator (the tier has none, no kube-controller-manager and no kubelet): `FlinkOperator`
    (tests/karmada/operator.py) plays operator 1.16 for the evicted job in every Push member: each copy that runs gets
    its JobManager Deployment and a Running pod; the suspension gets a savepoint in Flink's layout and the status 1.16
    writes (`lifecycleState: SUSPENDED`, `jobStatus.upgradeSavepointPath`) about 0.2 s after `spec.job.state:
    suspended` (a real operator takes as long as its savepoint), and the JobManager is left up (FLINK-41262), its pod
    resubmitting the job 3 s later unless stopped. Copies and JobManager pods are read directly from the members'
    apiservers every 0.2 s (`CopyWatch`): a copy with `spec.job.state: suspended` is not running, a JobManager pod
    Running is, whatever its copy says; the margin is between the first sample showing the old copy suspended and the
    first showing the new copy."""
    env = karmada_env
    grant_fencing_in_members(env)
    home = env.members[0]
    tolerant, _ = running_job(env, namespace, "tolerant", home, taint_toleration=TAINT_TOLERATION_SECONDS)
    evicted, job_id = running_job(env, namespace, "evicted", home, spec={"job": SAVEPOINT_JOB})
    evicted.write_checkpoints(job_id, completed=(4,))

    with taint_not_ready_clusters(env), CopyWatch(tolerant) as tolerant_watch:
        # The long partition.
        with (
            CopyWatch(evicted, jobmanagers=True) as long_watch,
            FlinkOperator(evicted, env.members) as operator,
        ):
            cut = time.monotonic()
            not_ready = cut_until_not_ready(env, home)
            not_ready_at = cut + not_ready
            second, copy = evicted.wait_restored_outside(home, timeout=180)
            back = time.monotonic() - not_ready_at
            assert copy["metadata"]["labels"][CLUSTER_JOB_ID_LABEL] == job_id
            # The suspension's savepoint, newer than the last checkpoint, is what the new copy restores.
            assert restore_path(copy) == operator.savepoint(home)
            time.sleep(AFTER_MOVE_SECONDS)
            old = evicted.copy_in(home)
            assert old is not None and old["spec"]["job"]["state"] == "suspended", "the old copy runs again"
            unmoved(tolerant, home)
            env.heal_member(home)
            healed = time.monotonic()
            env.wait_until(lambda: evicted.copy_in(home) is None, 90, f"the stale copy in {home} deleted")
            stale = time.monotonic() - healed
            long_partition = healed - cut
            env.wait_until(lambda: fence_files(env, home) == [], 30, "the fence record removed")
            ready_again = back_to_normal(env, home)
        assert evicted.placed_on() == [second] and evicted.copy_in(second) is not None
        assert stale < 20, f"stale copy deleted {stale:.1f} s after the partition healed"
        assert home in operator.suspended_at and home in operator.jobmanagers_gone
        suspended = long_watch.suspended[home] - not_ready_at
        jobmanager_gone = operator.jobmanagers_gone[home] - operator.suspended_at[home]
        stopped_events = events_of(env, namespace, "JobManagerStopped", cluster=home)
        created = long_watch.seen[second][0] - not_ready_at
        margin = created - suspended

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

    report(
        request,
        "karmada",
        f"partitioned Push member {home}, storage fence: NotReady {not_ready:.1f} s after the cut; the old copy"
        f" suspended {suspended:.1f} s after NotReady, the new copy on {second} with its state (the suspension's"
        f" savepoint) {created:.1f} s after NotReady (restored copy seen {back:.1f} s after), margin {margin:.1f} s;"
        f" running side by side: {len(long_watch.running_overlaps)} samples of {long_watch.samples}; the operator"
        f" left the old JobManager up after the suspension (FLINK-41262), gone {jobmanager_gone:.1f} s after it"
        f" ({len(stopped_events)} JobManagerStopped Event{'s' * (len(stopped_events) != 1)}, the job resubmitted by"
        f" it: {'yes' if home in operator.resubmitted else 'no'}); JobManagers running in two members:"
        f" {len(long_watch.jobmanager_overlaps)} samples ({long_watch.jobmanager_misses} pod lists failed);"
        f" the suspended"
        f" copy went {stale:.1f} s after the heal ({long_partition:.0f} s partition); Ready and untainted"
        f" {ready_again:.1f} s after the heal. Partition healing {HEAL_AFTER_NOT_READY_SECONDS} s after NotReady"
        f" ({short_not_ready:.1f} s after the cut): placed on {placed}, suspended at"
        f" {sorted(short_watch.suspended)}, running side by side: {len(short_watch.running_overlaps)} samples."
        f" Under a {TAINT_TOLERATION_SECONDS} s taint toleration, through both: nothing moved, the one copy on"
        f" {home} never suspended or deleted",
    )
    assert long_watch.running_overlaps == [], f"two running copies: {long_watch.running_overlaps[:3]}"
    assert long_watch.jobmanager_overlaps == [], f"two running JobManagers: {long_watch.jobmanager_overlaps[:3]}"
    assert stopped_events, "no JobManagerStopped Event on the old copy"
    assert created <= MOVE_TARGET_SECONDS, f"the new copy {created:.1f} s after NotReady"
    assert margin >= MARGIN_TARGET_SECONDS, f"{margin:.1f} s between the suspension and the new copy"
    assert short_watch.overlaps == [], f"two copies at once after a short partition: {short_watch.overlaps[:3]}"
    assert len(placed) == 1 and copies == placed, (placed, copies)
    assert tolerant_watch.overlaps == [] and set(tolerant_watch.seen) == {home} and tolerant_watch.suspended == {}
