"""Adapters between the API and the decisions in `failover/`: read, decide, write with a precondition, record events.

Nothing is decided here. Every write carries a precondition on the version it was decided on (the resourceVersion,
or for the writes of a storm, a task's state, the fence record and the wake, a test of the fields their decision
read: failover/reconcile/preconditions.py), so a stale cache or a second replica can never append a second eviction
task: the write fails, the decision is made again on a fresh GET, and a second failure reconciles the key again
(`_Steps`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import structlog
from kubernetes.client.exceptions import ApiException
from prometheus_client import CollectorRegistry, Counter, Gauge
from urllib3.exceptions import HTTPError

from controllers.cache import Cache, with_identity
from controllers.client import KarmadaClient
from controllers.events import EventRecorder
from controllers.kube import conflict, not_found, precondition_failed
from controllers.storage_fence import StorageFence
from controllers.storm_metrics import StormMetrics
from failover.core import binding as b
from failover.core.api import CLUSTERS, WORKLOAD_REBALANCERS, WORKS
from failover.core.cluster import is_ready
from failover.core.decision import NORMAL, Event, clip_message, earliest
from failover.core.loop_settings import DecisionSettings
from failover.core.names import ObjectRef, object_key
from failover.core.work import MemberCopy, applied_by, work_cluster
from failover.fence.fenced_copies import forget_fenced
from failover.fence.old_copy import EVENT_FENCED_COPY, EVENT_WAITING, FenceDecision, decide_fencing
from failover.reconcile.application_failover import FailoverDecision, decide_application_failover
from failover.reconcile.cluster_failover import decide_cluster_failover_state
from failover.reconcile.failback import decide_failback
from failover.reconcile.graceful_eviction import ENDED_HEALTHY, decide_graceful_eviction
from failover.reconcile.preconditions import READS_FENCING, Path, eviction_reads, fill_reads, guarded_patch
from failover.reconcile.rebalancer import decide_rebalance, referenced_bindings
from failover.reconcile.record_keeping import annotation_patch, has_history, with_records
from failover.reconcile.stateless_restart import stateless_restart_events
from failover.state.history import returned_cluster_patch

log = structlog.get_logger("failover_relay.reconcile")

Clock = Callable[[], datetime]
# An old copy that could not be deleted through the cluster proxy (the cluster is still coming back) is tried again
# after this.
COPY_RETRY = timedelta(seconds=2)


def utc_now() -> datetime:
    return datetime.now(UTC)


class ReconcileMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.evictions = Counter(
            "failover_relay_evictions_total",
            "Clusters removed from a binding by application failover.",
            registry=registry,
        )
        self.tasks_removed = Counter(
            "failover_relay_eviction_tasks_removed_total", "Graceful eviction tasks ended.", registry=registry
        )
        self.rebalances = Counter(
            "failover_relay_rebalancer_stamps_total",
            "Bindings stamped with rescheduleTriggeredAt by a WorkloadRebalancer.",
            registry=registry,
        )
        self.failbacks = Counter(
            "failover_relay_failbacks_total",
            "WorkloadRebalancers created to fail back to a recovered cluster.",
            registry=registry,
        )
        self.state_fills = Counter(
            "failover_relay_preserved_state_fills_total",
            "Taint manager eviction tasks given their preserved state.",
            registry=registry,
        )
        self.works_released = Counter(
            "failover_relay_works_released_total",
            "Old Works released: fenced (cluster unreachable, copy recorded), deleted (copy deleted through proxy) or"
            " handed (a Pull cluster's Work left to its agent).",
            ("why",),
            registry=registry,
        )
        self.copies_deleted = Counter(
            "failover_relay_member_copies_deleted_total",
            "Old copies deleted from member clusters through the cluster proxy.",
            registry=registry,
        )
        self.wakes = Counter(
            "failover_relay_binding_wakes_total",
            "Eviction task notes that woke Karmada's binding controller once the old copy was gone.",
            registry=registry,
        )
        self.waiting = _KeySet(
            Gauge(
                "failover_relay_bindings_waiting_for_cluster",
                "Bindings whose new copy waits for the old one on a cluster that is not Ready.",
                registry=registry,
            )
        )
        self.kept = KeptOnCluster(
            Gauge(
                "failover_relay_workloads_kept_on_last_cluster",
                "Workloads due for failover but kept on the last cluster that can run them: no other cluster can take"
                " them (failover/reconcile/last_cluster.py).",
                ("member_cluster",),
                registry=registry,
            )
        )
        self.precondition_failures = Counter(
            "failover_relay_binding_precondition_failures_total",
            "Binding writes decided on the cache that found the binding changed (a failed test of a field the decision"
            " read, or a 409 on the cached resourceVersion): decided again on a fresh read.",
            registry=registry,
        )
        self.storm = StormMetrics(registry)


class _KeySet:
    """A set of keys whose size is a gauge."""

    def __init__(self, gauge: Gauge) -> None:
        self.gauge, self.keys = gauge, set[Any]()

    def add(self, key: Any) -> None:
        self.keys.add(key)
        self.gauge.set(len(self.keys))

    def discard(self, key: Any) -> None:
        self.keys.discard(key)
        self.gauge.set(len(self.keys))


class KeptOnCluster:
    """Which bindings are kept on which of their clusters, counted per cluster (Karmada's `member_cluster` label)."""

    def __init__(self, gauge: Gauge) -> None:
        self.gauge, self.clusters = gauge, dict[Any, tuple[str, ...]]()

    def set(self, key: Any, clusters: tuple[str, ...]) -> None:
        touched = {*self.clusters.get(key, ()), *clusters}
        if clusters:
            self.clusters[key] = clusters
        else:
            self.clusters.pop(key, None)
        for cluster in touched:
            self.gauge.labels(cluster).set(sum(cluster in kept for kept in self.clusters.values()))


def _version(obj: Mapping[str, Any] | None) -> object:
    return (obj or {}).get("metadata", {}).get("resourceVersion")


class OwnWrites:
    """The binding each of our writes produced, until the informer's cache has it. A reconcile queued by our own write
    (the Work it released was deleted, the binding changed) often runs before the watch event of that write arrives:
    deciding on the version the write replaced, it asked for the same write again, which then failed its
    precondition and cost a read (client-go's `MutationCache` solves the same)."""

    def __init__(self) -> None:
        self._replaced: dict[str, set[object]] = {}
        self._latest: dict[str, dict[str, Any]] = {}

    def record(self, key: str, before: Mapping[str, Any], after: dict[str, Any]) -> None:
        self._replaced.setdefault(key, set()).add(_version(before))
        self._latest[key] = after

    def latest(self, key: str, cached: dict[str, Any] | None) -> dict[str, Any] | None:
        """`cached`, or our newer write while the cache still holds a version one of our writes replaced."""
        if key not in self._latest:
            return cached
        if cached is not None and _version(cached) in self._replaced[key]:
            return self._latest[key]
        del self._latest[key], self._replaced[key]  # caught up, gone, or written since by someone else
        return cached


def conditional(patch: Mapping[str, Any], obj: Mapping[str, Any]) -> dict[str, Any]:
    """`patch` with the resourceVersion it was decided on: the apiserver answers 409 if the object moved on."""
    metadata = dict(patch.get("metadata") or {})
    metadata["resourceVersion"] = (obj.get("metadata") or {}).get("resourceVersion")
    return {**patch, "metadata": metadata}


def ref_of(kind: str, key: str) -> ObjectRef:
    namespace, _, name = key.rpartition("/")
    return ObjectRef(kind, name, namespace)


class BindingReconciler:
    """One ResourceBinding or ClusterResourceBinding: application failover, the last good state, the state of the
    taint manager's tasks, graceful eviction, then fencing of the old copy (failover/reconcile/fencing.py)."""

    # The storage fence, set by the loop when `fence.storage` is on (controllers/storage_fence.py).
    storage_fence: StorageFence | None = None

    def __init__(
        self,
        kind: str,
        client: KarmadaClient,
        cache: Cache,
        recorder: EventRecorder,
        settings: DecisionSettings,
        metrics: ReconcileMetrics,
        clock: Clock = utc_now,
    ) -> None:
        self.kind, self.client, self.cache, self.recorder = kind, client, cache, recorder
        self.resource = client.resource(kind)
        self.settings, self.metrics, self.clock = settings, metrics, clock
        self.own = OwnWrites()

    async def __call__(self, key: str) -> timedelta | None:
        binding = self.own.latest(key, self.cache.get(self.kind, key))
        if binding is None:
            self.metrics.kept.set((self.kind, key), ())
            self.metrics.storm.observe((self.kind, key), None, (), self.clock())
            return None
        ref = ref_of(self.kind, key)
        now, settings = self.clock(), self.settings
        step = _Steps(self, ref, binding, key)

        clusters = self.cache.clusters() if self.cache.synced(CLUSTERS.kind) else None
        works = self.cache.works_of(binding) if self.cache.synced(WORKS.kind) else ()

        def decide_failover(obj: dict[str, Any]) -> tuple[FailoverDecision, dict[str, Any] | None]:
            decision = decide_application_failover(obj, settings, now, clusters)
            # One write for the eviction and the records it calls for (its history move), and for a healthy
            # binding's records alone: a new leader's burst of expired tolerations is one round trip each.
            return decision, with_records(obj, decision.patch, works, now)

        failover, patch = await step.apply(decide_failover, lambda decided: decided[1])
        if has_history(patch):
            log.info("history_recorded", kind=self.kind, binding=key)
        if failover.patch and failover.evicted:  # most patches only start a cluster's unhealthy timer
            self.metrics.evictions.inc(len(failover.evicted))
            log.info("clusters_evicted", kind=self.kind, binding=key, clusters=list(failover.evicted))
        if failover.kept and failover.kept != self.metrics.kept.clusters.get((self.kind, key)):
            log.warning("kept_on_last_cluster", kind=self.kind, binding=key, clusters=list(failover.kept))
        self.metrics.kept.set((self.kind, key), failover.kept)
        await self.recorder.record(step.binding, failover.events)

        fill = await step.apply(
            decide_cluster_failover_state, reads=lambda obj, decision: fill_reads(obj, decision.filled)
        )
        if fill.patch:
            self.metrics.state_fills.inc(len(fill.filled))
            log.info("preserved_state_filled", kind=self.kind, binding=key, clusters=list(fill.filled))
        await self.recorder.record(step.binding, fill.events)

        eviction = await step.apply(
            lambda obj: decide_graceful_eviction(obj, settings, now), reads=lambda obj, _: eviction_reads(obj)
        )
        if eviction.patch and eviction.ended:  # other patches only stamp a task's creationTimestamp
            self.metrics.tasks_removed.inc(len(eviction.ended))
            log.info(
                "eviction_tasks_ended",
                kind=self.kind,
                binding=key,
                clusters=[task.from_cluster for task in eviction.ended],
            )
        await self.recorder.record(step.binding, eviction.events)

        if self.cache.synced(WORKS.kind):  # issue 13 point 7: the workload's own configuration loses the state
            await self.recorder.record(
                step.binding, stateless_restart_events(step.binding, self.cache.works_of(step.binding))
            )

        fencing = await self._fence(step, key, now)
        if self.cache.synced(WORKS.kind):
            work_clusters = {cluster for work in self.cache.works_of(step.binding) if (cluster := work_cluster(work))}
            restored = {task.from_cluster for task in eviction.ended if task.why == ENDED_HEALTHY}
            self.metrics.storm.observe((self.kind, key), step.binding, work_clusters, now, restored)
        return earliest(failover.requeue_after, eviction.requeue_after, fencing)

    async def _fence(self, step: _Steps, key: str, now: datetime) -> timedelta | None:
        if not (self.cache.synced(WORKS.kind) and self.cache.synced(CLUSTERS.kind)):
            return None  # "no Work" on an empty cache would be a guess
        works, clusters = self.cache.works_of(step.binding), self.cache.clusters()
        acknowledged: frozenset[tuple[str, str]] = frozenset()
        stored_delay = None
        if self.storage_fence is not None:
            acknowledged, stored_delay = await self.storage_fence.check(
                step.binding, works, clusters, now, lambda: self.client.get(step.ref)
            )

        async def decide(works: Iterable[Mapping[str, Any]]) -> FenceDecision:
            decision = await step.apply(
                lambda obj: decide_fencing(obj, works, clusters, self.settings, now, acknowledged),
                lambda decision: decision.binding_patch,
                lambda *_: READS_FENCING,
            )
            if decision.woken:
                self.metrics.wakes.inc(len(decision.woken))
                log.info("binding_controller_woken", kind=self.kind, binding=key, clusters=list(decision.woken))
            return decision

        fence = await decide(works)
        retry, gone = None, set[tuple[str, str]]()
        deleted: list[tuple[str, str]] = []  # (cluster, Work) whose copies are deleted: their fence records can go
        for release in fence.releases:
            if release.delete_first and not await self._delete_copies(step.binding, release.delete_first, clusters):
                if not release.probe:  # a probe is looked at again at the decision's requeue
                    retry = COPY_RETRY
                continue
            work_ref = ObjectRef(WORKS.kind, release.name, release.namespace)
            try:
                metadata: dict[str, Any] = {
                    "finalizers": list(release.finalizers),
                    "resourceVersion": release.resource_version,
                }
                if release.unlabel:  # a Pull cluster's Work handed to its agent (failover/reconcile/pull_clusters.py)
                    metadata["labels"] = dict.fromkeys(release.unlabel)
                await self.client.patch(work_ref, {"metadata": metadata})
            except ApiException as error:
                if not_found(error):
                    continue
                raise
            if not release.finalizers:  # the apiserver deleted it with its last finalizer
                gone.add((release.namespace, release.name))
            if release.delete_first:
                deleted.append((release.cluster, release.name))
            why = "handed" if release.unlabel else "fenced" if not release.delete_first else "deleted"
            self.metrics.works_released.labels(why).inc()
            log.info(
                "work_released",
                binding=key,
                work=str(work_ref),
                cluster=release.cluster,
                why=why,
                deleted_copies=len(release.delete_first),
            )
        if gone:
            # The wake the Works' deletion calls for, in this reconcile rather than in the one their watch events
            # queue: a storm's release is then one reconcile per binding, not two.
            await decide([work for work in works if _identity(work) not in gone])
        done = []
        for copy in fence.cleanups:
            if await self._delete_copies(step.binding, (copy,), clusters):
                done.append(copy)
            elif is_ready(clusters.get(copy.cluster)):
                retry = COPY_RETRY
        if self.storage_fence is not None and (deleted or done or fence.deleted_by_agent):
            agent = ((copy.cluster, copy.work) for copy in fence.deleted_by_agent)  # a Pull cluster's, by its agent
            await self.storage_fence.forget([*deleted, *((copy.cluster, copy.work) for copy in done), *agent])
        forget = forget_fenced(step.binding, done)
        if forget:
            # The same write records the dead cluster's return: a retry after a conflict finds nothing to forget.
            returned = returned_cluster_patch(step.binding, {copy.cluster for copy in done}, now)
            await step.write(annotation_patch(forget, returned) or forget)
        waiting = any(event.reason == EVENT_WAITING for event in fence.events)
        (self.metrics.waiting.add if waiting else self.metrics.waiting.discard)((self.kind, key))
        await self.recorder.record(step.binding, fence.events)
        return earliest(fence.requeue_after, retry, stored_delay)

    async def _delete_copies(
        self, binding: Mapping[str, Any], copies: Iterable[MemberCopy], clusters: Mapping[str, Mapping[str, Any]]
    ) -> bool:
        """Delete old copies through the cluster proxy; True when all are gone or are not ours to delete. A member
        whose cluster is not Ready is asked first whether it answers at all (remembered per cluster)."""
        for copy in copies:
            if not is_ready(clusters.get(copy.cluster)) and not await self.client.member_answers(
                copy.cluster, self.settings.probe_interval.total_seconds()
            ):
                return False
            if not await self._delete_copy(binding, copy):
                return False
        return True

    async def _delete_copy(self, binding: Mapping[str, Any], copy: MemberCopy) -> bool:
        """Delete an old copy through the cluster proxy; True when it is gone or is not ours to delete."""
        try:
            member_object = await self.client.get_member(copy)
            if not applied_by(member_object, copy):
                log.warning(
                    "member_copy_not_ours",
                    cluster=copy.cluster,
                    object=object_key(copy.namespace, copy.name),
                    work=copy.work,
                )
                return True
            uid = str((member_object.get("metadata") or {}).get("uid") or "")
            await self.client.delete_member(copy, uid)
        except ApiException as error:
            if not_found(error) or conflict(error):  # gone, or replaced by another object since the GET
                return True
            log.warning(
                "member_copy_delete_failed",
                cluster=copy.cluster,
                object=object_key(copy.namespace, copy.name),
                status=error.status,
                reason=error.reason,
            )
            return False
        except (HTTPError, OSError, LookupError) as error:
            log.warning(
                "member_copy_delete_failed",
                cluster=copy.cluster,
                object=object_key(copy.namespace, copy.name),
                error=type(error).__name__,
                detail=str(error)[:200],
            )
            return False
        self.metrics.copies_deleted.inc()
        log.info(
            "member_copy_deleted", cluster=copy.cluster, object=object_key(copy.namespace, copy.name), work=copy.work
        )
        await self.recorder.record(
            binding,
            (
                Event(
                    NORMAL,
                    EVENT_FENCED_COPY,
                    clip_message(
                        f"deleted the old copy {copy.kind} {object_key(copy.namespace, copy.name)} from {copy.cluster}"
                    ),
                ),
            ),
        )
        return True


def _identity(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = b.metadata(obj)
    return str(meta.get("namespace")), str(meta.get("name"))


class _Steps:
    """Successive decisions on one binding, each made on the latest known object (the cache's, then what our last
    write or read returned), and written with a precondition on the version it was decided on: the resourceVersion,
    or, for a decision that says which fields it read (`reads`, failover/reconcile/preconditions.py), a JSON patch
    testing those fields, which a change elsewhere in the binding does not fail. A cache that is up to date costs no
    GET; when the precondition fails (the cache lagged, or someone wrote since), the decision is made once more on a
    fresh GET and written with that resourceVersion; a 409 then requeues the key."""

    def __init__(self, reconciler: BindingReconciler, ref: ObjectRef, binding: dict[str, Any], key: str) -> None:
        self.reconciler, self.ref, self.binding, self.key, self.fresh = reconciler, ref, binding, key, False

    def _written(self, before: Mapping[str, Any], after: Mapping[str, Any]) -> None:
        self.binding = with_identity(after, self.reconciler.resource)
        self.fresh = True
        self.reconciler.own.record(self.key, before, self.binding)

    async def apply(
        self,
        decide: Callable[[dict[str, Any]], Any],
        patch_of: Callable[[Any], Mapping[str, Any] | None] = lambda decision: decision.patch,
        reads: Callable[[dict[str, Any], Any], Iterable[Path]] | None = None,
    ) -> Any:
        decision = decide(self.binding)
        patch = patch_of(decision)
        if patch and reads is not None:
            operations = guarded_patch(self.binding, patch, reads(self.binding, decision))
            try:
                self._written(self.binding, await self.reconciler.client.json_patch(self.ref, operations))
                return decision
            except ApiException as error:
                if not precondition_failed(error):
                    raise
                self._failed(error)
        elif patch and not self.fresh:
            try:
                await self.write(patch)
                return decision
            except ApiException as error:
                if not conflict(error):
                    raise
                self._failed(error)
        if patch and not self.fresh:
            self.binding = with_identity(await self.reconciler.client.get(self.ref), self.reconciler.resource)
            self.fresh = True
            decision = decide(self.binding)
        patch = patch_of(decision)
        if patch:
            await self.write(patch)
        return decision

    def _failed(self, error: ApiException) -> None:
        self.reconciler.metrics.precondition_failures.inc()
        log.info("precondition_failed", binding=str(self.ref), status=error.status, detail=str(error.body)[:200])
        self.fresh = False

    async def write(self, patch: Mapping[str, Any]) -> None:
        self._written(self.binding, await self.reconciler.client.patch(self.ref, conditional(patch, self.binding)))


class RebalancerReconciler:
    """WorkloadRebalancer: stamp bindings, write status, expire after the TTL."""

    def __init__(
        self,
        client: KarmadaClient,
        cache: Cache,
        recorder: EventRecorder,
        settings: DecisionSettings,
        metrics: ReconcileMetrics,
        clock: Clock = utc_now,
    ) -> None:
        self.client, self.cache, self.recorder = client, cache, recorder
        self.settings, self.metrics, self.clock = settings, metrics, clock

    async def __call__(self, key: str) -> timedelta | None:
        if self.cache.get(WORKLOAD_REBALANCERS.kind, key) is None:
            return None
        ref = ref_of(WORKLOAD_REBALANCERS.kind, key)
        try:
            rebalancer = with_identity(await self.client.get(ref), WORKLOAD_REBALANCERS)
        except ApiException as error:
            if not_found(error):
                return None
            raise
        now = self.clock()
        bindings = {
            ref: binding for ref in referenced_bindings(rebalancer) if (binding := await self._read(ref)) is not False
        }
        decision = decide_rebalance(rebalancer, bindings, self.settings, now)
        for _ in range(len(decision.stamps) + 1):
            vanished = await self._stamp_all(decision)
            if vanished is None:
                return self.settings.rebalancer_retry
            if not vanished:
                break
            bindings.update(dict.fromkeys(vanished))
            decision = decide_rebalance(rebalancer, bindings, self.settings, now)
        if decision.status_patch:
            rebalancer = with_identity(
                await self.client.patch_status(ref, conditional(decision.status_patch, rebalancer)),
                WORKLOAD_REBALANCERS,
            )
        await self.recorder.record(rebalancer, decision.events)
        if decision.delete:
            try:
                await self.client.delete(ref, (rebalancer.get("metadata") or {}).get("resourceVersion"))
            except ApiException as error:
                if not not_found(error):
                    raise
            log.info("rebalancer_expired", rebalancer=key)
            return None
        return decision.requeue_after

    async def _read(self, ref: ObjectRef) -> Mapping[str, Any] | Literal[False] | None:
        """The binding, None when it does not exist, False when it could not be read (retried later)."""
        try:
            return await self.client.get(ref)
        except ApiException as error:
            if not_found(error):
                return None
            log.warning("binding_read_failed", binding=str(ref), status=error.status)
            return False

    async def _stamp_all(self, decision: Any) -> list[ObjectRef] | None:
        """Apply the stamps; the refs that turned out not to exist, or None when a stamp failed otherwise."""
        vanished = []
        for stamp in decision.stamps:
            try:
                await self.client.patch(stamp.binding, stamp.patch)
            except ApiException as error:
                if not_found(error):
                    vanished.append(stamp.binding)
                    continue
                log.warning("binding_stamp_failed", binding=str(stamp.binding), status=error.status)
                return None
            self.metrics.rebalances.inc()
        return vanished


class FailbackReconciler:
    """One Cluster: when it has recovered and settled, move its workloads back (failover/reconcile/failback.py)."""

    def __init__(
        self,
        client: KarmadaClient,
        cache: Cache,
        recorder: EventRecorder,
        settings: DecisionSettings,
        metrics: ReconcileMetrics,
        clock: Clock = utc_now,
    ) -> None:
        self.client, self.cache, self.recorder = client, cache, recorder
        self.settings, self.metrics, self.clock = settings, metrics, clock

    async def __call__(self, key: str) -> timedelta | None:
        cluster = self.cache.get(CLUSTERS.kind, key)
        if cluster is None:
            return None
        decision = decide_failback(
            cluster, self.cache.bindings(), self.cache.policies(), self.settings, self.clock(), self.cache.clusters()
        )
        if decision.rebalancer is not None:
            try:
                await self.client.create(WORKLOAD_REBALANCERS.kind, decision.rebalancer)
                self.metrics.failbacks.inc()
            except ApiException as error:
                if not conflict(error):  # AlreadyExists: created by an earlier attempt for this recovery
                    raise
        for binding_patch in decision.binding_patches:
            await self.client.patch(binding_patch.binding, binding_patch.patch)
        if decision.cluster_patch:
            cluster = with_identity(
                await self.client.patch(ref_of(CLUSTERS.kind, key), conditional(decision.cluster_patch, cluster)),
                CLUSTERS,
            )
        await self.recorder.record(cluster, decision.events)
        return decision.requeue_after
