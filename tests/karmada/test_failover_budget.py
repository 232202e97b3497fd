"""No ping-pong (issue 12 point 8): with a failover budget of one per window, a second application failover is held
back with an event, while Karmada's scheduler and controllers see no eviction task."""

from __future__ import annotations

import time

import pytest

from tests.karmada.outages import events_of
from tests.karmada.workloads import FlinkJob, new_job_id
from tests.karmada_env import KarmadaEnv
from tests.reporting import report

pytestmark = pytest.mark.karmada

TOLERATION_SECONDS = 5
HELD_SECONDS = 15  # three tolerations: a second failover would have happened by then


@pytest.fixture
def budget_of_one(karmada_env: KarmadaEnv):
    karmada_env.restart_relay({"controllers": {"failoverBudget": 1}})
    yield
    karmada_env.restart_relay()


def test_a_spent_budget_holds_the_next_failover_back_and_says_so(
    karmada_env: KarmadaEnv, namespace: str, budget_of_one: None, request: pytest.FixtureRequest
) -> None:
    env = karmada_env
    job = FlinkJob(env, namespace)
    first, job_id = job.start_stateful(TOLERATION_SECONDS)
    job.report_unhealthy(first, job_id)
    second = env.wait_until(
        lambda: next((m for m in job.placed_on() if m != first and job.copy_in(m)), None),
        60,
        f"the failover away from {first}",
    )
    job.run_healthy(second, new_job_id())
    env.wait_until(lambda: not job.eviction_tasks(), 30, "the first failover over")

    job.report_unhealthy(second, None)
    unhealthy_at = time.monotonic()
    event = env.wait_until(lambda: events_of(env, namespace, "FailoverHeldBack"), 60, "a FailoverHeldBack event")
    time.sleep(max(0.0, HELD_SECONDS - (time.monotonic() - unhealthy_at)))
    assert job.placed_on() == [second] and job.eviction_tasks() == []
    assert "failoverBudget" in event[0]["message"]
    report(request, "karmada", f"failover budget 1: the second failover held back ({event[0]['message'][:90]}…)")
