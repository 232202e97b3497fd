"""Planned moves measured in records, against real Karmada and a real Flink job: today's move (a NoExecute taint, the
taint manager's Directly eviction, the new copy from the newest completed checkpoint) beside the relay's savepoint
handoffs (docs/design.md, "Planned moves") — a failback, a drain and the failback after the undrain — in one run.

The job runs on `home` (ordered clusterAffinities: home first). A NoExecute taint on home moves it to `away` as Karmada
does today: the old copy is deleted (its real job killed as the operator cancels it) and the new one restores the
newest completed checkpoint, so what the old job counted after it is counted twice. Then every move is a handoff: the
relay writes a fence record for the copy it moves, the member relay suspends it, the operator (`FlinkOperator`, which
stops the real job with Flink's stop-with-savepoint and leaves its JobManager up as 1.16 does) reports the savepoint,
the member relay stops the JobManager and acknowledges, and only then the relay writes the eviction; Karmada deletes
the stopped copy and creates the new one, which Flink restores from exactly that savepoint: nothing lost, nothing
counted twice. The taint comes off and home settles: failback to home. `failover-relay drain home` (as an operator
runs it), with the relay restarted while the copy stops: the job moves to away. `failover-relay undrain home`:
failback to home again. A last drain whose savepoint fails (the operator keeps the job running) falls back after
`handoffTimeoutSeconds` to the move from the newest completed checkpoint, and says why. Last, with failback turned
off and home undrained, a WorkloadRebalancer: the scheduler would place the job on home afresh, so the rebalance
hands it over by savepoint too.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import pytest

from failover.moves.cluster_drain import is_drained
from failover.moves.handoff import CHECKPOINT_FALLBACK, DONE, SAVEPOINT, read_handoff
from failover.state.restoration import restoring
from tests.flink_job import Probe, RunningJob, expected_counts
from tests.karmada.operator import FlinkOperator
from tests.karmada.outages import (
    CLUSTERS,
    SAVEPOINT_JOB,
    CopyWatch,
    events_of,
    fence_files,
    grant_fencing_in_members,
    prefer_home,
    stateful_cluster_policy,
    taint_not_ready_clusters,
)
from tests.karmada.records import FLINK_CONFIGURATION, FLINK_VERSION, KEYS, RATE, check_records
from tests.karmada.workloads import FLINK, POLICIES, REBALANCERS, FlinkJob, relay_command, restore_path
from tests.karmada_env import KARMADA, REPO_ROOT, KarmadaEnv, resource_path
from tests.reporting import report

pytestmark = pytest.mark.karmada

SETTLE_SECONDS = 5
TAINT = {"key": "failover.example.io/outage", "value": "true", "effect": "NoExecute"}
MOVE_SECONDS = 60  # a handoff here takes seconds; the bound leaves room for a loaded machine
# A handoff here is acknowledged within seconds; a savepoint that fails is given up on after this.
HANDOFF_TIMEOUT_SECONDS = 20
RELAY_CONFIG = {
    "controllers": {"failbackSettleSeconds": SETTLE_SECONDS, "handoffTimeoutSeconds": HANDOFF_TIMEOUT_SECONDS}
}


@pytest.fixture
def member_relays(karmada_env: KarmadaEnv):
    """Failback after 5 s of settling, and the member relays of the two members the job moves between."""
    members = karmada_env.members[:2]
    grant_fencing_in_members(karmada_env)
    for member in members:
        karmada_env.start_member_relay(member)
    karmada_env.restart_relay(RELAY_CONFIG)
    yield
    karmada_env.restart_relay()
    for member in members:
        karmada_env.stop_member_relay(member)


def local(path: str | Path | None) -> Path | None:
    """`file:/x`, `file:///x` and `/x` as one local path."""
    return None if path is None else Path(urlparse(str(path)).path)


@dataclass
class Handoff:
    """One planned move by savepoint, as the test saw it: the jobs, the savepoint, and when each part ended."""

    old: RunningJob
    new: RunningJob
    savepoint: Path
    stop_began: float  # the operator began the suspension's savepoint (monotonic)
    stopped: float  # the old job ended with its savepoint
    new_copy: float  # the new copy, with its restore path, first seen
    running: float  # the new job RUNNING

    def line(self, what: str) -> str:
        return (
            f"{what}: 0 records lost, 0 counted twice (restored {self.savepoint.name}); downtime"
            f" {self.running - self.stopped:.1f} s from the old job stopped to the new job RUNNING: savepoint"
            f" {self.stopped - self.stop_began:.1f} s, Karmada {self.new_copy - self.stopped:.1f} s (the"
            f" acknowledgement, the eviction, the old copy deleted, the new one created), Flink start"
            f" {self.running - self.new_copy:.1f} s"
        )


def settled(job: FlinkJob) -> bool:
    """No move of the job under way (no eviction task) and its copy restored (checkpointed since its restore, so the
    relay keeps no restoring record): a drill starts only then."""
    binding = job.binding() or {}
    return not (binding.get("spec") or {}).get("gracefulEvictionTasks") and not restoring(binding)


def handed_over(
    job: FlinkJob,
    operator: FlinkOperator,
    running: dict[str, RunningJob],
    source: str,
    target: str,
    probe: Probe,
    run_dir: Path,
    flink_jobs: list[RunningJob],
) -> Handoff:
    """Wait for the handoff of the job from `source` to `target`, start the new copy's job, and check the records:
    Flink restored the savepoint's counts, and the new job goes on from the old job's last record + 1."""
    old = running[source]
    copy = job.env.wait_until(
        lambda: (c := job.copy_in(target)) is not None and restore_path(c) is not None and c,
        MOVE_SECONDS,
        f"the copy on {target} with a restore path",
    )
    new_copy = time.monotonic()
    flink_jobs.append(new := job.run_flink(target, probe, run_dir, KEYS, RATE))
    running[target] = new
    job.env.wait_until(lambda: job.copy_in(source) is None, 30, f"the copy on {source} deleted")
    stopped, event = old.arrived["stopped-with-savepoint"]
    savepoint = local(event["path"])
    assert savepoint is not None
    # The new copy restores exactly the savepoint the stopped job took, which the member relay acknowledged.
    assert local(str(restore_path(copy))) == savepoint == local(operator.savepoint(source))
    handoff = job.env.wait_until(
        lambda: (h := read_handoff(job.binding() or {})) is not None and h.phase == DONE and h, 30, "the handoff done"
    )
    assert handoff.way == SAVEPOINT and local(handoff.savepoint) == savepoint
    # Flink's own reading of the savepoint: the snapshot whose counts the new job must have restored.
    [loaded] = probe.metadata({}, str(savepoint)).values()
    first_record, counts = new.restored()
    assert counts == expected_counts(old.expected_dir, loaded["checkpointId"])
    before, after = old.records(), new.records()
    assert before == list(range(before[0], before[0] + len(before)))  # the old job counted without a gap
    assert after == list(range(first_record, first_record + len(after)))
    # The new job goes on right after the old job's last record: nothing lost, nothing counted twice.
    assert first_record == before[-1] + 1, f"the old job counted up to {before[-1]}, the new one from {first_record}"
    assert fence_files(job.env, source) == [], "the handoff's fence record left behind"
    return Handoff(old, new, savepoint, operator.stopping_at[source], stopped, new_copy, new.arrived["running"][0])


def test_planned_moves_hand_the_job_over_by_savepoint_with_nothing_lost_or_counted_twice(
    karmada_env: KarmadaEnv,
    namespace: str,
    member_relays: None,
    request: pytest.FixtureRequest,
    flink_probes: Path,
    flink_jobs: list[RunningJob],
    tmp_path: Path,
) -> None:
    env = karmada_env
    home, away = env.members[0], env.members[1]
    probe = Probe.of(flink_probes, FLINK_VERSION)
    job = FlinkJob(env, namespace)
    policy = prefer_home(
        stateful_cluster_policy("flink", namespace, job.name, env.members, toleration_seconds=300),
        home,
        [m for m in env.members if m != home],
    )
    policy["metadata"]["annotations"] = {"failover-relay.io/failback": "true"}
    job.create(policy, spec={"job": SAVEPOINT_JOB}, flink_configuration=FLINK_CONFIGURATION)
    assert job.wait_placed() == home
    running: dict[str, RunningJob] = {}
    with FlinkOperator(job, env.members, flink=running) as operator, CopyWatch(job) as watch:
        flink_jobs.append(first := job.run_flink(home, probe, tmp_path / "first", KEYS, RATE))
        running[home] = first
        env.wait_until(lambda: len(first.completed()) >= 2, 60, "two checkpoints of the first job")

        # Today's planned move: a NoExecute taint; Karmada deletes the copy, the operator cancels its job.
        karmada = env.api(KARMADA)
        cluster_path = resource_path(CLUSTERS, "clusters", home)
        taints = list((karmada.get(cluster_path) or {}).get("spec", {}).get("taints") or [])
        karmada.patch(cluster_path, {"spec": {"taints": [*taints, TAINT]}})
        env.wait_until(lambda: job.copy_in(home) is None, 60, f"the copy in {home} deleted")
        cancelled_at, cancelled = time.time(), time.monotonic()
        first.kill()
        second_member, copy = job.wait_restored_outside(home, timeout=60)
        assert second_member == away
        restored_checkpoint = restore_path(copy)
        flink_jobs.append(second := job.run_flink(away, probe, tmp_path / "second", KEYS, RATE))
        running[away] = second
        today_downtime = second.arrived["running"][0] - cancelled
        env.wait_until(lambda: len(second.completed()) >= 2, 60, "two checkpoints of the second job")

        # Failback: the taint comes off, home settles, the relay hands the job over by savepoint.
        karmada.patch(cluster_path, {"spec": {"taints": taints}})
        failback = handed_over(job, operator, running, away, home, probe, tmp_path / "third", flink_jobs)
        env.wait_until(lambda: len(failback.new.completed()) >= 2, 60, "two checkpoints of the third job")

        # Drain, as an operator runs it: first what it would do, then the drain, followed to its end.
        dry_run = subprocess.run(
            relay_command(env, "drain", home, "--dry-run"), capture_output=True, text=True, timeout=60, cwd=REPO_ROOT
        )
        assert dry_run.returncode == 0, dry_run.stderr
        assert f"{namespace}/{job.binding_name}: savepoint handoff" in dry_run.stdout, dry_run.stdout
        drain = subprocess.Popen(
            relay_command(env, "drain", home, "--timeout", "120", "--interval", "1"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO_ROOT,
        )
        # The relay restarts while the copy is stopping: the next leader reads the handoff from the binding and
        # carries it on.
        env.wait_until(lambda: home in operator.stopping_at, MOVE_SECONDS, f"the copy on {home} stopping")
        env.restart_relay(RELAY_CONFIG)
        drained = handed_over(job, operator, running, home, away, probe, tmp_path / "fourth", flink_jobs)
        drain_out, drain_err = drain.communicate(timeout=60)
        assert drain.returncode == 0, drain_out + drain_err
        assert f"cluster {home} drained: 1 moved, 0 stay" in drain_out, drain_out
        assert "stopping with savepoint" in drain_out and "moved, by savepoint" in drain_out, drain_out
        env.wait_until(lambda: len(drained.new.completed()) >= 2, 60, "two checkpoints of the fourth job")

        # Undrain: failback brings the job home, by savepoint again.
        undrain = subprocess.run(
            relay_command(env, "undrain", home), capture_output=True, text=True, timeout=60, cwd=REPO_ROOT
        )
        assert undrain.returncode == 0, undrain.stderr
        home_again = handed_over(job, operator, running, away, home, probe, tmp_path / "fifth", flink_jobs)
        env.wait_until(lambda: len(home_again.new.completed()) >= 2, 60, "two checkpoints of the fifth job")

        # A savepoint that fails: the operator keeps the job running, nothing acknowledges, and after
        # handoffTimeoutSeconds the drain moves the job from the newest completed checkpoint, and says why.
        operator.refuse_savepoint.add(home)
        refused = subprocess.Popen(
            relay_command(env, "drain", home, "--timeout", "120", "--interval", "1"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO_ROOT,
        )
        fifth = running[home]
        env.wait_until(lambda: home in operator.savepoint_failed_at, MOVE_SECONDS, "the savepoint failing")
        env.wait_until(lambda: job.copy_in(home) is None, HANDOFF_TIMEOUT_SECONDS + MOVE_SECONDS, "the fallback")
        fallback_killed_at = time.time()
        fifth.kill()  # the operator cancels the job of the deleted copy
        waited = time.monotonic() - operator.savepoint_failed_at[home]
        _, fallback_copy = job.wait_restored_outside(home, timeout=MOVE_SECONDS)
        fallback_restored = restore_path(fallback_copy)
        flink_jobs.append(sixth := job.run_flink(away, probe, tmp_path / "sixth", KEYS, RATE))
        running[away] = sixth
        refused_out, refused_err = refused.communicate(timeout=60)
        assert refused.returncode == 0, refused_out + refused_err
        fallback = read_handoff(job.binding() or {})
        assert fallback is not None and fallback.way == CHECKPOINT_FALLBACK, fallback
        assert fallback.why == f"no savepoint within {HANDOFF_TIMEOUT_SECONDS} s", fallback.why
        assert f"from the newest checkpoint (no savepoint within {HANDOFF_TIMEOUT_SECONDS} s)" in refused_out
        env.wait_until(lambda: len(sixth.completed()) >= 2, 60, "two checkpoints of the sixth job")

        # A WorkloadRebalancer: with failback turned off for the policy and home undrained, the scheduler would place
        # the job on home afresh (its first affinity term), so the rebalance hands it over by savepoint.
        karmada.patch(
            resource_path(POLICIES, "propagationpolicies", "flink", namespace),
            {"metadata": {"annotations": {"failover-relay.io/failback": "false"}}},
        )
        undrained = subprocess.run(
            relay_command(env, "undrain", home), capture_output=True, text=True, timeout=60, cwd=REPO_ROOT
        )
        assert undrained.returncode == 0, undrained.stderr
        env.wait_until(lambda: not is_drained(karmada.get(cluster_path)), 30, f"{home} undrained")
        karmada.create(
            resource_path(REBALANCERS, "workloadrebalancers"),
            {
                "apiVersion": REBALANCERS,
                "kind": "WorkloadRebalancer",
                "metadata": {"name": f"{namespace}-home"},
                "spec": {
                    "workloads": [
                        {"apiVersion": FLINK, "kind": "FlinkDeployment", "name": job.name, "namespace": namespace}
                    ]
                },
            },
        )
        rebalanced = handed_over(job, operator, running, away, home, probe, tmp_path / "seventh", flink_jobs)
        rebalancer = karmada.get(resource_path(REBALANCERS, "workloadrebalancers", f"{namespace}-home")) or {}
        assert [w.get("result") for w in rebalancer.get("status", {}).get("observedWorkloads") or []] == ["Successful"]
        env.wait_until(lambda: settled(job), 60, "the rebalance's eviction task ended and the copy restored")

        operator.refuse_savepoint.discard(home)  # the operator takes savepoints on home again
        # A drill, as a team runs it: the readiness check first (with the ClusterTaintPolicy a dead cluster needs),
        # then the job moved where a failover would put it and back, each way by savepoint.
        with taint_not_ready_clusters(env):
            dry = subprocess.run(
                relay_command(env, "drill", f"{namespace}/{job.name}"),
                capture_output=True,
                text=True,
                timeout=60,
                cwd=REPO_ROOT,
            )
            assert dry.returncode == 0 and f"would move {namespace}/{job.name} off {home}" in dry.stdout, (
                dry.stdout + dry.stderr
            )
            drill = subprocess.Popen(
                relay_command(env, "drill", f"{namespace}/{job.name}", "--yes", "--timeout", "120", "--interval", "1"),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                cwd=REPO_ROOT,
            )
            try:
                drilled_out = handed_over(job, operator, running, home, away, probe, tmp_path / "eighth", flink_jobs)
                drilled_back = handed_over(job, operator, running, away, home, probe, tmp_path / "ninth", flink_jobs)
            except BaseException as error:
                drill.kill()
                raise AssertionError(f"the drill said: {''.join(drill.communicate())}") from error
            drill_out, drill_err = drill.communicate(timeout=120)
        assert drill.returncode == 0, drill_out + drill_err
        assert f"drill {namespace}/{job.name}: {home} -> {away} -> {home}" in drill_out, drill_out
        for leg in (drilled_out, drilled_back):
            assert str(leg.savepoint) in drill_out, drill_out  # the report names the savepoint each way restored
        assert drill_out.count("the new copy restored") == 2, drill_out

    # Today's move: from the newest completed checkpoint, what the first job counted after it counted twice.
    today = check_records(first, second, restored_checkpoint, cancelled_at)
    assert today.twice > 0
    # The move that fell back: the fifth job (itself restored from a savepoint) counted on after the newest
    # checkpoint until its copy was deleted; the sixth restored that checkpoint: nothing lost, that much twice.
    assert fallback_restored is not None and fallback_restored.name.startswith("chk-")
    first_record, counts = sixth.restored()
    assert counts == expected_counts(fifth.expected_dir, int(fallback_restored.name.removeprefix("chk-")))
    before, after = fifth.records(), sixth.records()
    assert before == list(range(before[0], before[0] + len(before)))
    assert after == list(range(first_record, first_record + len(after)))
    assert before[0] <= first_record <= before[-1] + 1, "records lost"
    refused_twice = before[-1] + 1 - first_record
    refused_age = (
        fallback_killed_at - (fifth.expected_dir / fallback_restored.name.removeprefix("chk-")).stat().st_mtime
    )
    assert watch.overlaps == [], f"two copies at once: {watch.overlaps[:3]}"
    assert len(events_of(env, namespace, "PlannedMoveHandoff")) >= 3
    assert events_of(env, namespace, "DrainMove")
    report(
        request,
        "karmada",
        f"planned move today ({home} -> {away}, NoExecute taint, real Flink {FLINK_VERSION}, checkpoint every 2 s):"
        f" 0 records lost, {today.twice} counted twice (restored chk-{today.checkpoint},"
        f" {today.state_age:.2f} s older than the cancel); downtime {today_downtime:.1f} s from the old job cancelled"
        f" to the new job RUNNING",
    )
    report(request, "karmada", failback.line(f"failback by savepoint handoff ({away} -> {home})"))
    report(request, "karmada", drained.line(f"failover-relay drain {home} ({home} -> {away})"))
    report(request, "karmada", home_again.line(f"failover-relay undrain {home}, failback ({away} -> {home})"))
    report(request, "karmada", rebalanced.line(f"WorkloadRebalancer ({away} -> {home})"))
    report(request, "karmada", drilled_out.line(f"failover-relay drill, out ({home} -> {away})"))
    report(request, "karmada", drilled_back.line(f"failover-relay drill, back ({away} -> {home})"))
    report(request, "karmada", "failover-relay drill's report: " + " | ".join(drill_out.strip().splitlines()[-8:]))
    report(
        request,
        "karmada",
        f"failover-relay drain {home} with the savepoint failing: the copy ran on, the move went from the newest"
        f" checkpoint {waited:.1f} s after the failure (handoffTimeoutSeconds {HANDOFF_TIMEOUT_SECONDS}): 0 records"
        f" lost, {refused_twice} counted twice (restored {fallback_restored.name}, {refused_age:.2f} s older than the"
        f" cancel)",
    )
