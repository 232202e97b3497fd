"""Adapters between the API and the decisions in `failover/`: read, decide, write with a precondition, record events.

Nothing is decided here. A decision made on the informer's cache is made again on a fresh GET before anything is
written, and every write carries the resourceVersion it was decided on, so a stale cache or a second replica can
never append a second eviction task: the write fails with 409 and the key is reconciled again on fresh data.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

import structlog
from kubernetes.client.exceptions import ApiException
from prometheus_client import CollectorRegistry, Counter

from controllers.events import EventRecorder
from controllers.kube import (
    CLUSTER_RESOURCE_BINDINGS,
    CLUSTERS,
    RESOURCE_BINDINGS,
    WORKLOAD_REBALANCERS,
    CustomObjects,
    CustomResource,
)
from failover.application_failover import decide_application_failover
from failover.decision import DecisionSettings, Event, ObjectRef, earliest
from failover.failback import decide_failback
from failover.graceful_eviction import decide_graceful_eviction
from failover.rebalancer import decide_rebalance, referenced_bindings

log = structlog.get_logger("failover_relay.reconcile")

Clock = Callable[[], datetime]
Cache = Callable[[], Iterable[Mapping[str, Any]]]

API_VERSIONS = {r.kind: r.api_version
                for r in (RESOURCE_BINDINGS, CLUSTER_RESOURCE_BINDINGS, WORKLOAD_REBALANCERS, CLUSTERS)}
# A condition that lasts (a cluster unhealthy without propagateDeps) yields the same event on every reconcile;
# one per object, reason and message within this window is enough for `kubectl describe`.
EVENT_REPEAT_SECONDS = 600.0


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


class ReconcileMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.evictions = Counter("failover_relay_evictions_total",
                                 "Clusters removed from a binding by application failover.", registry=registry)
        self.tasks_removed = Counter("failover_relay_eviction_tasks_removed_total",
                                     "Graceful eviction tasks ended.", registry=registry)
        self.rebalances = Counter("failover_relay_rebalancer_stamps_total",
                                  "Bindings stamped with rescheduleTriggeredAt by a WorkloadRebalancer.",
                                  registry=registry)
        self.failbacks = Counter("failover_relay_failbacks_total",
                                 "WorkloadRebalancers created to fail back to a recovered cluster.", registry=registry)


class Recorder:
    """Events through `EventRecorder`, without repeating one (object, reason, message) within the window."""

    def __init__(self, recorder: EventRecorder, clock: Callable[[], float] = time.monotonic) -> None:
        self.recorder = recorder
        self.clock = clock
        self._recent: dict[tuple[str, str, str, str], float] = {}

    async def record(self, subject: Mapping[str, Any], events: Iterable[Event]) -> None:
        for event in events:
            regarding = subject if event.regarding is None else reference_object(event.regarding)
            metadata = regarding.get("metadata") or {}
            key = (str(regarding.get("kind")), f"{metadata.get('namespace')}/{metadata.get('name')}",
                   event.reason, event.message)
            now = self.clock()
            if now - self._recent.get(key, -EVENT_REPEAT_SECONDS) < EVENT_REPEAT_SECONDS:
                continue
            self._recent[key] = now
            if len(self._recent) > 10_000:
                self._recent = {k: t for k, t in self._recent.items() if now - t < EVENT_REPEAT_SECONDS}
            log.info("event", kind=key[0], object=key[1], type=event.type, reason=event.reason,
                     message=event.message)
            await self.recorder.record(regarding, event.type, event.reason, event.message)


def reference_object(ref: ObjectRef) -> dict[str, Any]:
    metadata = {"name": ref.name, **({"namespace": ref.namespace} if ref.namespace else {})}
    return {"apiVersion": API_VERSIONS.get(ref.kind, ""), "kind": ref.kind, "metadata": metadata}


def with_identity(obj: Mapping[str, Any], resource: CustomResource) -> dict[str, Any]:
    """Items of a list may come without kind/apiVersion; the decisions need the kind."""
    return {"apiVersion": resource.api_version, "kind": resource.kind, **obj}


def conditional(patch: Mapping[str, Any], obj: Mapping[str, Any]) -> dict[str, Any]:
    """`patch` with the resourceVersion it was decided on: the apiserver answers 409 if the object moved on."""
    metadata = dict(patch.get("metadata") or {})
    metadata["resourceVersion"] = (obj.get("metadata") or {}).get("resourceVersion")
    return {**patch, "metadata": metadata}


class BindingReconciler:
    """Application failover then graceful eviction, for one ResourceBinding or ClusterResourceBinding."""

    def __init__(self, objects: CustomObjects, cached: Callable[[str], Mapping[str, Any] | None],
                 recorder: Recorder, settings: DecisionSettings, metrics: ReconcileMetrics,
                 clock: Clock = utc_now) -> None:
        self.objects, self.cached, self.recorder = objects, cached, recorder
        self.settings, self.metrics, self.clock = settings, metrics, clock

    async def __call__(self, key: str) -> timedelta | None:
        cached = self.cached(key)
        if cached is None:
            return None
        resource = self.objects.resource
        binding = with_identity(cached, resource)
        now = self.clock()
        failover = decide_application_failover(binding, self.settings, now)
        if failover.patch:
            binding = with_identity(await self._fresh(key), resource)
            failover = decide_application_failover(binding, self.settings, now)
        if failover.patch:
            binding = with_identity(await asyncio.to_thread(
                self.objects.patch, key, conditional(failover.patch, binding)), resource)
            if failover.evicted:  # most patches only start a cluster's unhealthy timer
                self.metrics.evictions.inc(len(failover.evicted))
                log.info("clusters_evicted", kind=resource.kind, binding=key, clusters=list(failover.evicted))
        await self.recorder.record(binding, failover.events)

        eviction = decide_graceful_eviction(binding, self.settings, now)
        if eviction.patch and not failover.patch:
            binding = with_identity(await self._fresh(key), resource)
            eviction = decide_graceful_eviction(binding, self.settings, now)
        if eviction.patch:
            binding = with_identity(await asyncio.to_thread(
                self.objects.patch, key, conditional(eviction.patch, binding)), resource)
            self.metrics.tasks_removed.inc(len(eviction.ended))
            log.info("eviction_tasks_ended", kind=resource.kind, binding=key,
                     clusters=[task.from_cluster for task in eviction.ended])
        await self.recorder.record(binding, eviction.events)
        return earliest(failover.requeue_after, eviction.requeue_after)

    async def _fresh(self, key: str) -> dict[str, Any]:
        return await asyncio.to_thread(self.objects.get, key)


class RebalancerReconciler:
    """WorkloadRebalancer: stamp bindings, write status, expire after the TTL."""

    def __init__(self, rebalancers: CustomObjects, bindings: CustomObjects, cluster_bindings: CustomObjects,
                 cached: Callable[[str], Mapping[str, Any] | None], recorder: Recorder,
                 settings: DecisionSettings, metrics: ReconcileMetrics, clock: Clock = utc_now) -> None:
        self.rebalancers, self.cached, self.recorder = rebalancers, cached, recorder
        self.binding_objects = {RESOURCE_BINDINGS.kind: bindings, CLUSTER_RESOURCE_BINDINGS.kind: cluster_bindings}
        self.settings, self.metrics, self.clock = settings, metrics, clock

    async def __call__(self, key: str) -> timedelta | None:
        if self.cached(key) is None:
            return None
        try:
            rebalancer = with_identity(await asyncio.to_thread(self.rebalancers.get, key), WORKLOAD_REBALANCERS)
        except ApiException as error:
            if error.status == 404:
                return None
            raise
        now = self.clock()
        bindings = {ref: binding for ref in referenced_bindings(rebalancer)
                    if (binding := await self._read(ref)) is not False}
        decision = decide_rebalance(rebalancer, bindings, self.settings, now)
        for _ in range(len(decision.stamps) + 1):
            vanished = await self._stamp_all(decision)
            if vanished is None:
                return self.settings.rebalancer_retry
            if not vanished:
                break
            bindings.update({ref: None for ref in vanished})
            decision = decide_rebalance(rebalancer, bindings, self.settings, now)
        if decision.status_patch:
            rebalancer = with_identity(await asyncio.to_thread(
                self.rebalancers.patch_status, key, conditional(decision.status_patch, rebalancer)),
                WORKLOAD_REBALANCERS)
        await self.recorder.record(rebalancer, decision.events)
        if decision.delete:
            resource_version = (rebalancer.get("metadata") or {}).get("resourceVersion")
            try:
                await asyncio.to_thread(self.rebalancers.delete, key, resource_version)
            except ApiException as error:
                if error.status != 404:
                    raise
            log.info("rebalancer_expired", rebalancer=key)
            return None
        return decision.requeue_after

    async def _read(self, ref: ObjectRef) -> Mapping[str, Any] | None | bool:
        """The binding, None when it does not exist, False when it could not be read (retried later)."""
        objects = self.binding_objects[ref.kind]
        try:
            return await asyncio.to_thread(objects.get, f"{ref.namespace}/{ref.name}" if ref.namespace else ref.name)
        except ApiException as error:
            if error.status == 404:
                return None
            log.warning("binding_read_failed", binding=str(ref), status=error.status)
            return False

    async def _stamp_all(self, decision: Any) -> list[ObjectRef] | None:
        """Apply the stamps; the refs that turned out not to exist, or None when a stamp failed otherwise."""
        vanished = []
        for stamp in decision.stamps:
            ref = stamp.binding
            objects = self.binding_objects[ref.kind]
            try:
                await asyncio.to_thread(objects.patch, f"{ref.namespace}/{ref.name}" if ref.namespace else ref.name,
                                        stamp.patch)
            except ApiException as error:
                if error.status == 404:
                    vanished.append(ref)
                    continue
                log.warning("binding_stamp_failed", binding=str(ref), status=error.status)
                return None
            self.metrics.rebalances.inc()
        return vanished


class FailbackReconciler:
    """One Cluster: when it has recovered and settled, a WorkloadRebalancer moves its workloads back."""

    def __init__(self, clusters: CustomObjects, rebalancers: CustomObjects, bindings: CustomObjects,
                 cluster_bindings: CustomObjects, cached: Callable[[str], Mapping[str, Any] | None],
                 all_bindings: Cache, all_policies: Cache, recorder: Recorder, settings: DecisionSettings,
                 metrics: ReconcileMetrics, clock: Clock = utc_now) -> None:
        self.clusters, self.rebalancers, self.cached = clusters, rebalancers, cached
        self.binding_objects = {RESOURCE_BINDINGS.kind: bindings, CLUSTER_RESOURCE_BINDINGS.kind: cluster_bindings}
        self.all_bindings, self.all_policies, self.recorder = all_bindings, all_policies, recorder
        self.settings, self.metrics, self.clock = settings, metrics, clock

    async def __call__(self, key: str) -> timedelta | None:
        cached = self.cached(key)
        if cached is None:
            return None
        cluster = with_identity(cached, self.clusters.resource)
        decision = decide_failback(cluster, list(self.all_bindings()), list(self.all_policies()), self.settings,
                                   self.clock())
        if decision.rebalancer is not None:
            try:
                await asyncio.to_thread(self.rebalancers.create, decision.rebalancer)
                self.metrics.failbacks.inc()
            except ApiException as error:
                if error.status != 409:  # AlreadyExists: created by an earlier attempt for this recovery
                    raise
        for binding_patch in decision.binding_patches:
            ref = binding_patch.binding
            await asyncio.to_thread(self.binding_objects[ref.kind].patch,
                                    f"{ref.namespace}/{ref.name}" if ref.namespace else ref.name, binding_patch.patch)
        if decision.cluster_patch:
            cluster = with_identity(await asyncio.to_thread(
                self.clusters.patch, key, conditional(decision.cluster_patch, cluster)), self.clusters.resource)
        await self.recorder.record(cluster, decision.events)
        return decision.requeue_after
