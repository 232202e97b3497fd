"""One ResourceBinding or ClusterResourceBinding, reconciled as a pipeline: `STEPS`, in order, each a decision of
failover/ and its write. Nothing is decided here.

1. `application_failover`: evict a cluster whose copy stayed Unhealthy past its toleration, with the records of the
   move and the last good state in the same write (failover/reconcile/application_failover.py, record_keeping.py);
2. `cluster_eviction`: evict from a cluster whose NoExecute taints the placement no longer tolerates, with the
   preserved state, unless the brake holds (failover/reconcile/cluster_eviction.py, brake.py);
   `cluster_failover_state`: give the taint manager's eviction tasks their preserved state
   (failover/reconcile/cluster_failover.py);
3. `graceful_eviction`: end the tasks that are over (failover/reconcile/graceful_eviction.py);
   `handoff`: carry a planned move's handoff on where it is kept: its fence record written, the acknowledgement
   awaited, then the eviction, then done (failover/moves/handoff.py `decide_handoff`; the records through
   controllers/reconcilers/storage_fence.py);
4. `restoration`: a moved copy that runs without the state its move carried, or is parked for it, is said so
   (failover/state/empty_start.py); it is restored once its job completed a checkpoint of its own, seen in the
   checkpoint storage (failover/state/restoration.py; the adapter: controllers/reconcilers/restore_watch.py);
5. `stateless_restart`: warn when the workload's own configuration loses its state
   (failover/reconcile/stateless_restart.py);
6. `old_copy`: the old copy of a Directly purge: the storage fence's acknowledgements, the timer fence, the copies
   deleted through the cluster proxy, the wake (failover/fence/; the adapters: controllers/reconcilers/storage_fence.py,
   controllers/reconcilers/old_copies.py).

Every step writes through `BindingWrites` (controllers/access/binding_writes.py): decided on the latest known binding,
written with a precondition on what it was decided on. The key is looked at again at the earliest time a step asks.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import structlog

from controllers.access.binding_writes import BindingWrites, OwnWrites
from controllers.reconcilers.loop_parts import LoopParts
from controllers.reconcilers.moves_report import report_move
from controllers.reconcilers.old_copies import OldCopies, Released
from failover.core import binding as b
from failover.core.api import CLUSTERS, WORKS
from failover.core.cluster import is_ready
from failover.core.decision import earliest
from failover.core.names import ObjectRef
from failover.core.work import MemberCopy, work_cluster
from failover.fence.control_plane import StoredFence
from failover.fence.fenced_copies import forget_fenced
from failover.fence.old_copy import EVENT_WAITING, FenceDecision, decide_fencing
from failover.moves.handoff import DONE, STOPPING, decide_handoff, read_handoff
from failover.reconcile.application_failover import FailoverDecision, decide_application_failover
from failover.reconcile.brake import brake
from failover.reconcile.cluster_eviction import decide_cluster_evictions
from failover.reconcile.cluster_failover import decide_cluster_failover_state
from failover.reconcile.graceful_eviction import ENDED_HEALTHY, EndedTask, decide_graceful_eviction
from failover.reconcile.preconditions import READS_FENCING, cluster_eviction_reads, eviction_reads, fill_reads
from failover.reconcile.record_keeping import annotation_patch, has_history, with_records
from failover.reconcile.stateless_restart import stateless_restart_events
from failover.state.empty_start import decide_state_losses, newly_empty, state_losses, watched_clusters
from failover.state.history import returned_cluster_patch
from failover.state.restoration import decide_restored, restoring

log = structlog.get_logger("failover_relay.reconcile")

# An old copy that could not be deleted through the cluster proxy (the cluster is still coming back) is tried again
# after this.
COPY_RETRY = timedelta(seconds=2)
# How often the storage is read again for a restoring copy's first checkpoint: Flink checkpoints every few seconds to
# minutes, and the restore grace is counted in minutes.
RESTORE_POLL = timedelta(seconds=10)


@dataclass
class BindingRun:
    """One reconcile of one binding: what its steps share."""

    parts: LoopParts
    old_copies: OldCopies
    key: str
    now: datetime
    writes: BindingWrites
    ended: tuple[EndedTask, ...] = field(default=())  # the tasks graceful eviction ended

    @property
    def kind(self) -> str:
        return self.writes.ref.kind

    @property
    def binding(self) -> dict[str, Any]:
        """The binding as the last write or read left it."""
        return self.writes.binding

    def works(self) -> list[dict[str, Any]] | None:
        """The binding's Works in the cache; None before the Works are listed ("no Work" would be a guess)."""
        cache = self.parts.cache
        return cache.works_of(self.binding) if cache.synced(WORKS.kind) else None

    def clusters(self) -> dict[str, dict[str, Any]] | None:
        """Every Cluster by name; None before the Clusters are listed."""
        cache = self.parts.cache
        return cache.clusters() if cache.synced(CLUSTERS.kind) else None

    async def record(self, events: Iterable[Any]) -> None:
        await self.parts.recorder.record(self.binding, events)


