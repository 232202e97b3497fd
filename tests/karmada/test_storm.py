"""A storm: a member cluster carrying tens of stateful FlinkDeployments dies (its kube-apiserver really stopped), and
every one of them comes back on another cluster, each restored from its own newest completed checkpoint, each exactly
once; the storm metrics count them while they wait and time each phase.

Settings as in tests/karmada/test_dead_cluster.py (docs/operations.md "Cluster failover and a dead cluster"): the
taint manager's eviction is off (`--enable-no-execute-taint-eviction=false`), so every eviction task is the relay's.
The workloads are kept on one cluster by ordered clusterAffinities (`home` first, the other members second), so the
scheduler sends them elsewhere only when `home` is tainted.

First the brake (docs/operations.md, "The brake"): `home` and a second member stop together, two of three clusters
not Ready, which looks like the control plane's own partition; nothing may move while both are down. The second
member starts again, the brake comes off by itself, and the storm runs: timed from that moment.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from failover.state.history import CLUSTER_FAILOVER, read_history
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
from tests.reporting import report

pytestmark = pytest.mark.karmada

WORKLOADS = 24
# From the brake's release: the braked evictions looked at again (15 s), the fence (60 s from NotReady, long past by
# then), and a loaded 2-core machine's slack. The relay's pace is the apiserver's.
RESTORED_WITHIN_SECONDS = 15 + 60 + 120
POLL_SECONDS = 0.5
# How long the brake is watched holding every eviction, once both clusters are tainted, at the least; and at the most
# for the relay to count every eviction as braked (due once `home` has been not Ready for the brake's window, 30 s).
BRAKE_HELD_SECONDS = 20
BRAKE_COUNTED_SECONDS = 30 + 90


def braked(env: KarmadaEnv) -> float | None:
    """The relay's failover_relay_cluster_failover_braked."""
    return relay_samples(env, "failover_relay_cluster_failover_braked").get(())


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
    restored: dict[str, tuple[float, str, dict[str, Any]]] = {}
    total_key = (("member_cluster", home), ("phase", "total"))
    partner = others[-1]
    with taint_not_ready_clusters(env):
        try:
            # The relay serves the whole tier: workloads of earlier tests restored away from `home` count too.
            totals_before = relay_samples(env, "failover_relay_failover_phase_duration_seconds_count").get(total_key, 0)
            evictions_before = relay_samples(env, "failover_relay_cluster_evictions_total").get((), 0.0)
            env.stop_member(home)
            env.stop_member(partner)
            both_down = time.monotonic()
            env.wait_until(
                lambda: all(no_execute_tainted(env, member) for member in (home, partner)),
                180,
                f"{home} and {partner} not Ready and tainted NoExecute",
            )
            env.wait_until(lambda: braked(env) == 1, 60, "the relay's brake on")
            # Nothing moves while the brake holds: watched at least BRAKE_HELD_SECONDS, and until every eviction, due
            # once the brake's window has passed, is counted as held.
            watched_from, held = time.monotonic(), 0.0
            while time.monotonic() - watched_from < BRAKE_HELD_SECONDS or held < WORKLOADS:
                moved = [job.name for job in jobs if job.eviction_tasks() or job.placed_on() != [home]]
                assert moved == [], f"moved while the brake holds: {moved}"
                held = relay_samples(env, "failover_relay_evictions_braked").get((("member_cluster", home),), 0)
                assert time.monotonic() - watched_from < BRAKE_COUNTED_SECONDS, f"{held} evictions counted as braked"
                time.sleep(1)
            said = {event["involvedObject"]["name"] for event in events_of(env, "default", "ClusterFailoverBraked")}
            assert {home, partner} <= said, f"ClusterFailoverBraked on {sorted(said)}"
            assert relay_samples(env, "failover_relay_cluster_evictions_total").get((), 0.0) == evictions_before
            braked_seconds = time.monotonic() - both_down

            env.start_member(partner)  # one of three not Ready: a dead member, not a partition
            env.wait_until(lambda: braked(env) == 0, 180, f"the brake off once {partner} is Ready again")
            stopped = time.monotonic()
            deadline = stopped + RESTORED_WITHIN_SECONDS
            most_waiting = 0.0  # the most workloads of `home` the relay counted as waiting at one scrape
            while len(restored) < WORKLOADS and time.monotonic() < deadline:
                now = time.monotonic() - stopped
                for binding in env.api(KARMADA).list(resource_path(BINDINGS, "resourcebindings", namespace=namespace)):
                    name = binding["spec"]["resource"]["name"]
                    if binding["spec"].get("gracefulEvictionTasks") and name not in task_seen:
                        task_seen[name] = now
                for member in others:
                    for name, copy in copies(env, member, namespace).items():
                        if name not in restored and restore_path(copy):
                            restored[name] = (now, member, copy)
                if len(restored) < WORKLOADS:
                    waiting = relay_samples(env, "failover_relay_workloads_waiting")
                    most_waiting = max(
                        most_waiting, sum(v for labels, v in waiting.items() if ("member_cluster", home) in labels)
                    )
                time.sleep(POLL_SECONDS)
            total = time.monotonic() - stopped
            assert len(restored) == WORKLOADS, (
                f"{len(restored)}/{WORKLOADS} restored after {total:.0f} s; tasks for {len(task_seen)}"
            )

            # Each with its own state, each once: the copy first seen restored is the one that stays, alone.
            time.sleep(5)
            for job in jobs:
                _, member, first_copy = restored[job.name]
                labels = first_copy["metadata"]["labels"]
                assert labels[CLUSTER_JOB_ID_LABEL] == ids[job.name], f"{job.name} got another job's id"
                assert restore_path(first_copy) == newest[job.name], f"{job.name} restored from the wrong state"
                now_copy = job.copy_in(member) or {}
                assert now_copy.get("metadata", {}).get("uid") == first_copy["metadata"]["uid"], f"{job.name} twice"
                elsewhere = [m for m in others if m != member and job.copy_in(m) is not None]
                assert elsewhere == [], f"{job.name} also runs in {elsewhere}"
                moves = read_history(job.binding() or {}).moves
                assert [(m.kind, m.from_cluster) for m in moves] == [(CLUSTER_FAILOVER, home)], job.name
            for job in jobs:
                job.report_healthy(restored[job.name][1], new_job_id())
            env.wait_until(lambda: all(not job.eviction_tasks() for job in jobs), 60, "every eviction task ended")
            durations = relay_samples(env, "failover_relay_failover_phase_duration_seconds_count")
            # Every task was the relay's: the taint manager's eviction is off.
            evictions = relay_samples(env, "failover_relay_cluster_evictions_total").get((), 0.0) - evictions_before
            assert evictions == WORKLOADS, f"the relay wrote {evictions} cluster evictions for {WORKLOADS} jobs"
        finally:
            if env.member_pid(partner) is None:
                env.start_member(partner)
            env.start_member(home)
            if restored:  # moved away: what stayed in `home` is stale, and goes once it answers
                env.wait_until(lambda: not copies(env, home, namespace), 120, f"the stale copies in {home} deleted")

    assert most_waiting >= WORKLOADS / 2, f"at most {most_waiting} workloads counted as waiting"
    assert durations.get(total_key, 0) - totals_before == WORKLOADS, (totals_before, durations)
    tasks = list(task_seen.values())
    back = [at for at, _, _ in restored.values()]
    report(
        request,
        "karmada",
        f"storm: {WORKLOADS} stateful jobs on {home}; {home} and {partner} stopped together: braked, nothing moved in "
        f"{braked_seconds:.0f} s; {partner} back, the brake off: the relay's eviction task seen {percentiles(tasks)}; "
        f"restored elsewhere with its own checkpoint {percentiles(back)} after the brake came off; last one at "
        f"{max(back):.1f} s (failure threshold 30 s, status every 10 s, taint manager's eviction off, "
        f"fenceAfterSeconds 60)",
    )
