"""The reconcile loop as a whole: informers that keep one cache filled in every replica, and every controller, run
only by the replica that holds the Lease.

A replica lists everything once, at start, and campaigns for the Lease only then; its informers run from start to
stop, across terms. A term (`ReconcileLoop._lead`) starts from the cache as it is: it queues every cached key and
reconciles, so a leader change costs the Lease's handover and a pass over the queue, not a list of everything
(minutes at 50,000 bindings, docs/benchmarks.md). Only a term writes: the controllers' workers, the Events they ask
for and the member relays' report run in it and stop with it; outside a term, events queue nothing.
"""

from __future__ import annotations

import asyncio
import copy
import gc
import os
import socket
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import structlog
from kubernetes import client
from prometheus_client import CollectorRegistry

from controllers.access.client import Calls, KarmadaClient
from controllers.access.events import EVENT_WRITERS, EventRecorder
from controllers.access.fence_metrics import StorageFenceMetrics
from controllers.access.fence_store import FenceStore
from controllers.access.kube import CustomObjects, api_client_of
from controllers.loop.cache import BindingKey, Cache, binding_cached_form, work_cached_form
from controllers.loop.controller import Controller, Reconcile
from controllers.loop.informer import RESYNC_SECONDS, ChangeHandler, Informer, freezes
from controllers.loop.leader import LeaderElector
from controllers.loop.loop_metrics import LoopMetrics
from controllers.loop.queue import WorkQueue
from controllers.reconcilers.binding_reconciler import BindingReconciler
from controllers.reconcilers.cluster_reconciler import ClusterReconciler
from controllers.reconcilers.loop_parts import LoopParts
from controllers.reconcilers.rebalancer_reconciler import RebalancerReconciler
from controllers.reconcilers.restore_watch import RestoreWatch
from controllers.reconcilers.storage_fence import StorageFence
from failover.core import binding as b
from failover.core.api import (
    BINDING_RESOURCES,
    CLUSTER_RESOURCE_BINDINGS,
    CLUSTERS,
    POLICY_RESOURCES,
    RESOURCE_BINDINGS,
    WORKLOAD_REBALANCERS,
    WORKS,
    Resource,
)
from failover.core.loop_settings import DecisionSettings
from failover.fence.control_plane import DEFAULT_POLL
from failover.moves.handoff import handoff_in_flight

log = structlog.get_logger("failover_relay.controllers")

# How long to wait for the first list of every informer before a warning names the slow ones; a replica campaigns
# for the Lease only once every list is in: reconciling failback on an empty binding cache would see no workloads.
SYNC_TIMEOUT_SECONDS = 60.0
# How often a first list that outlived it is looked at again.
SYNC_POLL_SECONDS = 5.0
# How often the member relays' heartbeats are read to say which members none watches: about two heartbeats.
RELAY_REPORT_SECONDS = 60.0
# Keys a new leader queues before it lets the event loop run again (`queue_every_key`): 50,000 in one go held the
# loop, and the webhook served beside it, for over a second.
QUEUED_PER_STEP = 500


# Where an event of one resource leads: (cache, the event's kind, its key) -> the (kind, key) pairs to reconcile.
KeyMap = Callable[[Cache, str, str], Iterable[BindingKey]]


BINDING_KINDS = frozenset(resource.kind for resource in BINDING_RESOURCES)


def may_act_on(binding: Mapping[str, Any] | None) -> bool:
    """A binding the loop may have to write to: a copy not Healthy, an eviction task, a planned move's handoff in
    flight (its pipeline carries it on), or being deleted. Only the
    order of the queue depends on it: with 50,000 bindings queued by a new leader, a toleration that ran out under
    the old one is acted on within seconds of winning the Lease instead of after every healthy binding
    (docs/benchmarks.md, "Reconcile loop at scale")."""
    if binding is None:
        return False
    if b.is_deleting(binding) or b.eviction_tasks(binding) or handoff_in_flight(binding):
        return True
    return any(b.health_of(item) != b.HEALTHY for item in b.aggregated_status(binding).values())


def itself(_: Cache, kind: str, key: str) -> Iterable[BindingKey]:
    """The object that changed."""
    return ((kind, key),)


def bindings_on_cluster(cache: Cache, _: str, cluster: str) -> Iterable[BindingKey]:
    """The bindings with an eviction task from the cluster or a fenced copy on it: its readiness changes what
    fencing decides for them."""
    return cache.bindings_touching(cluster)