Step = Callable[[BindingRun], Awaitable[timedelta | None]]


async def application_failover(run: BindingRun) -> timedelta | None:
    settings, metrics, now = run.parts.settings, run.parts.metrics, run.now
    clusters, works = run.clusters(), run.works() or ()

    def decide(obj: dict[str, Any]) -> tuple[FailoverDecision, dict[str, Any] | None]:
        decision = decide_application_failover(obj, settings, now, clusters)
        # One write for the eviction and the records it calls for (its history move), and for a healthy binding's
        # records alone: a new leader's burst of expired tolerations is one round trip each.
        return decision, with_records(obj, decision.patch, works, now)

    failover, patch = await run.writes.apply(decide, lambda decided: decided[1])
    if has_history(patch):
        log.info("history_recorded", kind=run.kind, binding=run.key)
    if failover.patch and failover.evicted:  # most patches only start a cluster's unhealthy timer
        metrics.evictions.inc(len(failover.evicted))
        log.info("clusters_evicted", kind=run.kind, binding=run.key, clusters=list(failover.evicted))
    if failover.kept and failover.kept != metrics.kept.clusters.get((run.kind, run.key)):
        log.warning("kept_on_last_cluster", kind=run.kind, binding=run.key, clusters=list(failover.kept))
    metrics.kept.set((run.kind, run.key), failover.kept)
    await run.record(failover.events)
    return failover.requeue_after


async def cluster_eviction(run: BindingRun) -> timedelta | None:
    settings, clusters = run.parts.settings, run.clusters()
    if not settings.cluster_evictions or clusters is None:
        return None
    held = brake(clusters, settings.unhealthy_cluster_threshold)
    eviction = await run.writes.apply(
        lambda obj: decide_cluster_evictions(obj, clusters, settings, run.now, held),
        reads=lambda obj, decision: cluster_eviction_reads(obj, decision.evicted),
    )
    if eviction.patch:
        run.parts.metrics.cluster_evictions.inc(len(eviction.evicted))
        log.info("cluster_failover_evicted", kind=run.kind, binding=run.key, clusters=list(eviction.evicted))
    run.parts.metrics.braked.set((run.kind, run.key), eviction.braked)
    await run.record(eviction.events)
    return eviction.requeue_after


async def cluster_failover_state(run: BindingRun) -> timedelta | None:
    fill = await run.writes.apply(
        decide_cluster_failover_state, reads=lambda obj, decision: fill_reads(obj, decision.filled)
    )
    if fill.patch:
        run.parts.metrics.state_fills.inc(len(fill.filled))
        log.info("preserved_state_filled", kind=run.kind, binding=run.key, clusters=list(fill.filled))
    await run.record(fill.events)
    return None


async def graceful_eviction(run: BindingRun) -> timedelta | None:
    settings, now = run.parts.settings, run.now
    eviction = await run.writes.apply(
        lambda obj: decide_graceful_eviction(obj, settings, now), reads=lambda obj, _: eviction_reads(obj)
    )
    run.ended = eviction.ended
    if eviction.patch and eviction.ended:  # other patches only stamp a task's creationTimestamp
        run.parts.metrics.tasks_removed.inc(len(eviction.ended))
        log.info(
            "eviction_tasks_ended",
            kind=run.kind,
            binding=run.key,
            clusters=[task.from_cluster for task in eviction.ended],
        )
    await run.record(eviction.events)
    return eviction.requeue_after


