"""failover-relay restarted while the toleration runs: Karmada evicts at the time the relay recorded, not a full
toleration after the restart (../shared/reference/real-karmada.md, scenario c). Karmada's own controller keeps the
timer in memory (applicationfailover/common.go workloadUnhealthyMap) and starts it again from zero."""

from __future__ import annotations

import time

import pytest

from failover.core.annotations import parse_time, read_time_annotation
from failover.reconcile.application_failover import UNHEALTHY_SINCE_ANNOTATION
from tests.karmada.workloads import FlinkJob
from tests.karmada_env import KarmadaEnv
from tests.reporting import report

pytestmark = pytest.mark.karmada

TOLERATION_SECONDS = 30
RESTART_AFTER_SECONDS = 8
# API timestamps have whole seconds: the recorded start and the task's creation are each up to 1 s early.
CLOCK_SLACK_SECONDS = 3


def test_relay_restart_keeps_the_toleration_timer(
    karmada_env: KarmadaEnv, namespace: str, request: pytest.FixtureRequest
) -> None:
    env = karmada_env
    job = FlinkJob(env, namespace)
    first, job_id = job.start_stateful(TOLERATION_SECONDS)
    job.write_checkpoints(job_id, completed=(1,))

    job.report_unhealthy(first, job_id)
    unhealthy_at = time.monotonic()

    def recorded_start() -> dict:
        return read_time_annotation(
            ((job.binding() or {})["metadata"].get("annotations") or {}).get(UNHEALTHY_SINCE_ANNOTATION)
        )

    recorded = env.wait_until(recorded_start, 20, f"{UNHEALTHY_SINCE_ANNOTATION} for {first}")[first]
    time.sleep(max(0.0, RESTART_AFTER_SECONDS - (time.monotonic() - unhealthy_at)))
    restart_seconds = env.restart_relay()
    assert recorded_start().get(first) == recorded, "the restarted relay must not restart the timer"

    [task] = env.wait_until(job.eviction_tasks, TOLERATION_SECONDS + 30, f"eviction from {first}")
    evicted = parse_time(task["creationTimestamp"])
    assert evicted is not None

    after_recorded = (evicted - recorded).total_seconds()
    assert task["fromCluster"] == first
    # At the recorded time: a timer restarted with the relay would evict RESTART_AFTER_SECONDS later.
    assert TOLERATION_SECONDS - CLOCK_SLACK_SECONDS <= after_recorded <= TOLERATION_SECONDS + CLOCK_SLACK_SECONDS
    assert first not in job.placed_on()
    report(
        request,
        "karmada",
        f"relay restarted {RESTART_AFTER_SECONDS} s into a {TOLERATION_SECONDS} s toleration "
        f"(restart took {restart_seconds:.1f} s): eviction {after_recorded:.0f} s after the "
        f"recorded start",
    )
