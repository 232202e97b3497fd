"""Never none (issue 25 item 5), against real Karmada: a new copy that needs longer than tolerationSeconds 10 to come
up is kept and comes up (the default restore grace), and copies that never come up on three members are moved at most
as the budget allows and then kept on the last member, not evicted into no cluster (failover/reconcile/last_cluster.py).

Without these, the relay failed such a job over member1 -> member2 -> member3 and then evicted it from member3 too:
`spec.clusters: []`, three eviction tasks, the job running nowhere (Karmada's scheduler keeps a workload off every
cluster it is still being evicted from, `clustereviction/cluster_eviction.go`)."""

from __future__ import annotations

import ssl
import time
import urllib.request

import pytest

from failover.core.api import DEFAULT_JOB_ID_LABEL
from failover.reconcile.failover_budget import FAILOVERS_ANNOTATION
from failover.reconcile.last_cluster import EVENT_KEPT
from tests.karmada.outages import events_of
from tests.karmada.workloads import FlinkJob, new_job_id, restore_path
from tests.karmada_env import KarmadaEnv
from tests.reporting import report

pytestmark = pytest.mark.karmada

TOLERATION_SECONDS = 10
RESTORE_SECONDS = 60  # the target: a copy restoring for 60 s at tolerationSeconds 10
FAILOVER_TIMEOUT_SECONDS = TOLERATION_SECONDS + 60
SHORT_GRACE_SECONDS = 15  # the second test is about the last cluster, not the grace: keep its moves quick
HELD_SECONDS = 40  # longer than a toleration, a grace and the loop's recheck (last_cluster.RECHECK) together


def restoring(job: FlinkJob, member: str) -> None:
    """The copy in `member` as the Flink operator reports a job still restoring: RECONCILING, no error (Karmada's
    FlinkDeployment health calls that Unhealthy)."""
    job.report(member, "RECONCILING", None)


def kept_gauge(env: KarmadaEnv, member: str) -> float | None:
    """failover_relay_workloads_kept_on_last_cluster{member_cluster=member} as the relay's /metrics serves it."""
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # the tier's relay has its own CA
    with urllib.request.urlopen(f"{env.relay_url}/metrics", context=context, timeout=10) as response:
        text = response.read().decode()
    prefix = f'failover_relay_workloads_kept_on_last_cluster{{member_cluster="{member}"}} '
    return next((float(line[len(prefix) :]) for line in text.splitlines() if line.startswith(prefix)), None)


def test_a_copy_restoring_longer_than_the_toleration_is_kept_and_comes_up(
    karmada_env: KarmadaEnv, namespace: str, request: pytest.FixtureRequest
) -> None:
    env = karmada_env
    job = FlinkJob(env, namespace)
    first, job_id = job.start_stateful(TOLERATION_SECONDS)
    checkpoints = job.write_checkpoints(job_id, completed=(3,))
    job.report_unhealthy(first, job_id)
    failed_at = time.monotonic()
    second, copy = job.wait_restored_outside(first, timeout=FAILOVER_TIMEOUT_SECONDS)
    moved = time.monotonic() - failed_at
    assert restore_path(copy) == checkpoints / "chk-3"

    restoring(job, second)
    job.wait_health(second, "Unhealthy")  # Karmada counts the restoring copy Unhealthy: the grace is what keeps it
    restore_started = time.monotonic()
    while time.monotonic() - restore_started < RESTORE_SECONDS:
        assert job.placed_on() == [second], (
            f"the restoring copy was failed over after {time.monotonic() - restore_started:.0f} s"
        )
        assert job.copy_in(second) is not None
        assert [task["fromCluster"] for task in job.eviction_tasks()] == [first]
        time.sleep(2)

    job.run_healthy(second, new_job_id())
    env.wait_until(lambda: not job.eviction_tasks(), 30, "the failover over once the copy runs")
    assert job.placed_on() == [second] and job.copy_in(second)["metadata"]["labels"][DEFAULT_JOB_ID_LABEL] == job_id
    assert job.copy_in(first) is None
    report(
        request,
        "karmada",
        f"restore grace: {first} -> {second} in {moved:.1f} s; the copy restored for {RESTORE_SECONDS} s at"
        f" tolerationSeconds {TOLERATION_SECONDS}, kept, and came up on {second}",
    )


@pytest.fixture
def short_restore_grace(karmada_env: KarmadaEnv):
    karmada_env.restart_relay({"controllers": {"restoreGraceSeconds": SHORT_GRACE_SECONDS}})
    yield
    karmada_env.restart_relay()


def test_copies_that_never_come_up_move_within_the_budget_then_stay_on_the_last_member(
    karmada_env: KarmadaEnv, namespace: str, short_restore_grace: None, request: pytest.FixtureRequest
) -> None:
    env = karmada_env
    job = FlinkJob(env, namespace)
    first, job_id = job.start_stateful(TOLERATION_SECONDS)
    job.write_checkpoints(job_id, completed=(5,))
    job.report_unhealthy(first, job_id)
    started = time.monotonic()
    moves = [first]
    for _ in range(2):  # a copy that never comes up: restoring for ever
        member, _copy = job.wait_restored_outside(*moves, timeout=FAILOVER_TIMEOUT_SECONDS + SHORT_GRACE_SECONDS)
        moves.append(member)
        restoring(job, member)
    timings = f"moved {' -> '.join(moves)} in {time.monotonic() - started:.0f} s"
    last = moves[-1]

    event = env.wait_until(
        lambda: events_of(env, namespace, EVENT_KEPT),
        TOLERATION_SECONDS + SHORT_GRACE_SECONDS + 60,
        f"a {EVENT_KEPT} event",
    )
    kept_after = time.monotonic() - started
    held_from = time.monotonic()
    while time.monotonic() - held_from < HELD_SECONDS:
        assert job.placed_on() == [last], "the workload left its last member"
        assert job.copy_in(last) is not None, f"the copy on {last} was deleted"
        assert sorted(task["fromCluster"] for task in job.eviction_tasks()) == sorted(moves[:-1])
        time.sleep(2)
    failovers = (job.binding() or {})["metadata"]["annotations"][FAILOVERS_ANNOTATION]
    assert failovers.count("Z") == 2, failovers  # two moves, within the default budget of three
    assert kept_gauge(env, last) == 1.0
    assert last in event[0]["message"] and "still being evicted from" in event[0]["message"]
    report(
        request,
        "karmada",
        f"never none: {timings}; kept on {last} from {kept_after:.0f} s with {EVENT_KEPT}, held {HELD_SECONDS} s"
        f" on 1 cluster (gauge 1)",
    )