async def handoff(run: BindingRun) -> timedelta | None:
    """A planned move's handoff in flight (failover/moves/handoff.py), advanced from the binding that keeps it: each
    phase written on the binding's resourceVersion, decided again on a fresh read when another writer came first."""
    moving = read_handoff(run.binding)
    works, clusters = run.works(), run.clusters()
    if moving is None or moving.phase == DONE or works is None or clusters is None:
        return None
    parts, now = run.parts, run.now
    fence = parts.storage_fence
    # What the storage says (the record, its acknowledgement, the member relays' heartbeats) matters only while the
    # old copy is stopping.
    watched: frozenset[str] | None = None
    stored: dict[tuple[str, str], StoredFence | None] = {}
    if fence is not None and moving.phase == STOPPING:
        watched = await fence.watched(clusters, now)
        held = await fence.stored(moving.source)
        stored[(moving.source, moving.fence_id)] = (
            None if held is None else held.get(moving.fence_id, StoredFence(False))
        )
    decision = await run.writes.apply(lambda obj: decide_handoff(obj, works, stored, parts.settings, now, watched))
    if fence is not None and decision.record is not None:
        await fence.write_record(decision.record)
    if fence is not None and decision.forget:
        await fence.forget(decision.forget)
    if decision.move is not None:
        report_move(parts.metrics, decision.move)
    await run.record(decision.events)
    return decision.requeue_after


async def restoration(run: BindingRun) -> timedelta | None:
    await _state_losses(run)
    if not restoring(run.binding):
        return None
    watch, now = run.parts.restore_watch, run.now
    checkpointed = {} if watch is None else await watch.checkpointed(run.binding, run.works() or ())
    decision = await run.writes.apply(lambda obj: decide_restored(obj, checkpointed, watch is not None, now))
    for cluster, took in decision.restored:
        run.parts.metrics.restores.labels(cluster).observe(took.total_seconds())
        log.info("copy_restored", kind=run.kind, binding=run.key, member_cluster=cluster, seconds=took.total_seconds())
    await run.record(decision.events)
    return RESTORE_POLL if restoring(run.binding) else None


async def _state_losses(run: BindingRun) -> None:
    """The moved copies running without the state their move carried, or parked for it (before `decide_restored`
    drops a record: a copy that started empty may checkpoint at once)."""
    metrics, works = run.parts.metrics, run.works()
    if not watched_clusters(run.binding):
        metrics.without_state.set((run.kind, run.key), ())
        return
    if works is None:
        return
    watch, explained = run.parts.restore_watch, {}
    if watch is not None:
        for cluster, job_id in newly_empty(run.binding).items():
            explained[cluster] = await watch.explain(works, cluster, job_id)
    decision = await run.writes.apply(lambda obj: decide_state_losses(obj, works, explained, run.now))
    for loss in decision.found:
        metrics.state_losses.labels(loss.outcome.value).inc()
        log.warning(
            "copy_without_state",
            kind=run.kind,
            binding=run.key,
            member_cluster=loss.cluster,
            outcome=loss.outcome.value,
            job_id=loss.job_id,
            reason=loss.reason,
        )
    for cluster in decision.resolved:
        log.info("state_loss_resolved", kind=run.kind, binding=run.key, member_cluster=cluster)
    losses = state_losses(run.binding).values()
    metrics.without_state.set((run.kind, run.key), tuple(loss.outcome.value for loss in losses))
    await run.record(decision.events)


async def stateless_restart(run: BindingRun) -> timedelta | None:
    works = run.works()
    if works is not None:
        await run.record(stateless_restart_events(run.binding, works))
    return None


async def old_copy(run: BindingRun) -> timedelta | None:
    """The old copy of a Directly purge (failover/fence/old_copy.py): decide on the binding, its Works and the
    Clusters (with what the storage fence's member relays acknowledged), release or hand over the Works, delete
    the copies a returning cluster still runs, forget what is gone."""
    works, clusters = run.works(), run.clusters()
    if works is None or clusters is None:
        return None
    parts, now = run.parts, run.now
    acknowledged: frozenset[tuple[str, str]] = frozenset()
    stored_delay = None
    if parts.storage_fence is not None:
        stored = await parts.storage_fence.check(run.binding, works, clusters, now)
        if stored.write:  # only on the apiserver's word
            await parts.storage_fence.write(stored.write, await run.writes.reread(), works, clusters, now)
        acknowledged, stored_delay = stored.acknowledged, stored.requeue_after

    async def decide(current: list[dict[str, Any]]) -> FenceDecision:
        decision = await run.writes.apply(
            lambda obj: decide_fencing(obj, current, clusters, parts.settings, now, acknowledged),
            lambda decision: decision.binding_patch,
            lambda *_: READS_FENCING,
        )
        if decision.woken:
            parts.metrics.wakes.inc(len(decision.woken))
            log.info("binding_controller_woken", kind=run.kind, binding=run.key, clusters=list(decision.woken))
        return decision

    fence = await decide(works)
    retry, gone, deleted = await _release(run, fence, clusters)
    if gone:
        # The wake the Works' deletion calls for, in this reconcile rather than in the one their watch events queue:
        # a storm's release is then one reconcile per binding, not two.
        await decide([work for work in works if _identity(work) not in gone])
    done = []
    for copy in fence.cleanups:
        if await run.old_copies.delete(run.binding, (copy,), clusters):
            done.append(copy)
        elif is_ready(clusters.get(copy.cluster)):
            retry = COPY_RETRY
    if parts.storage_fence is not None and (deleted or done or fence.deleted_by_agent):
        by_agent = [(copy.cluster, copy.work) for copy in fence.deleted_by_agent]  # a Pull cluster's, by its agent
        await parts.storage_fence.forget([*deleted, *((copy.cluster, copy.work) for copy in done), *by_agent])
    await _forget(run, done)
    waiting = any(event.reason == EVENT_WAITING for event in fence.events)
    (parts.metrics.waiting.add if waiting else parts.metrics.waiting.discard)((run.kind, run.key))
    await run.record(fence.events)
    return earliest(fence.requeue_after, retry, stored_delay)