def binding_of_work(cache: Cache, _: str, work: str) -> Iterable[BindingKey]:
    """The binding the Work belongs to (or belonged to, when it is gone): what the binding records (its history,
    its last good state) is read from its Works. Re-indexes the Work first (`Cache.work_changed`)."""
    owner = cache.work_changed(work)
    return () if owner is None else (owner,)


# The key maps that keep an index of the cache current (`binding_of_work`: `Cache.work_changed`). They run on every
# event, also while another replica leads and the events queue nothing, so that a new leader's index is as current as
# its cache.
INDEXING_KEY_MAPS: frozenset[KeyMap] = frozenset({binding_of_work})


@dataclass(frozen=True)
class Watch:
    """Events of `resource` queue the keys `keys` maps them to; a controller takes those of its own kind."""

    resource: Resource
    keys: KeyMap = itself


# What builds a reconciler from the parts every reconciler gets (client, cache, event recorder, decision settings,
# metrics, the storage fence).
ReconcilerFactory = Callable[[LoopParts], Reconcile]


@dataclass(frozen=True)
class ControllerSpec:
    """One controller: the resource whose keys it reconciles, its reconciler, the watches that queue its keys,
    and its workers (None: `LoopSettings.workers`)."""

    resource: Resource
    reconciler: ReconcilerFactory
    watches: tuple[Watch, ...]
    workers: int | None = None

    @property
    def name(self) -> str:
        """The `controller` label of its metrics and the name of its worker tasks."""
        return self.resource.plural


# The whole reconcile wiring. One informer per resource named here; each of its events runs each key map of the
# watches on that resource once (however many controllers declare it) and queues every key with the controller of
# the key's kind, if that controller declared the watch (`queue_keys`).
CONTROLLERS = (
    ControllerSpec(
        RESOURCE_BINDINGS,
        partial(BindingReconciler, RESOURCE_BINDINGS.kind),
        watches=(Watch(RESOURCE_BINDINGS), Watch(CLUSTERS, bindings_on_cluster), Watch(WORKS, binding_of_work)),
    ),
    ControllerSpec(
        CLUSTER_RESOURCE_BINDINGS,
        partial(BindingReconciler, CLUSTER_RESOURCE_BINDINGS.kind),
        watches=(Watch(CLUSTER_RESOURCE_BINDINGS), Watch(CLUSTERS, bindings_on_cluster), Watch(WORKS, binding_of_work)),
    ),
    ControllerSpec(WORKLOAD_REBALANCERS, RebalancerReconciler, watches=(Watch(WORKLOAD_REBALANCERS),), workers=1),
    ControllerSpec(
        CLUSTERS,
        ClusterReconciler,
        watches=(Watch(CLUSTERS),),
        workers=1,
    ),
)
# Read by the reconcilers (the policies a binding follows), never reconciled: their events queue nothing.
CACHED_ONLY = POLICY_RESOURCES
# How the cache keeps the objects of a kind when it keeps less of them than the informer's default (which drops
# managedFields).
CACHED_FORMS: Mapping[str, Callable[[Mapping[str, Any]], Mapping[str, Any]]] = {
    WORKS.kind: work_cached_form,
    **{resource.kind: binding_cached_form for resource in BINDING_RESOURCES},
}


@dataclass(frozen=True)
class LoopSettings:
    """What the loop runs with; the values come from relay/settings/ (ControllerSettings), which declares them."""

    lease_namespace: str
    lease_name: str
    workers: int
    identity: str = field(default_factory=lambda: f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}")
    resync_seconds: float = RESYNC_SECONDS
    decisions: DecisionSettings = field(default_factory=DecisionSettings)
    # The storage fence (controllers/reconcilers/storage_fence.py): the fence records' store, None when off; how often
    # an awaited acknowledgement is read again.
    fences: FenceStore | None = None
    fence_poll: timedelta = DEFAULT_POLL
    # The checkpoint storage, read for a moved copy's first checkpoint of its own
    # (controllers/reconcilers/restore_watch.py); None when there is no checkpoint root: a moved copy is then restored
    # once it is Healthy.
    restore_watch: RestoreWatch | None = None


def default_lease_namespace() -> str:
    """The Pod's namespace in a cluster (downward API or the service account mount), else "default"."""
    if os.environ.get("POD_NAMESPACE"):
        return os.environ["POD_NAMESPACE"]
    try:
        with open("/var/run/secrets/kubernetes.io/serviceaccount/namespace", encoding="utf-8") as file:
            return file.read().strip() or "default"
    except OSError:
        return "default"


