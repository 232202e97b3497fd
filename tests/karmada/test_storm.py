"""A storm: a member cluster carrying tens of stateful FlinkDeployments dies (its kube-apiserver really stopped), and
every one of them comes back on another cluster, each restored from its own newest completed checkpoint, each exactly
once; the storm metrics count them while they wait and time each phase.

Settings as in tests/karmada/test_dead_cluster.py (docs/operations.md "Cluster failover and a dead cluster"): the
taint manager's eviction is off (`--enable-no-execute-taint-eviction=false`), so every eviction task is the relay's.
The workloads are kept on one cluster by ordered clusterAffinities (`home` first, the other members second), so the
scheduler sends them elsewhere only when `home` is tainted.

First the brake (docs/operations.md, "The brake"): `home` and a second member stop together, two of three clusters
not Ready, which looks like the control plane's own partition; nothing may move while both are down. The relay runs
as the chart runs it, two replicas behind one address (`KarmadaEnv.relay_standby`), and the leader is SIGKILLed while
the brake holds every eviction: the warm standby takes the Lease and holds the brake as its own decision, and the
killed replica is started again, as the kubelet would. Then an operator releases `home` from the brake with the
annotation docs/operations.md gives, and the storm runs: timed from that moment. Once its first eviction task is
written, the leader is SIGKILLed again, and the restarted replica, warm by then, finishes the storm (docs/operations.md,
"The leader's memory"). Last, the second member starts again, and the brake comes off by itself.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from controllers.access.kube import FIELD_MANAGER
from failover.reconcile.brake import BRAKE_RELEASED_ANNOTATION
from failover.state.history import CLUSTER_FAILOVER, read_history
from tests.e2e.objects import task_writers
from tests.karmada.outages import (
    CLUSTER_JOB_ID_LABEL,
    CLUSTERS,
    cluster_ready,
    events_of,
    grant_fencing_in_members,
    taint_not_ready_clusters,
)
from tests.karmada.storm import copies, relay_samples, storm_policy
from tests.karmada.workloads import BINDINGS, FlinkJob, new_job_id, restore_path
from tests.karmada_env import KARMADA, KarmadaEnv, resource_path
from tests.karmada_env.relay import Replica
from tests.reporting import report

pytestmark = pytest.mark.karmada

WORKLOADS = 24
# The killed leader's Lease expires (leaseDurationSeconds 15) and the standby, polling it every 2 s, takes it.
TAKEOVER_WITHIN_SECONDS = 15 + 2 + 30
# From the operator's release: the braked evictions looked at again (15 s), the fence (60 s from NotReady, long past
# by then), a leader change, and a loaded 2-core machine's slack. The relay's pace is the apiserver's.
RESTORED_WITHIN_SECONDS = 15 + 60 + TAKEOVER_WITHIN_SECONDS + 120
POLL_SECONDS = 0.5
# How long the brake is watched holding every eviction, once both clusters are tainted, at the least; and at the most
# for the relay to count every eviction as braked (due once `home` has been not Ready for the brake's window, 30 s).
BRAKE_HELD_SECONDS = 20
BRAKE_COUNTED_SECONDS = 30 + 90


def braked(env: KarmadaEnv, replica: Replica | None = None) -> float | None:
    """The relay's (or `replica`'s) failover_relay_cluster_failover_braked."""
    return relay_samples(env, "failover_relay_cluster_failover_braked", replica and replica.url).get(())


def samples(env: KarmadaEnv, replica: Replica, name: str, labels: tuple[tuple[str, str], ...]) -> float:
    return relay_samples(env, name, replica.url).get(labels, 0.0)


def waiting(env: KarmadaEnv, replica: Replica, cluster: str) -> float:
    """The workloads evicted from `cluster` that `replica` counts as waiting, in any phase."""
    found = relay_samples(env, "failover_relay_workloads_waiting", replica.url)
    return sum(value for labels, value in found.items() if ("member_cluster", cluster) in labels)


def leads(replica: Replica, since: int) -> bool:
    """Whether `replica` took the Lease since its log was `since` bytes long (controllers/loop/leader.py)."""
    with replica.log.open("rb") as log:
        log.seek(since)
        return b"leadership_acquired" in log.read()


def killed_until_leading(env: KarmadaEnv, leader: Replica, standby: Replica) -> float:
    """SIGKILL `leader`; the seconds until `standby` takes the Lease."""
    since = standby.log.stat().st_size
    env.kill_relay(leader)
    killed = time.monotonic()
    env.wait_until(lambda: leads(standby, since), TAKEOVER_WITHIN_SECONDS, f"{standby.name} taking the Lease")
    return time.monotonic() - killed


def hold_watched(env: KarmadaEnv, jobs: list[FlinkJob], home: str, replica: Replica) -> None:
    """Nothing moves while the brake holds: watched at least BRAKE_HELD_SECONDS, and until every eviction (due once
    the brake's window has passed) is counted as held by `replica`."""
    watched_from, held = time.monotonic(), 0.0
    while time.monotonic() - watched_from < BRAKE_HELD_SECONDS or held < len(jobs):
        moved = [job.name for job in jobs if job.eviction_tasks() or job.placed_on() != [home]]
        assert moved == [], f"moved while the brake holds: {moved}"
        held = samples(env, replica, "failover_relay_evictions_braked", (("member_cluster", home),))
        assert time.monotonic() - watched_from < BRAKE_COUNTED_SECONDS, f"{held} evictions counted as braked"
        time.sleep(1)


def no_execute_tainted(env: KarmadaEnv, member: str) -> bool:
    cluster = env.api(KARMADA).get(resource_path(CLUSTERS, "clusters", member)) or {}
    taints = (cluster.get("spec") or {}).get("taints") or []
    return not cluster_ready(env, member) and any(taint.get("effect") == "NoExecute" for taint in taints)


def percentiles(values: list[float]) -> str:
    ordered = sorted(values)

    def at(quantile: float) -> float:
        return ordered[min(len(ordered) - 1, int(quantile * len(ordered)))]

    return f"p50 {at(0.5):.1f} s, p95 {at(0.95):.1f} s, max {ordered[-1]:.1f} s"


def test_a_dying_cluster_s_stateful_jobs_all_come_back_elsewhere_each_with_its_own_state_once(
    karmada_env: KarmadaEnv, namespace: str, request: pytest.FixtureRequest
) -> None:
    env = karmada_env
    home, others = env.members[0], list(env.members[1:])
    grant_fencing_in_members(env)
    jobs = [FlinkJob(env, namespace, f"job-{index:02d}") for index in range(WORKLOADS)]
    for job in jobs:
        job.create(storm_policy(namespace, job, home, others))
    for job in jobs:
        assert job.wait_placed(120) == home
    ids = {job.name: new_job_id() for job in jobs}
    newest = {}
    for index, job in enumerate(jobs):
        job.report_healthy(home, ids[job.name])
        # Each job its own checkpoints, a different newest one: a mix-up between jobs cannot go unseen.
        newest[job.name] = job.write_checkpoints(ids[job.name], completed=(1, 2 + index)) / f"chk-{2 + index}"
    for job in jobs:
        env.wait_until(
            lambda job=job: ids[job.name] in str((job.binding() or {}).get("metadata", {}).get("annotations")),
            60,
            f"the relay's record of {job.name}'s last healthy state",
        )

    task_seen: dict[str, float] = {}
    writers: dict[str, set[str]] = {}  # who wrote each job's task, as karmada-apiserver's managedFields say
    restored: dict[str, tuple[float, str, dict[str, Any]]] = {}
    total_key = (("member_cluster", home), ("phase", "total"))
    partner = others[-1]
    with taint_not_ready_clusters(env), env.relay_standby() as standby:
        try:
            env.stop_member(home)
            env.stop_member(partner)
            both_down = time.monotonic()
            env.wait_until(
                lambda: all(no_execute_tainted(env, member) for member in (home, partner)),
                180,
                f"{home} and {partner} not Ready and tainted NoExecute",
            )
            env.wait_until(lambda: braked(env) == 1, 60, "the relay's brake on")
            hold_watched(env, jobs, home, env.relay_replica)
            said = {event["involvedObject"]["name"] for event in events_of(env, "default", "ClusterFailoverBraked")}
            assert {home, partner} <= said, f"ClusterFailoverBraked on {sorted(said)}"

            # The leader dies while it holds the brake. The standby takes the Lease, and holds the brake and every
            # eviction as its own decision: the brake is a function of the Clusters alone.
            first, second = env.relay_replica, standby
            takeovers = [killed_until_leading(env, first, second)]
            env.start_relay_again()  # the kubelet restarts the killed container: a standby now
            env.wait_until(lambda: braked(env, second) == 1, 30, "the brake on in the new leader")
            hold_watched(env, jobs, home, second)
            braked_seconds = time.monotonic() - both_down

            # An operator who knows `home` is really gone releases it from the brake, as docs/operations.md shows;
            # `partner` stays braked (it runs none of the jobs) until it is back.
            released_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            env.kubectl("annotate", "cluster", home, "--overwrite", f"{BRAKE_RELEASED_ANNOTATION}={released_at}")
            stopped = time.monotonic()
            deadline = stopped + RESTORED_WITHIN_SECONDS
            killed_at: float | None = None
            first_log = first.log.stat().st_size
            while len(restored) < WORKLOADS and time.monotonic() < deadline:
                now = time.monotonic() - stopped
                for binding in env.api(KARMADA).list(resource_path(BINDINGS, "resourcebindings", namespace=namespace)):
                    name = binding["spec"]["resource"]["name"]
                    if binding["spec"].get("gracefulEvictionTasks") and name not in task_seen:
                        task_seen[name] = now
                        writers[name] = task_writers(binding)
                for member in others:
                    for name, copy in copies(env, member, namespace).items():
                        if name not in restored and restore_path(copy):
                            restored[name] = (now, member, copy)
                if task_seen and killed_at is None:
                    # The new leader dies too, once the storm's first task is written: the restarted replica, warm
                    # by now, finishes the storm.
                    env.kill_relay(second)
                    killed_at = time.monotonic()
                if killed_at is not None and len(takeovers) == 1 and leads(first, first_log):
                    takeovers.append(time.monotonic() - killed_at)
                time.sleep(POLL_SECONDS)
            total = time.monotonic() - stopped
            assert len(restored) == WORKLOADS, (
                f"{len(restored)}/{WORKLOADS} restored after {total:.0f} s; tasks for {len(task_seen)}"
            )
            if len(takeovers) == 1:
                assert killed_at is not None
                env.wait_until(lambda: leads(first, first_log), TAKEOVER_WITHIN_SECONDS, "the replica taking the Lease")
                takeovers.append(time.monotonic() - killed_at)
            # The third leader took over a storm in flight, and counts the jobs that wait for a Healthy new copy (one
            # Karmada already calls Healthy is restored: no status yet is not always Unknown to its interpreter).
            env.wait_until(
                lambda: waiting(env, first, home) >= WORKLOADS / 2, 30, "the jobs counted waiting by the third leader"
            )
            totals_before = samples(env, first, "failover_relay_failover_phase_duration_seconds_count", total_key)

            # Each with its own state, each once: the copy first seen restored is the one that stays, alone.
            time.sleep(5)
            for job in jobs:
                _, member, first_copy = restored[job.name]
                labels = first_copy["metadata"]["labels"]
                assert labels[CLUSTER_JOB_ID_LABEL] == ids[job.name], f"{job.name} got another job's id"
                assert restore_path(first_copy) == newest[job.name], f"{job.name} restored from the wrong state"
                now_copy = job.copy_in(member) or {}
                assert now_copy.get("metadata", {}).get("uid") == first_copy["metadata"]["uid"], f"{job.name} twice"
                assert job.placed_on() == [member], f"{job.name} placed on {job.placed_on()}"
                running = [m for m in others if m != member and env.member_pid(m) is not None]  # `partner` is down
                elsewhere = [m for m in running if job.copy_in(m) is not None]
                assert elsewhere == [], f"{job.name} also runs in {elsewhere}"
                moves = read_history(job.binding() or {}).moves
                assert [(m.kind, m.from_cluster) for m in moves] == [(CLUSTER_FAILOVER, home)], job.name
            # Every task was the relay's, one replica's or the other's (the taint manager's eviction is off), as
            # karmada-apiserver recorded its writer.
            not_ours = {name: seen for name, seen in writers.items() if seen != {FIELD_MANAGER}}
            assert not_ours == {}, f"tasks not written by the relay alone: {not_ours}"
            for job in jobs:
                job.report_healthy(restored[job.name][1], new_job_id())
            env.wait_until(lambda: all(not job.eviction_tasks() for job in jobs), 60, "every eviction task ended")
            totals = samples(env, first, "failover_relay_failover_phase_duration_seconds_count", total_key)
            assert totals - totals_before == WORKLOADS, f"{totals - totals_before} moves timed by the third leader"
            assert braked(env, first) == 1, "the brake came off while two clusters were not Ready"

            env.start_member(partner)  # one of three not Ready: a dead member, not a partition
            env.wait_until(lambda: braked(env, first) == 0, 180, f"the brake off by itself once {partner} is Ready")
            assert copies(env, partner, namespace) == {}, f"copies in {partner}, which had none"
        finally:
            if env.member_pid(partner) is None:
                env.start_member(partner)
            env.start_member(home)
            if restored:  # moved away: what stayed in `home` is stale, and goes once it answers
                env.wait_until(lambda: not copies(env, home, namespace), 120, f"the stale copies in {home} deleted")

    tasks = list(task_seen.values())
    back = [at for at, _, _ in restored.values()]
    report(
        request,
        "karmada",
        f"storm: {WORKLOADS} stateful jobs on {home}; {home} and {partner} stopped together: braked, nothing moved in "
        f"{braked_seconds:.0f} s, the leader SIGKILLed meanwhile and the standby leading {takeovers[0]:.1f} s later; "
        f"{home} released by an operator: the relay's eviction task seen {percentiles(tasks)}; the new leader "
        f"SIGKILLed at the first task and the restarted replica leading {takeovers[1]:.1f} s later; restored "
        f"elsewhere with its own checkpoint {percentiles(back)} after the release; last one at "
        f"{max(back):.1f} s (failure threshold 30 s, status every 10 s, taint manager's eviction off, "
        f"fenceAfterSeconds 60)",
    )