async def _release(
    run: BindingRun, fence: FenceDecision, clusters: Mapping[str, Mapping[str, Any]]
) -> tuple[timedelta | None, set[tuple[str, str]], list[tuple[str, str]]]:
    """Each release of `fence`: (when to try again, the Works the apiserver deleted by (namespace, name), the
    (cluster, Work name) pairs whose copies were deleted first)."""
    retry, gone, deleted = None, set[tuple[str, str]](), list[tuple[str, str]]()
    for release in fence.releases:
        outcome = await run.old_copies.release(run.binding, release, clusters)
        if outcome is Released.NOT_YET:
            if not release.probe:  # a probe is looked at again at the decision's requeue
                retry = COPY_RETRY
            continue
        if outcome is Released.DELETED:
            gone.add((release.namespace, release.name))
        if outcome is not Released.MISSING and release.delete_first:
            deleted.append((release.cluster, release.name))
    return retry, gone, deleted


async def _forget(run: BindingRun, done: list[MemberCopy]) -> None:
    """Drop the deleted copies from the binding's fenced copies, recording their cluster's return in the same write
    (a retry after a conflict then finds nothing to forget)."""
    forget = forget_fenced(run.binding, done)
    if forget:
        returned = returned_cluster_patch(run.binding, {copy.cluster for copy in done}, run.now)
        await run.writes.write(annotation_patch(forget, returned) or forget)


def _identity(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = b.metadata(obj)
    return str(meta.get("namespace")), str(meta.get("name"))


# The pipeline: one binding's reconcile, in order.
STEPS: tuple[Step, ...] = (
    application_failover,
    cluster_eviction,
    cluster_failover_state,
    graceful_eviction,
    handoff,
    restoration,
    stateless_restart,
    old_copy,
)


class BindingReconciler:
    """Runs `STEPS` on one binding of `kind`, then hands its phases to the storm metrics."""

    def __init__(self, kind: str, parts: LoopParts) -> None:
        self.kind, self.parts = kind, parts
        self.own = OwnWrites()
        self.old_copies = OldCopies(
            parts.client, parts.recorder, parts.metrics, parts.settings.probe_interval.total_seconds()
        )

    async def __call__(self, key: str) -> timedelta | None:
        parts = self.parts
        binding = self.own.latest(key, parts.cache.get(self.kind, key))
        if binding is None:
            parts.metrics.kept.set((self.kind, key), ())
            parts.metrics.braked.set((self.kind, key), ())
            parts.metrics.without_state.set((self.kind, key), ())
            parts.metrics.storm.observe((self.kind, key), None, (), parts.clock())
            return None
        ref = ObjectRef.from_key(self.kind, key)
        writes = BindingWrites(parts.client, ref, binding, key, self.own, parts.metrics.precondition_failures)
        run = BindingRun(parts, self.old_copies, key, parts.clock(), writes)
        requeue = earliest(*[await step(run) for step in STEPS])
        works = run.works()
        if works is not None:
            clusters = {cluster for work in works if (cluster := work_cluster(work))}
            restored = {task.from_cluster for task in run.ended if task.why == ENDED_HEALTHY}
            parts.metrics.storm.observe((self.kind, key), run.binding, clusters, run.now, restored)
        return requeue
