"""The loop's handling of the old copy against a real apiserver: Works with Karmada's finalizer, Clusters that stop
being Ready, the taint manager's tasks. Nothing of Karmada runs here, so the tests play its controllers: they
delete the old Work (the binding controller), set Cluster conditions (the cluster status controller) and write the
taint manager's task, and watch what the loop does. The member-side delete through the cluster proxy needs
karmada-aggregated-apiserver: the real-Karmada tier covers it.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kubernetes import client, config
from prometheus_client import CollectorRegistry

from controllers.access.kube import CustomObjects, not_found
from controllers.access.members import MemberProxy
from controllers.manager import LoopSettings, ReconcileLoop
from failover.core.api import RESOURCE_BINDINGS, WORKS
from failover.core.loop_settings import DecisionSettings
from relay.settings import ControllerSettings
from tests.e2e.objects import REPORTED_JOB_ID, flink_binding, make_cluster, replace_object
from tests.envtest import ControlPlane
from tests.failover.binding_builders import CLUSTER_LABEL, with_cluster_rules
from tests.failover.work_builders import deployment_manifest, work
from tests.waiting import eventually

pytestmark = pytest.mark.envtest


@pytest.fixture
def api(control_plane: ControlPlane) -> client.ApiClient:
    return config.new_client_from_config(config_file=str(control_plane.kubeconfig_path))


@pytest.fixture
async def loop(api: client.ApiClient, namespace: str) -> AsyncIterator[Callable[..., None]]:
    tasks = []

    def start(**decisions: Any) -> None:
        declared = ControllerSettings()
        settings = LoopSettings(
            lease_namespace=namespace,
            lease_name=declared.lease_name,
            workers=declared.workers,
            identity="fencing",
            resync_seconds=30,
            decisions=DecisionSettings(**decisions),
        )
        tasks.append(asyncio.create_task(ReconcileLoop(api, settings, CollectorRegistry()).run()))

    yield start
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def make_work(api: client.ApiClient, cluster: str, namespace: str, binding: str) -> str:
    works = CustomObjects(api, WORKS)
    works.create(
        work(
            deployment_manifest("job", namespace),
            cluster=cluster,
            name="job-5d8f",
            finalizers=["karmada.io/execution-controller"],
            annotations={
                "resourcebinding.karmada.io/name": binding,
                "resourcebinding.karmada.io/namespace": namespace,
            },
        )
    )
    return f"karmada-es-{cluster}/job-5d8f"


def evicted_binding(name: str, namespace: str, old: str, new: str) -> dict[str, Any]:
    binding = with_cluster_rules(flink_binding(name, namespace, toleration=300))
    binding["spec"]["clusters"] = [{"name": new, "replicas": 1}]
    binding["spec"]["gracefulEvictionTasks"] = [
        {
            "fromCluster": old,
            "purgeMode": "Directly",
            "reason": "TaintUntolerated",
            "producer": "TaintManager",
            "message": "taint",
        }
    ]
    return binding


def absent(objects: CustomObjects, key: str) -> Callable[[], bool]:
    def check() -> bool:
        try:
            objects.get(key)
        except client.exceptions.ApiException as error:
            return error.status == 404
        return False

    return check


async def test_an_unreachable_clusters_old_work_is_fenced_and_the_binding_controller_woken(
    api: client.ApiClient, namespace: str, loop: Callable[..., None]
) -> None:
    suffix = uuid.uuid4().hex[:6]
    old, new = f"dead-{suffix}", f"alive-{suffix}"
    now = datetime.now(UTC)
    make_cluster(api, old, ready=False, since=now)
    make_cluster(api, new, ready=True, since=now - timedelta(hours=1))
    bindings, works = CustomObjects(api, RESOURCE_BINDINGS), CustomObjects(api, WORKS)
    name = f"fence-{suffix}"
    bindings.create(evicted_binding(name, namespace, old, new))
    work_key = make_work(api, old, namespace, name)
    works.delete(work_key)  # Karmada's binding controller removes the orphan; its finalizer keeps it
    assert works.get(work_key)["metadata"]["deletionTimestamp"]
    loop(fence_after=timedelta(seconds=8))

    key = f"{namespace}/{name}"
    waiting = await eventually(
        lambda: client.CoreV1Api(api).list_namespaced_event(namespace).items,
        lambda events: any(e.reason == "WaitingForUnreachableCluster" for e in events),
    )
    assert waiting
    started = asyncio.get_running_loop().time()
    await eventually(absent(works, work_key), bool, timeout=20)
    fenced_after = asyncio.get_running_loop().time() - started
    # The Work is gone and the new cluster has none: the task's note wakes Karmada's binding controller.
    binding = await eventually(
        lambda: bindings.get(key),
        lambda b: f"old copy on {old} is gone" in str(b["spec"]["gracefulEvictionTasks"][0].get("message")),
        timeout=10,
    )
    fenced = binding["metadata"]["annotations"]["failover-relay.io/fenced-copies"]
    assert f'"{old}"' in fenced and '"name":"job"' in fenced
    (task,) = binding["spec"]["gracefulEvictionTasks"]
    assert f"old copy on {old} is gone" in task["message"]
    assert binding["metadata"]["generation"] >= 2
    print(f"\nfenced {fenced_after:.1f} s after the first waiting event (fence_after 8 s)")


async def test_the_taint_managers_task_gets_the_state_recorded_while_healthy(
    api: client.ApiClient, namespace: str, loop: Callable[..., None]
) -> None:
    suffix = uuid.uuid4().hex[:6]
    old, new = f"m1-{suffix}", f"m2-{suffix}"
    bindings = CustomObjects(api, RESOURCE_BINDINGS)
    name = f"state-{suffix}"
    running = evicted_binding(name, namespace, old, new)
    running["spec"]["clusters"] = [{"name": old, "replicas": 1}]
    running["spec"]["gracefulEvictionTasks"] = []
    created = bindings.create(running)
    created["status"] = {
        "schedulerObservedGeneration": created["metadata"]["generation"],
        "aggregatedStatus": [
            {
                "clusterName": old,
                "applied": True,
                "health": "Healthy",
                "status": {"jobStatus": {"jobId": REPORTED_JOB_ID}},
            }
        ],
    }
    replace_object(bindings, created, status=True)
    loop()
    key = f"{namespace}/{name}"
    recorded = await eventually(
        lambda: bindings.get(key), lambda b: "failover-relay.io/last-state" in b["metadata"].get("annotations", {})
    )
    assert REPORTED_JOB_ID in recorded["metadata"]["annotations"]["failover-relay.io/last-state"]

    # The cluster dies: its status is no longer reflected, and the taint manager evicts without state.
    recorded["status"]["aggregatedStatus"] = []
    replace_object(bindings, recorded, status=True)
    evicted = bindings.get(key)
    evicted["spec"]["clusters"] = [{"name": new, "replicas": 1}]
    evicted["spec"]["gracefulEvictionTasks"] = [
        {"fromCluster": old, "purgeMode": "Directly", "reason": "TaintUntolerated", "producer": "TaintManager"}
    ]
    replace_object(bindings, evicted)
    filled = await eventually(
        lambda: bindings.get(key), lambda b: b["spec"]["gracefulEvictionTasks"][0].get("preservedLabelState")
    )
    (task,) = filled["spec"]["gracefulEvictionTasks"]
    assert task["preservedLabelState"] == {CLUSTER_LABEL: REPORTED_JOB_ID}
    assert task["clustersBeforeFailover"] == [old]


def test_the_member_proxy_client_speaks_to_a_real_apiserver(api: client.ApiClient) -> None:
    """controllers/access/members.py's requests, with the client's credentials and status handling (the proxy path
    itself needs karmada-aggregated-apiserver: the real-Karmada tier)."""
    proxy = MemberProxy(api)
    assert proxy._call("GET", "/version")["gitVersion"].startswith("v1.")
    with pytest.raises(client.exceptions.ApiException) as raised:
        proxy._call("GET", "/apis/cluster.karmada.io/v1alpha1/clusters/nowhere/proxy/version")
    assert not_found(raised.value)
    assert proxy.answers("nowhere", remember_seconds=5) is False