def workers_of(spec: ControllerSpec, settings: LoopSettings) -> int:
    return settings.workers if spec.workers is None else spec.workers


def watched_resources() -> dict[str, Resource]:
    """Every resource with an informer: those the controllers watch, and those only read (`CACHED_ONLY`)."""
    return {
        resource.kind: resource
        for resource in (*CACHED_ONLY, *(watch.resource for spec in CONTROLLERS for watch in spec.watches))
    }


def with_connections(api_client: client.ApiClient, connections: int) -> client.ApiClient:
    """A client like `api_client` whose pool keeps `connections` connections to the apiserver open. The client's
    default is 5 per CPU (10 on 2 cores), and each informer's watch holds one for as long as it runs: with 7
    watches, workers beyond the 3 left would open a new TLS connection for every call and drop it after."""
    configuration = copy.deepcopy(api_client.configuration)
    configuration.connection_pool_maxsize = connections
    return api_client_of(configuration)


class ReconcileLoop:
    def __init__(self, api_client: client.ApiClient, settings: LoopSettings, registry: CollectorRegistry) -> None:
        # One thread per call that can be in flight: each worker's, and the Events written beside them.
        threads = sum(workers_of(spec, settings) for spec in CONTROLLERS) + EVENT_WRITERS
        self.metrics = LoopMetrics(registry)
        self.calls = Calls(threads, self.metrics.api_calls)
        # Those calls, the watches, and the Lease's renewal.
        self.api_client = with_connections(api_client, threads + len(watched_resources()) + 1)
        self.settings = settings
        # Built before campaigning: the first CoreV1Api loads the client's large core module (about 1.3 s), which
        # must not delay a new leader's first reconcile.
        self.recorder = EventRecorder(self.api_client, settings.identity, self.calls)
        self.storage_fence = (
            None
            if settings.fences is None
            else StorageFence(settings.fences, settings.decisions, StorageFenceMetrics(registry), settings.fence_poll)
        )
        self.elector = LeaderElector(
            client.CoordinationV1Api(self.api_client), settings.lease_namespace, settings.lease_name, settings.identity
        )
        # Filled by the informers from `run` until the loop stops, whoever holds the Lease.
        self.cache = Cache()
        # The queues of the term in progress by the kind they reconcile; empty outside a term, so that the
        # informers' events queue nothing that no worker drains.
        self.queues: dict[str, WorkQueue] = {}

    async def run(self) -> None:
        """Until cancelled: fill the cache and keep it filled, campaign for the Lease once every first list is in, and
        reconcile while holding it (released on cancel)."""
        informers = self._start_informers()
        try:
            # A free Lease goes to a replica that could act at once, never to one still listing.
            await wait_synced(informers)
            await self.elector.run(self._lead)
        finally:
            for informer in informers:
                informer.stop()
            # The informers froze what was alive as they listed (controllers/loop/informer.py `settle_long_lived`),
            # the loop's own cycles with it: only the collector frees a cycle, and it skips frozen objects.
            gc.unfreeze()
            self.calls.shutdown()

    def _start_informers(self) -> list[Informer]:
        """One informer per resource the controllers watch or read (`CACHED_ONLY`), all filling `self.cache`, their
        events routed to the queues of the term in progress (`queue_keys`)."""
        informers = []
        for resource in watched_resources().values():
            informer = Informer(
                resource.plural,
                CustomObjects(self.api_client, resource).list,
                queue_keys(resource, self.cache, self.queues),
                asyncio.get_running_loop(),
                self.settings.resync_seconds,
                transform=CACHED_FORMS.get(resource.kind),
            )
            self.cache.add(resource, informer)
            informers.append(informer)
        for informer in informers:
            informer.start()
        return informers

    async def _lead(self) -> None:
        """One term, until cancelled (the Lease lost, or the loop stopped): the controllers of `CONTROLLERS` on the
        cache as the informers keep it, each starting from every key it holds; then their queues are dropped and the
        Events not yet written with them."""
        settings = self.settings
        # A list after a `410` freezes what is alive, this term's controllers and queues too (`settle_long_lived`).
        freezes_before = freezes()
        parts = LoopParts(
            KarmadaClient(self.api_client, self.calls),
            self.cache,
            self.recorder,
            settings.decisions,
            self.metrics,
            self.storage_fence,
            settings.restore_watch,
        )
        controllers = {
            spec.resource.kind: Controller(spec.name, spec.reconciler(parts), self.metrics, workers_of(spec, settings))
            for spec in CONTROLLERS
        }
        log.info("controllers_starting", controllers=sorted(controllers), identity=settings.identity)
        # From here on the informers' events queue keys; whatever came before is in the cache queued below.
        self.queues.update({kind: controller.queue for kind, controller in controllers.items()})
        tasks = [
            asyncio.create_task(controller.run(), name=f"controller-{name}") for name, controller in controllers.items()
        ]
        try:
            queued = await queue_every_key(self.cache, self.queues)
            log.info("cached_keys_queued", keys=queued)
            if self.storage_fence is not None:
                tasks.append(asyncio.create_task(self._report_relays(self.cache), name="member-relays"))
            elif settings.decisions.fences:
                log.warning(
                    "fenced_by_time_only",
                    reason="the storage fence is off (fence.storage false, or no savepoint.checkpointRoot): a"
                    " partitioned member's copy runs beside the new one from the fence until the partition heals"
                    ' (docs/operations.md, "The storage fence")',
                )
            await asyncio.gather(*tasks)
        finally:
            self.queues.clear()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self.recorder.drop_pending()
            if freezes() != freezes_before:
                # The term's objects may be frozen; unfrozen, the collector frees their cycles. The cache is then in
                # its sight until the next list freezes it, as it is anyway once watch events have replaced it.
                gc.unfreeze()

    async def _report_relays(self, cache: Cache) -> None:
        """Until cancelled: which members no member relay watches, said when that changes
        (controllers/reconcilers/storage_fence.py `report_relays`)."""
        assert self.storage_fence is not None
        while True:
            await self.storage_fence.report_relays(cache.clusters(), datetime.now(UTC))
            await asyncio.sleep(RELAY_REPORT_SECONDS)


