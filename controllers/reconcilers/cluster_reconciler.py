"""One Cluster's change, as a named list of passes (`PASSES`), each a decision of failover/ and its writes:

1. `brake`: the brake over all Clusters reported where operators look (controllers/reconcilers/brake_report.py);
2. `drain`: while the cluster is drained, its stateful workloads moved off, a few at a time, each by a handoff begun
   (failover/moves/cluster_drain.py);
3. `failback`: once the cluster has recovered and settled, its workloads moved back (failover/moves/failback.py): a
   WorkloadRebalancer for a spread workload, else a handoff begun (or, without one, the eviction at once).

The Cluster controller only begins planned moves: a handoff, once begun, is kept on its binding and carried on by the
binding's own pipeline (the `handoff` step of controllers/reconcilers/binding_reconciler.py). Each binding is written
on its own, through the write service, on the resourceVersion its decision read: a conflict on one binding is
counted, logged and looked at again on the next pass, and never stops the others.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import structlog
from kubernetes.client.exceptions import ApiException

from controllers.access.binding_writes import conditional, write_binding
from controllers.access.kube import conflict, not_found, with_identity
from controllers.reconcilers.brake_report import BrakeReport
from controllers.reconcilers.loop_parts import LoopParts
from controllers.reconcilers.moves_report import report_move
from failover.core.api import CLUSTERS, WORKLOAD_REBALANCERS
from failover.core.decision import BindingPatch, Event, earliest
from failover.core.names import ObjectRef
from failover.moves.cluster_drain import decide_drain
from failover.moves.failback import decide_failback
from failover.moves.handoff import evicted_by

log = structlog.get_logger("failover_relay.planned_moves")

# A binding whose write lost to another writer is decided again on fresh data this soon (the cache has it by then).
CONFLICT_RETRY = timedelta(seconds=1)


@dataclass
class ClusterPass:
    """One reconcile of one Cluster: what its passes share. One snapshot of the bindings and Clusters for the pass:
    each write carries the resourceVersion it was decided on, so a snapshot gone stale costs a conflict, never a
    second move."""

    parts: LoopParts
    brake_report: BrakeReport
    key: str
    cluster: dict[str, Any]
    now: datetime
    bindings: list[dict[str, Any]]
    clusters: dict[str, dict[str, Any]]
    watched: frozenset[str] | None

    async def write(self, changes: Iterable[BindingPatch]) -> set[ObjectRef]:
        """Write each binding's change on its own, and report each planned move whose eviction was written (as the
        written binding's handoff says). A change that lost to another writer (409), or whose binding is gone (404),
        is left for the next pass, which decides on fresh data; any other failure is raised once every change was
        tried. The bindings whose change was not written."""
        lost: set[ObjectRef] = set()
        failed: ApiException | None = None
        for change in changes:
            try:
                written = await write_binding(self.parts.client, change)
            except ApiException as error:
                lost.add(change.binding)
                if conflict(error) or not_found(error):
                    self.parts.metrics.precondition_failures.inc()
                    log.info("planned_move_write_lost", binding=str(change.binding), status=error.status)
                elif failed is None:
                    failed = error
                continue
            move = evicted_by(change.patch, written)
            if move is not None:
                report_move(self.parts.metrics, move)
        if failed is not None:
            raise failed
        return lost

    async def record(self, events: Iterable[Event], lost: set[ObjectRef]) -> timedelta | None:
        """Record the Events of what was written (none about a binding whose change was not); when to look again
        for the bindings whose change was not."""
        await self.parts.recorder.record(self.cluster, [event for event in events if event.regarding not in lost])
        return CONFLICT_RETRY if lost else None


Pass = Callable[[ClusterPass], Awaitable[timedelta | None]]


async def brake(run: ClusterPass) -> timedelta | None:
    await run.brake_report(run.clusters)
    return None


async def failback(run: ClusterPass) -> timedelta | None:
    parts = run.parts
    decision = decide_failback(
        run.cluster,
        run.bindings,
        parts.cache.policies(),
        parts.settings,
        run.now,
        run.clusters,
        works_of=parts.cache.works_of,
        watched=run.watched,
    )
    if decision.rebalancer is not None:
        try:
            await parts.client.create(WORKLOAD_REBALANCERS.kind, decision.rebalancer)
            parts.metrics.failbacks.inc()
        except ApiException as error:
            if not conflict(error):  # AlreadyExists: created by an earlier attempt for this recovery
                raise
    lost = await run.write(decision.binding_patches)
    if decision.cluster_patch:
        ref = ObjectRef.from_key(CLUSTERS.kind, run.key)
        written = await parts.client.patch(ref, conditional(decision.cluster_patch, run.cluster))
        run.cluster = with_identity(written, CLUSTERS)
    return earliest(await run.record(decision.events, lost), decision.requeue_after)


async def drain(run: ClusterPass) -> timedelta | None:
    parts = run.parts
    decision = decide_drain(run.cluster, run.bindings, parts.cache.works_of, run.watched, parts.settings, run.now)
    lost = await run.write(decision.binding_patches)
    return earliest(await run.record(decision.events, lost), decision.requeue_after)


# One Cluster's reconcile, in order.
PASSES: tuple[Pass, ...] = (brake, drain, failback)


class ClusterReconciler:
    """Runs `PASSES` on one Cluster."""

    def __init__(self, parts: LoopParts) -> None:
        self.parts = parts
        # Kept across passes: the brake is said when it changes.
        self.brake_report = BrakeReport(parts.recorder, parts.metrics, parts.settings.unhealthy_cluster_threshold)

    async def __call__(self, key: str) -> timedelta | None:
        parts = self.parts
        cluster = parts.cache.get(CLUSTERS.kind, key)
        if cluster is None:
            return None
        now, clusters = parts.clock(), parts.cache.clusters()
        fence = parts.storage_fence
        watched = await fence.watched(clusters, now) if fence is not None else None
        run = ClusterPass(parts, self.brake_report, key, cluster, now, parts.cache.bindings(), clusters, watched)
        return earliest(*[await step(run) for step in PASSES])
