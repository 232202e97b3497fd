"""The reconcile loop against the real apiserver.

Nothing schedules in this control plane, so the tests play Karmada's scheduler and status collector: they write
`spec.clusters` and `status.aggregatedStatus` of bindings themselves and watch what the loop does with them.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kubernetes import client, config
from prometheus_client import CollectorRegistry

from controllers.access.kube import FIELD_MANAGER, CustomObjects
from controllers.loop.leader import LeaderElector
from controllers.manager import LoopSettings, ReconcileLoop
from failover.core.api import RESOURCE_BINDINGS, WORKLOAD_REBALANCERS
from failover.core.loop_settings import DecisionSettings
from relay.settings import ControllerSettings
from tests.e2e.objects import REPORTED_JOB_ID, flink_binding, make_cluster, report_health, task_writers
from tests.envtest import ControlPlane
from tests.waiting import eventually

pytestmark = pytest.mark.envtest


@pytest.fixture
def api(control_plane: ControlPlane) -> client.ApiClient:
    return config.new_client_from_config(config_file=str(control_plane.kubeconfig_path))


@pytest.fixture(autouse=True)
def another_ready_cluster(api: client.ApiClient) -> None:
    """A Ready cluster besides member1, so a failover from member1 has somewhere to go: without one the loop keeps the
    workload on its last cluster (failover/reconcile/last_cluster.py) and writes no task. Each test makes its own, so
    none depends on Clusters an earlier module left in the shared apiserver."""
    make_cluster(api, f"spare-{uuid.uuid4().hex[:6]}", ready=True, since=datetime.now(UTC) - timedelta(hours=1))


@pytest.fixture
async def start_loop(api: client.ApiClient, namespace: str) -> AsyncIterator[Callable[..., asyncio.Task[None]]]:
    tasks: list[asyncio.Task[None]] = []

    def start(identity: str = "replica-a", **decisions: Any) -> asyncio.Task[None]:
        declared = ControllerSettings()
        settings = LoopSettings(
            lease_namespace=namespace,
            lease_name=declared.lease_name,
            workers=declared.workers,
            identity=identity,
            resync_seconds=30,
            decisions=DecisionSettings(**decisions),
        )
        task = asyncio.create_task(ReconcileLoop(api, settings, CollectorRegistry()).run())
        tasks.append(task)
        return task

    yield start
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def test_unhealthy_binding_is_failed_over_with_preserved_state(
    api: client.ApiClient, namespace: str, start_loop: Callable[..., asyncio.Task[None]]
) -> None:
    bindings = CustomObjects(api, RESOURCE_BINDINGS)
    bindings.create(flink_binding("job-flinkdeployment", namespace, toleration=2))
    key = f"{namespace}/job-flinkdeployment"
    report_health(bindings, key, "Unhealthy")
    start_loop()

    binding = await eventually(lambda: bindings.get(key), lambda b: b["spec"].get("gracefulEvictionTasks"))
    (task,) = binding["spec"]["gracefulEvictionTasks"]
    assert task["fromCluster"] == "member1"
    assert task["reason"] == "ApplicationFailure"
    assert task["purgeMode"] == "Directly"
    assert task["preservedLabelState"] == {"application.karmada.io/failover-jobid": REPORTED_JOB_ID}
    assert task["clustersBeforeFailover"] == ["member1"]
    assert [c["name"] for c in binding["spec"].get("clusters") or []] == []

    # Events are recorded right after the write they describe: wait for them, do not race them.
    events = await eventually(
        lambda: client.CoreV1Api(api).list_namespaced_event(namespace).items,
        lambda items: any(e.involved_object.name == "job-flinkdeployment" for e in items),
    )
    assert any(
        e.involved_object.name == "job-flinkdeployment" and e.source.component == "failover-relay" for e in events
    )


async def test_a_restarted_loop_keeps_the_timer_and_writes_exactly_one_task(
    api: client.ApiClient, namespace: str, start_loop: Callable[..., asyncio.Task[None]]
) -> None:
    bindings = CustomObjects(api, RESOURCE_BINDINGS)
    bindings.create(flink_binding("restart-flinkdeployment", namespace, toleration=6))
    key = f"{namespace}/restart-flinkdeployment"
    report_health(bindings, key, "Unhealthy")

    first = start_loop("replica-a")
    # The first replica records when it saw the cluster unhealthy, then dies before the toleration runs out.
    binding = await eventually(
        lambda: bindings.get(key), lambda b: "failover-relay.io/unhealthy-since" in b["metadata"].get("annotations", {})
    )
    since = binding["metadata"]["annotations"]["failover-relay.io/unhealthy-since"]
    first.cancel()
    await asyncio.gather(first, return_exceptions=True)
    assert not binding["spec"].get("gracefulEvictionTasks")

    start_loop("replica-b")
    start_loop("replica-c")  # a second replica campaigning at the same time must not double anything
    binding = await eventually(lambda: bindings.get(key), lambda b: b["spec"].get("gracefulEvictionTasks"))
    await asyncio.sleep(3)  # several more reconciles (the informer resync and requeues) must change nothing
    binding = bindings.get(key)
    assert len(binding["spec"]["gracefulEvictionTasks"]) == 1
    # The eviction happened at the first replica's time plus the toleration, not the second replica's start.
    (task,) = binding["spec"]["gracefulEvictionTasks"]
    assert task["creationTimestamp"] >= since.split('"')[3] if '"' in since else True


async def test_workload_rebalancer_stamps_bindings_and_expires(
    api: client.ApiClient, namespace: str, start_loop: Callable[..., asyncio.Task[None]]
) -> None:
    bindings = CustomObjects(api, RESOURCE_BINDINGS)
    rebalancers = CustomObjects(api, WORKLOAD_REBALANCERS)
    binding = flink_binding("demo-deployment", namespace, toleration=300)
    binding["spec"]["resource"] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "demo",
        "namespace": namespace,
    }
    bindings.create(binding)
    name = f"rebalance-{uuid.uuid4().hex[:8]}"
    created = rebalancers.create(
        {
            "apiVersion": "apps.karmada.io/v1alpha1",
            "kind": "WorkloadRebalancer",
            "metadata": {"name": name},
            "spec": {
                "ttlSecondsAfterFinished": 3,
                "workloads": [
                    {"apiVersion": "apps/v1", "kind": "Deployment", "name": "demo", "namespace": namespace},
                    {"apiVersion": "apps/v1", "kind": "Deployment", "name": "missing", "namespace": namespace},
                ],
            },
        }
    )
    start_loop()

    stamped = await eventually(
        lambda: bindings.get(f"{namespace}/demo-deployment"), lambda b: b["spec"].get("rescheduleTriggeredAt")
    )
    assert stamped["spec"]["rescheduleTriggeredAt"] == created["metadata"]["creationTimestamp"]
    finished = await eventually(lambda: rebalancers.get(name), lambda r: (r.get("status") or {}).get("finishTime"))
    results = {
        w["workload"]["name"]: (w.get("result"), w.get("reason")) for w in finished["status"]["observedWorkloads"]
    }
    assert results == {"demo": ("Successful", None), "missing": ("Failed", "ReferencedBindingNotFound")}

    def gone() -> bool:
        try:
            rebalancers.get(name)
        except client.exceptions.ApiException as error:
            return error.status == 404
        return False

    await eventually(gone, bool, timeout=20)


async def test_one_leader_and_a_quick_takeover_after_release(api: client.ApiClient, namespace: str) -> None:
    coordination = client.CoordinationV1Api(api)
    electors = [
        LeaderElector(coordination, namespace, "election-test", f"replica-{i}", retry_period=timedelta(seconds=0.5))
        for i in range(2)
    ]
    leading: list[str] = []

    def lead_as(identity: str) -> Callable[[], Awaitable[None]]:
        async def lead() -> None:
            leading.append(identity)
            await asyncio.Event().wait()

        return lead

    tasks = [asyncio.create_task(e.run(lead_as(e.identity))) for e in electors]
    try:
        await eventually(lambda: list(leading), lambda value: len(value) == 1, timeout=10)
        await asyncio.sleep(2)
        assert len(leading) == 1 and sum(e.is_leader for e in electors) == 1
        leader_index = int(leading[0].rsplit("-", 1)[1])
        started = asyncio.get_running_loop().time()
        tasks[leader_index].cancel()  # a clean stop releases the Lease
        await asyncio.gather(tasks[leader_index], return_exceptions=True)
        await eventually(lambda: list(leading), lambda value: len(value) == 2, timeout=10)
        takeover = asyncio.get_running_loop().time() - started
        assert leading[1] != leading[0]
        assert takeover < 5, f"takeover took {takeover:.1f} s; a released Lease should be taken within a retry"
        lease = coordination.read_namespaced_lease("election-test", namespace)
        assert lease.spec.holder_identity == leading[1]
        assert lease.spec.lease_transitions == 1
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def test_serve_runs_the_loop_and_releases_its_lease_on_sigterm(
    api: client.ApiClient, namespace: str, start_relay: Callable[..., Any]
) -> None:
    relay = start_relay("--controllers-on", "--lease-namespace", namespace)
    bindings = CustomObjects(api, RESOURCE_BINDINGS)
    bindings.create(flink_binding("served-flinkdeployment", namespace, toleration=1))
    key = f"{namespace}/served-flinkdeployment"
    report_health(bindings, key, "Unhealthy")

    binding = await eventually(lambda: bindings.get(key), lambda b: b["spec"].get("gracefulEvictionTasks"))
    assert binding["spec"]["gracefulEvictionTasks"][0]["fromCluster"] == "member1"
    # The apiserver names the relay as the task's writer (its user agent), as Karmada's audit log and kubectl do.
    assert task_writers(binding) == {FIELD_MANAGER}
    coordination = client.CoordinationV1Api(api)
    assert coordination.read_namespaced_lease("failover-relay", namespace).spec.holder_identity

    relay.stop()
    assert relay.process.returncode == 0
    lease = coordination.read_namespaced_lease("failover-relay", namespace)
    assert lease.spec.holder_identity is None  # released: a standby takes over at once


async def test_the_loop_survives_an_apiserver_restart(
    api: client.ApiClient, namespace: str, control_plane: ControlPlane, start_loop: Callable[..., asyncio.Task[None]]
) -> None:
    bindings = CustomObjects(api, RESOURCE_BINDINGS)
    start_loop()
    bindings.create(flink_binding("before-flinkdeployment", namespace, toleration=1))
    report_health(bindings, f"{namespace}/before-flinkdeployment", "Unhealthy")
    await eventually(
        lambda: bindings.get(f"{namespace}/before-flinkdeployment"), lambda b: b["spec"].get("gracefulEvictionTasks")
    )

    await asyncio.to_thread(control_plane.restart_apiserver)  # every watch breaks; the Lease renewals fail a while

    bindings.create(flink_binding("after-flinkdeployment", namespace, toleration=1))
    report_health(bindings, f"{namespace}/after-flinkdeployment", "Unhealthy")
    binding = await eventually(
        lambda: bindings.get(f"{namespace}/after-flinkdeployment"),
        lambda b: b["spec"].get("gracefulEvictionTasks"),
        timeout=60,
    )
    assert len(binding["spec"]["gracefulEvictionTasks"]) == 1