async def wait_synced(informers: Iterable[Informer]) -> None:
    """Until every informer's first list is in the cache, then `caches_synced`: the time a replica knows every object
    and may campaign, whether it will lead or stand by. A first list that takes longer than SYNC_TIMEOUT_SECONDS
    (50,000 bindings on a loaded apiserver) is named in a warning, and `caches_synced` still comes when it is done, not
    at the timeout."""
    informers = list(informers)
    synced = await asyncio.gather(*(informer.wait_synced(SYNC_TIMEOUT_SECONDS) for informer in informers))
    if not all(synced):
        waiting = sorted(informer.name for informer, done in zip(informers, synced, strict=True) if not done)
        log.warning("caches_sync_slow", waiting=waiting, seconds=SYNC_TIMEOUT_SECONDS)
        while not all(await asyncio.gather(*(informer.wait_synced(SYNC_POLL_SECONDS) for informer in informers))):
            pass
    log.info("caches_synced")


def queue_keys(resource: Resource, cache: Cache, queues: Mapping[str, WorkQueue]) -> ChangeHandler:
    """What the informer of `resource` does with an event: run the key map of each watch on it (`CONTROLLERS`) once,
    and queue each key with the controller of the key's kind, if that controller declared the watch. `queues` is read
    at each event: the term's queues by kind, and none outside a term, when only the maps that keep an index of the
    cache run (`INDEXING_KEY_MAPS`)."""
    routes = {
        (watch.keys, spec.resource.kind) for spec in CONTROLLERS for watch in spec.watches if watch.resource == resource
    }
    maps = tuple(dict.fromkeys(keys for keys, _ in routes))

    def changed(key: str) -> None:
        for keys in maps:
            if not queues and keys not in INDEXING_KEY_MAPS:
                continue
            for kind, target in keys(cache, resource.kind, key):
                queue = queues.get(kind) if (keys, kind) in routes else None
                if queue is not None:
                    queue.add(target, first=kind in BINDING_KINDS and may_act_on(cache.get(kind, target)))

    return changed


async def queue_every_key(cache: Cache, queues: Mapping[str, WorkQueue]) -> int:
    """Queue every cached object of each queue's kind, the bindings the loop may have to act on first (`may_act_on`):
    what a new term starts from, in place of the events a list would have reported. How many were queued."""
    queued = 0
    for kind, queue in list(queues.items()):
        informer = cache.informers[kind]
        for key in list(informer.cache):
            queue.add(key, first=kind in BINDING_KINDS and may_act_on(informer.get(key)))
            queued += 1
            if queued % QUEUED_PER_STEP == 0:
                await asyncio.sleep(0)
    return queued
