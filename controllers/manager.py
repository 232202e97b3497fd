"""The reconcile loop as a whole: every controller, run only by the replica that holds the Lease."""

from __future__ import annotations

import asyncio
import os
import socket
import uuid
from dataclasses import dataclass, field
from typing import Any

import structlog
from kubernetes import client
from prometheus_client import CollectorRegistry

from controllers.events import EventRecorder
from controllers.informer import Informer
from controllers.kube import (
    CLUSTER_RESOURCE_BINDINGS,
    CLUSTERS,
    RESOURCE_BINDINGS,
    WORKLOAD_REBALANCERS,
    CustomObjects,
)
from controllers.leader import LeaderElector
from controllers.loop import Controller, ControllerMetrics
from controllers.reconcilers import (
    BindingReconciler,
    FailbackReconciler,
    RebalancerReconciler,
    ReconcileMetrics,
    Recorder,
    with_identity,
)
from failover.api import CLUSTER_PROPAGATION_POLICIES, PROPAGATION_POLICIES
from failover.decision import DecisionSettings

log = structlog.get_logger("failover_relay.controllers")

# How long to wait for the first list of every informer before reconciling anything: reconciling failback on an
# empty binding cache would see no workloads at all.
SYNC_TIMEOUT_SECONDS = 60.0


@dataclass(frozen=True)
class LoopSettings:
    """What the loop runs with; the values come from relay/settings.py (ControllerSettings), which declares them."""

    lease_namespace: str
    lease_name: str
    workers: int
    identity: str = field(default_factory=lambda: f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}")
    resync_seconds: float = 300.0
    decisions: DecisionSettings = field(default_factory=DecisionSettings)


def default_lease_namespace() -> str:
    """The Pod's namespace in a cluster (downward API or the service account mount), else "default"."""
    if os.environ.get("POD_NAMESPACE"):
        return os.environ["POD_NAMESPACE"]
    try:
        with open("/var/run/secrets/kubernetes.io/serviceaccount/namespace", encoding="utf-8") as file:
            return file.read().strip() or "default"
    except OSError:
        return "default"


class ReconcileLoop:
    def __init__(self, api_client: client.ApiClient, settings: LoopSettings, registry: CollectorRegistry) -> None:
        self.api_client = api_client
        self.settings = settings
        self.controller_metrics = ControllerMetrics(registry)
        self.reconcile_metrics = ReconcileMetrics(registry)
        # Built before campaigning: the first CoreV1Api loads the client's large core module (about 1.3 s), which
        # must not delay a new leader's first reconcile.
        self.recorder = Recorder(EventRecorder(api_client, settings.identity))
        self.elector = LeaderElector(client.CoordinationV1Api(api_client), settings.lease_namespace,
                                     settings.lease_name, settings.identity)

    async def run(self) -> None:
        """Until cancelled: campaign for the Lease and reconcile while holding it (released on cancel)."""
        await self.elector.run(self._lead)

    async def _lead(self) -> None:
        settings, api = self.settings, self.api_client
        objects = {resource.kind: CustomObjects(api, resource) for resource in (
            RESOURCE_BINDINGS, CLUSTER_RESOURCE_BINDINGS, WORKLOAD_REBALANCERS, CLUSTERS)}
        recorder = self.recorder
        decisions = settings.decisions
        loop = asyncio.get_running_loop()

        policy_informers = [Informer(resource.plural, CustomObjects(api, resource).list, lambda key: None, loop,
                                     settings.resync_seconds)
                            for resource in (PROPAGATION_POLICIES, CLUSTER_PROPAGATION_POLICIES)]
        controllers: dict[str, Controller] = {}

        def cached(kind: str) -> Any:
            return lambda key: controllers[kind].informer.get(key)

        def all_bindings() -> list[dict[str, Any]]:
            return [with_identity(obj, resource) for resource in (RESOURCE_BINDINGS, CLUSTER_RESOURCE_BINDINGS)
                    for obj in list(controllers[resource.kind].informer.cache.values())]

        def all_policies() -> list[dict[str, Any]]:
            return [with_identity(obj, resource) for informer, resource in
                    zip(policy_informers, (PROPAGATION_POLICIES, CLUSTER_PROPAGATION_POLICIES))
                    for obj in list(informer.cache.values())]

        for resource in (RESOURCE_BINDINGS, CLUSTER_RESOURCE_BINDINGS):
            controllers[resource.kind] = Controller(
                resource.plural, objects[resource.kind].list,
                BindingReconciler(objects[resource.kind], cached(resource.kind), recorder, decisions,
                                  self.reconcile_metrics),
                self.controller_metrics, settings.workers, settings.resync_seconds)
        controllers[WORKLOAD_REBALANCERS.kind] = Controller(
            WORKLOAD_REBALANCERS.plural, objects[WORKLOAD_REBALANCERS.kind].list,
            RebalancerReconciler(objects[WORKLOAD_REBALANCERS.kind], objects[RESOURCE_BINDINGS.kind],
                                 objects[CLUSTER_RESOURCE_BINDINGS.kind], cached(WORKLOAD_REBALANCERS.kind),
                                 recorder, decisions, self.reconcile_metrics),
            self.controller_metrics, 1, settings.resync_seconds)
        controllers[CLUSTERS.kind] = Controller(
            CLUSTERS.plural, objects[CLUSTERS.kind].list,
            FailbackReconciler(objects[CLUSTERS.kind], objects[WORKLOAD_REBALANCERS.kind],
                               objects[RESOURCE_BINDINGS.kind], objects[CLUSTER_RESOURCE_BINDINGS.kind],
                               cached(CLUSTERS.kind), all_bindings, all_policies, recorder, decisions,
                               self.reconcile_metrics),
            self.controller_metrics, 1, settings.resync_seconds)

        for informer in policy_informers:
            informer.start()
        log.info("controllers_starting", controllers=sorted(controllers), identity=settings.identity)
        tasks = [asyncio.create_task(controller.run(), name=f"controller-{name}")
                 for name, controller in controllers.items()]
        try:
            synced = await asyncio.gather(*(informer.wait_synced(SYNC_TIMEOUT_SECONDS) for informer in (
                *policy_informers, *(controller.informer for controller in controllers.values()))))
            log.info("caches_synced", all=all(synced))
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for informer in policy_informers:
                informer.stop()
