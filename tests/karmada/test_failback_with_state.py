"""Failback that moves the job back with its newest state and never two copies at once, with the usual
single-cluster placement (`clusterAffinity` + spread `maxGroups: 1`, where a WorkloadRebalancer alone leaves the
workload in place: the scheduler's ClusterLocality plugin scores the current cluster highest) and a member whose
apiserver is really stopped and started again."""

from __future__ import annotations

import time

import pytest

from failover.core.api import DEFAULT_JOB_ID_LABEL
from failover.moves.handoff import CHECKPOINT_FALLBACK, read_handoff
from tests.karmada.outages import CopyWatch, cluster_ready, events_of, recorded_state
from tests.karmada.workloads import FlinkJob, new_job_id, restore_path, stateful_policy
from tests.karmada_env import KarmadaEnv
from tests.reporting import report

pytestmark = pytest.mark.karmada

TOLERATION_SECONDS = 10
SETTLE_SECONDS = 5
OUTAGE_SECONDS = 45  # Karmada marks a stopped member not Ready after its 30 s failure threshold


@pytest.fixture
def quick_failback(karmada_env: KarmadaEnv):
    karmada_env.restart_relay({"controllers": {"failbackSettleSeconds": SETTLE_SECONDS}})
    yield
    karmada_env.restart_relay()


def test_failback_moves_the_job_back_with_its_newest_state_and_never_two_copies(
    karmada_env: KarmadaEnv, namespace: str, quick_failback: None, request: pytest.FixtureRequest
) -> None:
    env = karmada_env
    job = FlinkJob(env, namespace)
    policy = stateful_policy("flink", namespace, job.name, env.members, toleration_seconds=TOLERATION_SECONDS)
    policy["metadata"]["annotations"] = {"failover-relay.io/failback": "true"}
    job.create(policy)
    home = job.wait_placed()
    first_job = new_job_id()
    job.run_healthy(home, first_job)
    job.write_checkpoints(first_job, completed=(1,))

    job.report_unhealthy(home, first_job)
    away = env.wait_until(
        lambda: next((m for m in job.placed_on() if m != home and job.copy_in(m)), None),
        TOLERATION_SECONDS + 50,
        f"the failover away from {home}",
    )
    second_job = new_job_id()  # the restored job runs under a new id (Flink operator >= 1.10)
    job.run_healthy(away, second_job)
    checkpoints = job.write_checkpoints(second_job, completed=(6, 7))
    env.wait_until(
        lambda: not job.eviction_tasks() and second_job in recorded_state(job),
        30,
        "the failover over and the new job's state recorded",
    )

    with CopyWatch(job) as watch:
        env.stop_member(home)
        env.wait_until(lambda: not cluster_ready(env, home), OUTAGE_SECONDS + 30, f"{home} not Ready")
        env.start_member(home)
        env.wait_until(lambda: cluster_ready(env, home), 120, f"{home} Ready again")
        ready_at = time.monotonic()

        def back_home() -> dict | None:
            copy = job.copy_in(home) if job.placed_on() == [home] else None
            return copy if copy and copy["spec"]["job"].get("initialSavepointPath") else None

        copy = env.wait_until(back_home, SETTLE_SECONDS + 60, f"the job back on {home} with a restore path")
        seconds = time.monotonic() - ready_at
        env.wait_until(lambda: job.copy_in(away) is None, 30, f"the copy on {away} deleted")

    assert copy["metadata"]["labels"][DEFAULT_JOB_ID_LABEL] == second_job
    assert restore_path(copy) == checkpoints / "chk-7"
    assert copy["spec"]["job"]["upgradeMode"] == "savepoint"
    assert watch.overlaps == [], f"two copies at once: {watch.overlaps[:3]}"
    assert events_of(env, namespace, "FailbackTriggered")
    # No member relay watches the cluster it left: the move went from the newest completed checkpoint, and says why.
    handoff = read_handoff(job.binding() or {})
    assert handoff is not None and handoff.way == CHECKPOINT_FALLBACK, handoff
    assert f"no member relay watches {away}" in str(handoff.why)
    report(
        request,
        "karmada",
        f"failback {away} -> {home} (clusterAffinity, maxGroups 1): restored copy "
        f"{seconds:.1f} s after {home} was Ready again (failbackSettleSeconds {SETTLE_SECONDS}),"
        f" newest job's state, never two copies",
    )
