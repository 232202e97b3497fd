"""A planned move measured in records, against real Karmada and a real Flink job: today's move (a NoExecute taint, the
taint manager's Directly eviction, the new copy from the newest completed checkpoint) beside the relay's failback by
savepoint handoff (docs/design.md, "Planned moves"), in the same run.

The job runs on `home` (ordered clusterAffinities: home first). A NoExecute taint on home moves it to `away` as Karmada
does today: the old copy is deleted (its real job killed as the operator cancels it) and the new one restores the
newest completed checkpoint, so what the old job counted after it is counted twice. The taint comes off, home has
settled, and the relay fails the job back: it writes a fence record for the copy on away, the member relay of away
suspends it, the operator (played by `FlinkOperator`, stopping the real job with a real savepoint, leaving its
JobManager up as 1.16 does) reports the savepoint, the member relay stops the JobManager and acknowledges, and only
then the relay writes the failback eviction; Karmada deletes the stopped copy and creates the new one on home, which
Flink restores from exactly that savepoint: nothing lost, nothing counted twice.
"""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import urlparse

import pytest

from failover.reconcile.handoff import DONE, SAVEPOINT, read_handoff
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
)
from tests.karmada.records import FLINK_CONFIGURATION, FLINK_VERSION, KEYS, RATE, check_records
from tests.karmada.workloads import FlinkJob, restore_path
from tests.karmada_env import KARMADA, KarmadaEnv, resource_path
from tests.reporting import report

pytestmark = pytest.mark.karmada

SETTLE_SECONDS = 5
TAINT = {"key": "failover.example.io/drain", "value": "true", "effect": "NoExecute"}


@pytest.fixture
def failback_with_member_relay(karmada_env: KarmadaEnv):
    """Failback after 5 s of settling, and the member relay of the second member (where the job is moved away to)."""
    away = karmada_env.members[1]
    grant_fencing_in_members(karmada_env)
    karmada_env.start_member_relay(away)
    karmada_env.restart_relay({"controllers": {"failbackSettleSeconds": SETTLE_SECONDS}})
    yield
    karmada_env.restart_relay()
    karmada_env.stop_member_relay(away)


def local(path: str | Path | None) -> Path | None:
    """`file:/x`, `file:///x` and `/x` as one local path."""
    return None if path is None else Path(urlparse(str(path)).path)


def test_a_failback_hands_the_job_over_by_savepoint_with_nothing_lost_or_counted_twice(
    karmada_env: KarmadaEnv,
    namespace: str,
    failback_with_member_relay: None,
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
        tainted_at = time.monotonic()
        env.wait_until(lambda: job.copy_in(home) is None, 60, f"the copy in {home} deleted")
        cancelled_at, cancelled = time.time(), time.monotonic()
        first.kill()
        second_member, copy = job.wait_restored_outside(home, timeout=60)
        assert second_member == away
        restored_checkpoint = restore_path(copy)
        flink_jobs.append(second := job.run_flink(away, probe, tmp_path / "second", KEYS, RATE))
        running[away] = second
        taint_move, taint_downtime = second.arrived["running"][0] - tainted_at, second.arrived["running"][0] - cancelled
        env.wait_until(lambda: len(second.completed()) >= 2, 60, "two checkpoints of the second job")

        # The planned move back: the taint comes off, home settles, the relay hands the job over by savepoint.
        karmada.patch(cluster_path, {"spec": {"taints": taints}})
        untainted_at = time.monotonic()
        env.wait_until(lambda: away in operator.suspended_at, SETTLE_SECONDS + 60, f"the copy on {away} suspended")
        stop_began = operator.stopping_at[away]
        third_member = env.wait_until(
            lambda: home if job.copy_in(home) and restore_path(job.copy_in(home)) else None,
            60,
            f"the copy back on {home} with a restore path",
        )
        back_seen = time.monotonic()
        third_copy = job.copy_in(third_member)
        flink_jobs.append(third := job.run_flink(home, probe, tmp_path / "third", KEYS, RATE))
        env.wait_until(lambda: job.copy_in(away) is None, 30, f"the copy on {away} deleted")
        done = env.wait_until(
            lambda: (h := read_handoff(job.binding() or {})) is not None and h.phase == DONE and h,
            30,
            "the handoff done",
        )

    # Today's move: from the newest completed checkpoint, what the first job counted after it counted twice.
    today = check_records(first, second, restored_checkpoint, cancelled_at)
    # The handoff: the new copy restores exactly the savepoint the stopped job took.
    savepoint = local(second.arrived["stopped-with-savepoint"][1]["path"])
    assert local(str(restore_path(third_copy))) == savepoint == local(operator.savepoint(away))
    assert done.way == SAVEPOINT and local(done.savepoint) == savepoint
    # Flink's own reading of the savepoint: the snapshot whose counts the new job must have restored.
    [loaded] = probe.metadata({}, str(savepoint)).values()
    first_record, counts = third.restored()
    assert counts == expected_counts(second.expected_dir, loaded["checkpointId"])
    before, after = second.records(), third.records()
    assert before == list(range(before[0], before[0] + len(before)))  # the second job counted without a gap
    assert after == list(range(first_record, first_record + len(after)))
    # The third job goes on right after the second job's last record: nothing lost, nothing counted twice.
    assert first_record == before[-1] + 1, f"the second job counted up to {before[-1]}, the third from {first_record}"
    assert watch.overlaps == [], f"two copies at once: {watch.overlaps[:3]}"
    assert fence_files(env, away) == [], "the handoff's fence record left behind"
    assert events_of(env, namespace, "PlannedMoveHandoff")

    stopped = second.arrived["stopped-with-savepoint"][0]
    new_running = third.arrived["running"][0]
    report(
        request,
        "karmada",
        f"planned move today ({home} -> {away}, NoExecute taint, real Flink {FLINK_VERSION}, checkpoint every 2 s):"
        f" 0 records lost, {today.twice} counted twice (restored chk-{today.checkpoint},"
        f" {today.state_age:.2f} s older than the cancel); downtime {taint_downtime:.1f} s from the old job cancelled"
        f" to the new job RUNNING ({taint_move:.1f} s from the taint)",
    )
    report(
        request,
        "karmada",
        f"failback by savepoint handoff ({away} -> {home}): 0 records lost, 0 counted twice (restored"
        f" {savepoint.name}); stop began {stop_began - untainted_at:.1f} s after the taint came off"
        f" (failbackSettleSeconds {SETTLE_SECONDS}); downtime {new_running - stopped:.1f} s from the old job stopped"
        f" to the new job RUNNING: savepoint {stopped - stop_began:.1f} s (suspend to stopped), Karmada"
        f" {back_seen - stopped:.1f} s (stopped to the new copy on {home}), Flink start"
        f" {new_running - back_seen:.1f} s",
    )
