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

from controllers.cache import BINDING_RESOURCES, POLICY_RESOURCES, Cache, work_cached_form
from controllers.client import KarmadaClient
from controllers.controller import Controller, ControllerMetrics
from controllers.events import EventRecorder
from controllers.informer import RESYNC_SECONDS, Informer
from controllers.kube import CustomObjects
from controllers.leader import LeaderElector
from controllers.reconcilers import BindingReconciler, FailbackReconciler, RebalancerReconciler, ReconcileMetrics
from failover.core.api import CLUSTERS, WORKLOAD_REBALANCERS, WORKS, Resource
from failover.reconcile.decision import DecisionSettings

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
    resync_seconds: float = RESYNC_SECONDS
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
        self.recorder = EventRecorder(api_client, settings.identity)
        self.elector = LeaderElector(client.CoordinationV1Api(api_client), settings.lease_namespace,
                                     settings.lease_name, settings.identity)

    async def run(self) -> None:
        """Until cancelled: campaign for the Lease and reconcile while holding it (released on cancel)."""
        await self.elector.run(self._lead)

    async def _lead(self) -> None:
        """Reconcile until cancelled: a controller per kind the loop writes, plain informers for what it only
        reads (policies, Works), all filling one cache."""
        settings, loop = self.settings, asyncio.get_running_loop()
        karmada = KarmadaClient(self.api_client)
        cache = Cache()
        recorder, decisions, metrics = self.recorder, settings.decisions, self.reconcile_metrics
        controllers: dict[str, Controller] = {}

        def wake_bindings(owners: list[tuple[str, str]]) -> None:
            for kind, key in owners:
                controllers[kind].queue.add(key)

        def work_changed(key: str) -> None:
            owner = cache.work_changed(key)
            if owner is not None and owner[0] in controllers:
                wake_bindings([owner])

        def cluster_changed(key: str) -> None:
            wake_bindings(cache.bindings_touching(key))

        def controller(resource: Resource, reconcile: Any, workers: int, also: Any = None) -> Controller:
            made = Controller(resource.plural, CustomObjects(self.api_client, resource).list, reconcile,
                              self.controller_metrics, workers, settings.resync_seconds, also)
            cache.add(resource, made.informer)
            return made

        for resource in BINDING_RESOURCES:
            controllers[resource.kind] = controller(resource, BindingReconciler(
                resource.kind, karmada, cache, recorder, decisions, metrics), settings.workers)
        controllers[WORKLOAD_REBALANCERS.kind] = controller(
            WORKLOAD_REBALANCERS, RebalancerReconciler(karmada, cache, recorder, decisions, metrics), 1)
        controllers[CLUSTERS.kind] = controller(
            CLUSTERS, FailbackReconciler(karmada, cache, recorder, decisions, metrics), 1, cluster_changed)
        informers = [Informer(resource.plural, CustomObjects(self.api_client, resource).list, lambda key: None, loop,
                              settings.resync_seconds) for resource in POLICY_RESOURCES]
        for resource, informer in zip(POLICY_RESOURCES, informers):
            cache.add(resource, informer)
        works = Informer(WORKS.plural, CustomObjects(self.api_client, WORKS).list, work_changed, loop,
                         settings.resync_seconds, transform=work_cached_form)
        cache.add(WORKS, works)
        informers.append(works)

        for informer in informers:
            informer.start()
        log.info("controllers_starting", controllers=sorted(controllers), identity=settings.identity)
        tasks = [asyncio.create_task(controller.run(), name=f"controller-{name}")
                 for name, controller in controllers.items()]
        try:
            synced = await asyncio.gather(*(informer.wait_synced(SYNC_TIMEOUT_SECONDS) for informer in (
                *informers, *(controller.informer for controller in controllers.values()))))
            log.info("caches_synced", all=all(synced))
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for informer in informers:
                informer.stop()
