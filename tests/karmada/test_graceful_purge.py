"""purgeMode Gracefully: Karmada keeps the old copy while the eviction task lasts, and failover-relay ends the task
once the new copy is healthy, so the old copy goes only then (../shared/reference/real-karmada.md, scenario j;
Karmada's ObtainBindingSpecExistingClusters keeps the clusters of non-Directly tasks)."""

from __future__ import annotations

import time

import pytest

from tests.karmada.workloads import FlinkJob, new_job_id, stateful_policy
from tests.karmada_env import KarmadaEnv
from tests.reporting import report

pytestmark = pytest.mark.karmada

TOLERATION_SECONDS = 10
GRACE_PERIOD_SECONDS = 120
# How long the old copy must survive beside an unhealthy new one: well past Karmada's requeues (5 s).
KEPT_SECONDS = 8


def test_gracefully_keeps_the_old_copy_until_the_new_one_is_healthy(
    karmada_env: KarmadaEnv, namespace: str, request: pytest.FixtureRequest
) -> None:
    env = karmada_env
    job = FlinkJob(env, namespace)
    policy = stateful_policy(
        "flink",
        namespace,
        job.name,
        env.members,
        toleration_seconds=TOLERATION_SECONDS,
        purge_mode="Gracefully",
        gracePeriodSeconds=GRACE_PERIOD_SECONDS,
    )
    # failover-relay refuses statePreservation with Gracefully (Karmada would never inject it): no state here.
    del policy["spec"]["failover"]["application"]["statePreservation"]
    job.create(policy)
    first = job.wait_placed()
    job_id = new_job_id()
    job.run_healthy(first, job_id)

    job.report_unhealthy(first, job_id)
    second = env.wait_until(
        lambda: next((m for m in job.placed_on() if m != first and job.copy_in(m)), None),
        TOLERATION_SECONDS + 50,
        f"a new copy outside {first}",
    )

    time.sleep(KEPT_SECONDS)
    assert job.copy_in(first) is not None, "the old copy must stay while the new one is not healthy"
    assert job.work(first) is not None
    assert [task["fromCluster"] for task in job.eviction_tasks()] == [first]

    job.report_healthy(second, new_job_id())
    healthy_at = time.monotonic()
    env.wait_until(lambda: job.copy_in(first) is None, 30, f"the old copy in {first} deleted")
    seconds = time.monotonic() - healthy_at

    assert job.eviction_tasks() == []
    assert job.placed_on() == [second]
    report(
        request,
        "karmada",
        f"Gracefully: old copy in {first} kept {KEPT_SECONDS} s beside the unhealthy new one, "
        f"removed {seconds:.1f} s after the new one reported Healthy",
    )
