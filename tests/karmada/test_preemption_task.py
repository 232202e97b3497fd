"""An eviction task of a producer the relay does not own passes through (issue 27 point 6): Karmada PR #7832's
binding preemption evicts with producer `Scheduler`, reason `BindingPreempted`, purge mode Gracefully, a 30 s grace
period and no preserved state. The test writes the task as that PR's scheduler does (`GracefulEvictCluster`: the
cluster leaves spec.clusters and the task is appended), then watches what Karmada makes of it with the relay in
place of its graceful eviction controller: a new copy started without the old job's id or a restore path (Karmada
would inject none), the old copy kept until the new one is Healthy, then released, and nothing to fail back;
`failover-relay status --cluster` lists the workload as restoring away from the cluster it left."""

from __future__ import annotations

import json
import time

import pytest

from failover.core.api import DEFAULT_JOB_ID_LABEL
from failover.reconcile.graceful_eviction import EVICTED_FROM_ANNOTATION
from failover.state.history import EVICTION, read_history
from failover.state.last_state import recorded_states
from tests.failover.binding_builders import preemption_task
from tests.karmada.workloads import BINDINGS, FlinkJob, new_job_id, relay_status, restore_path
from tests.karmada_env import KARMADA, KarmadaEnv, resource_path
from tests.reporting import report

pytestmark = pytest.mark.karmada

TOLERATION_SECONDS = 10
# Karmada re-renders the Work when the task is gone; a few seconds cover it.
AFTER_TASK_SECONDS = 8


def test_a_preemption_task_moves_the_workload_without_its_state(
    karmada_env: KarmadaEnv, namespace: str, request: pytest.FixtureRequest
) -> None:
    env = karmada_env
    job = FlinkJob(env, namespace)
    first, job_id = job.start_stateful(TOLERATION_SECONDS)
    # A restorable checkpoint: had the relay taken the move for a failover, the new copy would get its path.
    job.write_checkpoints(job_id, completed=(1,))
    env.wait_until(lambda: first in recorded_states(job.binding() or {}), 30, f"the state of {first} recorded")

    binding = job.binding() or {}
    spec = binding["spec"]
    evicted = next(target for target in spec["clusters"] if target["name"] == first)
    env.api(KARMADA).patch(
        resource_path(BINDINGS, "resourcebindings", job.binding_name, namespace),
        {
            "metadata": {"resourceVersion": binding["metadata"]["resourceVersion"]},
            "spec": {
                "clusters": [target for target in spec["clusters"] if target["name"] != first],
                "gracefulEvictionTasks": [
                    *(spec.get("gracefulEvictionTasks") or []),
                    preemption_task(first, replicas=evicted.get("replicas", 1)),
                ],
            },
        },
    )
    preempted_at = time.monotonic()

    second = env.wait_until(
        lambda: next((m for m in job.placed_on() if m != first and job.copy_in(m)), None),
        60,
        f"the scheduler placing the preempted workload outside {first} and its new copy",
    )
    placed = time.monotonic() - preempted_at
    new_copy = job.copy_in(second) or {}
    assert DEFAULT_JOB_ID_LABEL not in (new_copy["metadata"].get("labels") or {}), "a preemption carries no job id"
    assert restore_path(new_copy) is None, "a preemption is no stateful failover"
    assert job.copy_in(first) is not None, "Gracefully: the old copy stays while the new one is not healthy"
    [task] = job.eviction_tasks()
    assert (task["producer"], task["reason"], task["fromCluster"]) == ("Scheduler", "BindingPreempted", first)
    # What an operator sees of the cluster the workload left: `status --cluster`, as run by hand.
    listed = relay_status(env, "--cluster", first, "-n", namespace, "-o", "json")
    assert listed.returncode == 0, listed.stderr
    [row] = json.loads(listed.stdout)
    assert (row["workload"], row["phase"], row["reason"], row["targets"]) == (
        f"FlinkDeployment/{namespace}/{job.name}",
        "restoring",
        "BindingPreempted",
        [second],
    )

    job.run_healthy(second, new_job_id())
    env.wait_until(lambda: not job.eviction_tasks(), 30, "the preemption task ended")
    ended_at = time.monotonic()
    env.wait_until(lambda: job.copy_in(first) is None, 30, f"the old copy in {first} deleted")

    time.sleep(max(0.0, AFTER_TASK_SECONDS - (time.monotonic() - ended_at)))
    kept = job.copy_in(second) or {}
    assert DEFAULT_JOB_ID_LABEL not in (kept["metadata"].get("labels") or {})
    assert restore_path(kept) is None, "the preempted copy's state must not follow once the task is gone"
    final = job.binding() or {}
    annotations = final["metadata"].get("annotations") or {}
    assert first not in json.loads(annotations.get(EVICTED_FROM_ANNOTATION) or "{}"), "nothing to fail back"
    assert first not in recorded_states(final)
    moves = [move for move in read_history(final).moves if move.from_cluster == first]
    assert [(move.kind, move.job_id) for move in moves] == [(EVICTION, "")]
    report(
        request,
        "karmada",
        f"preemption task (Scheduler/BindingPreempted) {first} -> {second}: new copy {placed:.1f} s after the task, "
        "started without state; old copy released once the new one was Healthy",
    )
