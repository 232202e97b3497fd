"""A WorkloadRebalancer: failover-relay stamps the binding, Karmada's scheduler really reschedules it, and the
rebalancer is finished and, with ttlSecondsAfterFinished, deleted (../shared/reference/real-karmada.md, scenario e;
Karmada's pkg/controllers/workloadrebalancer is off beside the relay)."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from failover.core.annotations import parse_time
from tests.karmada.workloads import FLINK, REBALANCERS, FlinkJob, new_job_id, stateful_policy
from tests.karmada_env import KARMADA, KarmadaEnv, resource_path
from tests.reporting import report

pytestmark = pytest.mark.karmada

TTL_SECONDS = 3


def rebalancer(name: str, job: FlinkJob, **spec: object) -> dict:
    return {
        "apiVersion": REBALANCERS,
        "kind": "WorkloadRebalancer",
        "metadata": {"name": name},
        "spec": {
            "workloads": [
                {"apiVersion": FLINK, "kind": "FlinkDeployment", "name": job.name, "namespace": job.namespace}
            ],
            **spec,
        },
    }


def test_rebalancer_is_stamped_and_karmada_reschedules(
    karmada_env: KarmadaEnv, namespace: str, request: pytest.FixtureRequest
) -> None:
    env = karmada_env
    karmada = env.api(KARMADA)
    job = FlinkJob(env, namespace)
    job.create(stateful_policy("flink", namespace, job.name, env.members))
    member = job.wait_placed()
    job.run_healthy(member, new_job_id())
    scheduled_before = parse_time(job.binding()["status"]["lastScheduledTime"])
    # API times have whole seconds: let the clock pass the first scheduling's second.
    time.sleep(1.1)

    created = karmada.create(resource_path(REBALANCERS, "workloadrebalancers"), rebalancer(f"{namespace}-once", job))
    created_at = time.monotonic()
    stamp = created["metadata"]["creationTimestamp"]

    def rescheduled() -> dict | None:
        binding = job.binding() or {}
        last = parse_time((binding.get("status") or {}).get("lastScheduledTime"))
        if binding["spec"].get("rescheduleTriggeredAt") == stamp and last and last >= parse_time(stamp):
            return binding
        return None

    binding = env.wait_until(rescheduled, 30, "rescheduleTriggeredAt stamped and lastScheduledTime past it")
    seconds = time.monotonic() - created_at
    assert parse_time(binding["status"]["lastScheduledTime"]) > scheduled_before

    finished = env.wait_until(
        lambda: (
            (karmada.get(resource_path(REBALANCERS, "workloadrebalancers", f"{namespace}-once")) or {})
            .get("status", {})
            .get("finishTime")
            and karmada.get(resource_path(REBALANCERS, "workloadrebalancers", f"{namespace}-once"))
        ),
        30,
        "the rebalancer finished",
    )
    assert [w["result"] for w in finished["status"]["observedWorkloads"]] == ["Successful"]
    # A single-cluster placement scores the current cluster highest (ClusterLocality): it stays.
    assert job.placed_on() == [member]

    karmada.create(
        resource_path(REBALANCERS, "workloadrebalancers"),
        rebalancer(f"{namespace}-ttl", job, ttlSecondsAfterFinished=TTL_SECONDS),
    )
    ttl_path = resource_path(REBALANCERS, "workloadrebalancers", f"{namespace}-ttl")
    finish_time = parse_time(
        env.wait_until(
            lambda: ((karmada.get(ttl_path) or {}).get("status") or {}).get("finishTime"),
            30,
            "the ttl rebalancer finished",
        )
    )
    env.wait_until(
        lambda: karmada.get(ttl_path) is None,
        TTL_SECONDS + 30,
        f"the rebalancer deleted {TTL_SECONDS} s after it finished",
    )
    deleted_after = (datetime.now(UTC) - finish_time).total_seconds()
    assert deleted_after >= TTL_SECONDS
    report(
        request,
        "karmada",
        f"rebalancer: stamped and rescheduled {seconds:.1f} s after create; "
        f"ttlSecondsAfterFinished {TTL_SECONDS}: deleted {deleted_after:.1f} s after finishTime",
    )
