"""Cluster failover with state and without Karmada's alpha gate, and the new copy right after the old one is gone (not
at Karmada's next re-check): a NoExecute taint on a live member, and the relay's eviction task with its
preservedLabelState; the relay wakes Karmada's binding controller once the old Work is deleted.

Here Karmada's taint manager evicts too (`--enable-no-execute-taint-eviction=true`, the setting docs/operations.md
allows beside the relay's): two writers of the same task, and one task written (the other write fails its
precondition, or its `Update` conflicts, and the cluster is no longer a target when it is decided again)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from controllers.access.kube import FIELD_MANAGER
from tests.e2e.objects import task_writers
from tests.karmada.outages import CLUSTER_JOB_ID_LABEL, CLUSTERS, CopyWatch, stateful_cluster_policy
from tests.karmada.workloads import FlinkJob, new_job_id, restore_path
from tests.karmada_env import KARMADA, RELAY_CONTROLLERS, RELAY_GATES, TAINT_EVICTION, KarmadaEnv, resource_path
from tests.reporting import report

pytestmark = pytest.mark.karmada

TAINT = {"key": "failover.example.io/outage", "value": "true", "effect": "NoExecute"}
# What is asserted is the behaviour, not a speed: the relay wakes the binding when the old copy is gone, where
# Karmada alone waits for its 5 s re-check. Typically under 1 s (printed); the bound leaves room for a loaded machine.
NEW_COPY_AFTER_OLD_GONE_SECONDS = 4.5


@pytest.fixture
def taint_manager_evicting(karmada_env: KarmadaEnv) -> Iterator[KarmadaEnv]:
    """karmada-controller-manager with the taint manager's eviction on, beside the relay's; afterwards as before."""
    karmada_env.restart_controller_manager(RELAY_CONTROLLERS, RELAY_GATES, (TAINT_EVICTION,))
    try:
        yield karmada_env
    finally:
        karmada_env.restart_controller_manager()


def test_cluster_failover_carries_the_job_without_the_gate_and_the_new_copy_follows_the_old_at_once(
    taint_manager_evicting: KarmadaEnv, namespace: str, request: pytest.FixtureRequest
) -> None:
    env = taint_manager_evicting
    job = FlinkJob(env, namespace)
    job.create(stateful_cluster_policy("flink", namespace, job.name, env.members, toleration_seconds=300))
    first = job.wait_placed()
    job_id = new_job_id()
    job.run_healthy(first, job_id)
    checkpoints = job.write_checkpoints(job_id, completed=(4, 5))

    karmada = env.api(KARMADA)
    cluster_path = resource_path(CLUSTERS, "clusters", first)
    taints = list((karmada.get(cluster_path) or {}).get("spec", {}).get("taints") or [])
    most_tasks, writers = 0, set()

    def one_task() -> bool:
        nonlocal most_tasks, writers
        binding = job.binding() or {}
        tasks = [t for t in (binding.get("spec") or {}).get("gracefulEvictionTasks") or [] if t["fromCluster"] == first]
        most_tasks = max(most_tasks, len(tasks))
        writers |= task_writers(binding) if tasks else set()
        return bool(tasks)

    with CopyWatch(job, interval=0.05) as watch:
        karmada.patch(cluster_path, {"spec": {"taints": [*taints, TAINT]}})
        tainted_at = time.monotonic()
        try:
            env.wait_until(one_task, 30, "an eviction task", interval=0.05)
            second, copy = job.wait_restored_outside(first, timeout=60)
            one_task()
            seconds = time.monotonic() - tainted_at
            watch.wait_seen(second)
            time.sleep(0.5)
        finally:
            karmada.patch(cluster_path, {"spec": {"taints": taints}})

    [task] = job.eviction_tasks() or [None]
    assert task is None or task["preservedLabelState"] == {CLUSTER_JOB_ID_LABEL: job_id}
    assert copy["metadata"]["labels"][CLUSTER_JOB_ID_LABEL] == job_id
    assert restore_path(copy) == checkpoints / "chk-5"
    assert copy["spec"]["job"]["upgradeMode"] == "savepoint"
    assert watch.overlaps == [], f"two copies at once: {watch.overlaps[:3]}"
    assert most_tasks == 1, f"{most_tasks} eviction tasks from {first} at once"
    assert writers and writers <= {FIELD_MANAGER, "karmada-controller-manager"}, f"the task written by {writers}"
    old_gone, new_seen = watch.seen[first][1], watch.seen[second][0]
    gap = new_seen - old_gone
    assert gap < NEW_COPY_AFTER_OLD_GONE_SECONDS, f"new copy {gap:.2f} s after the old one was gone"
    report(
        request,
        "karmada",
        f"cluster failover {first} -> {second} (NoExecute taint, no StatefulFailoverInjection):"
        f" new copy with label and restore path {seconds:.1f} s after the taint; "
        f"{gap:.2f} s after the old copy was gone; beside the taint manager's eviction one task, written by"
        f" {', '.join(sorted(writers)) or 'no one seen'}",
    )
