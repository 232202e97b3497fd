"""One Cluster's change: the brake over all Clusters reported (controllers/reconcilers/brake_report.py), and the
Cluster's planned moves: when it has recovered and settled, its workloads moved back (failback,
failover/moves/failback.py); while it is drained, its stateful workloads moved off (failover/moves/cluster_drain.py);
and each single-cluster move handed over by savepoint where a member relay watches the cluster it leaves
(failover/moves/handoff.py; the records through controllers/reconcilers/storage_fence.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

import structlog
from kubernetes.client.exceptions import ApiException

from controllers.access.binding_writes import conditional
from controllers.access.kube import conflict, with_identity
from controllers.reconcilers.brake_report import BrakeReport
from controllers.reconcilers.loop_parts import LoopParts
from failover.core.api import CLUSTERS, WORKLOAD_REBALANCERS
from failover.core.decision import earliest
from failover.core.names import ObjectRef
from failover.fence.control_plane import StoredFence
from failover.moves.cluster_drain import decide_drain
from failover.moves.failback import FailbackDecision, decide_failback
from failover.moves.handoff import STOPPING, Handoff, HandoffsDecision, decide_handoffs, handoffs_of

log = structlog.get_logger("failover_relay.planned_moves")


class ClusterReconciler:
    """One Cluster: carry its handoffs on, then fail back to it once it has recovered, or drain it while it is
    drained."""

    def __init__(self, parts: LoopParts) -> None:
        self.client, self.cache, self.recorder = parts.client, parts.cache, parts.recorder
        self.settings, self.metrics, self.clock = parts.settings, parts.metrics, parts.clock
        self.fence = parts.storage_fence
        self.brake = BrakeReport(parts.recorder, parts.metrics, parts.settings.unhealthy_cluster_threshold)

    async def __call__(self, key: str) -> timedelta | None:
        cluster = self.cache.get(CLUSTERS.kind, key)
        if cluster is None:
            return None
        now = self.clock()
        # One snapshot for the pass: each decision below writes with the resourceVersion it was decided on, and one
        # move at a time per binding keeps a later decision from acting on a binding an earlier one just moved.
        bindings, clusters = self.cache.bindings(), self.cache.clusters()
        await self.brake(clusters)
        watched = await self.fence.watched(clusters, now) if self.fence is not None else None
        handoffs = decide_handoffs(
            key, bindings, self.cache.works_of, await self._stored(key, bindings), self.settings, now, watched
        )
        await self._write(handoffs)
        drain = decide_drain(cluster, bindings, self.cache.works_of, watched, self.settings, now)
        await self._write(drain)
        decision = decide_failback(
            cluster,
            bindings,
            self.cache.policies(),
            self.settings,
            now,
            clusters,
            works_of=self.cache.works_of,
            watched=watched,
        )
        if decision.rebalancer is not None:
            try:
                await self.client.create(WORKLOAD_REBALANCERS.kind, decision.rebalancer)
                self.metrics.failbacks.inc()
            except ApiException as error:
                if not conflict(error):  # AlreadyExists: created by an earlier attempt for this recovery
                    raise
        await self._write(decision)
        if decision.cluster_patch:
            cluster = with_identity(
                await self.client.patch(
                    ObjectRef.from_key(CLUSTERS.kind, key), conditional(decision.cluster_patch, cluster)
                ),
                CLUSTERS,
            )
        await self.recorder.record(cluster, (*handoffs.events, *drain.events, *decision.events))
        return earliest(handoffs.requeue_after, drain.requeue_after, decision.requeue_after)

    async def _stored(
        self, key: str, bindings: Iterable[Mapping[str, Any]]
    ) -> dict[tuple[str, str], StoredFence | None]:
        """What the storage holds for the record of every handoff of `key` that is stopping its old copy."""
        stopping = [h for _, h in handoffs_of(key, bindings) if h.phase == STOPPING]
        if self.fence is None:
            return {}
        found: dict[tuple[str, str], StoredFence | None] = {}
        for source in sorted({handoff.source for handoff in stopping}):
            stored = await self.fence.stored(source)
            for handoff in stopping:
                if handoff.source == source:
                    held = None if stored is None else stored.get(handoff.fence_id, StoredFence(False))
                    found[(source, handoff.fence_id)] = held
        return found

    async def _write(self, decision: HandoffsDecision | FailbackDecision) -> None:
        """Write `decision`'s fence records and binding patches, count its moves, forget the records of copies
        gone."""
        if isinstance(decision, HandoffsDecision) and self.fence is not None:
            for record in decision.records:
                await self.fence.write_record(record)
        for binding_patch in decision.binding_patches:
            await self.client.patch(binding_patch.binding, binding_patch.patch)
        for move in decision.moves:
            self._count(move)
        if isinstance(decision, HandoffsDecision) and self.fence is not None and decision.forget:
            await self.fence.forget(decision.forget)

    def _count(self, move: Handoff) -> None:
        self.metrics.planned_moves.labels(move.source, move.reason, move.way).inc()
        fields: dict[str, Any] = {"target_cluster": move.target} if move.target else {}
        log.info(
            "planned_move_evicted",
            member_cluster=move.source,
            reason=move.reason,
            handoff=move.way,
            why=move.why,
            savepoint=move.savepoint,
            stopping_seconds=_seconds(move.started_at, move.stopped_at),
            **fields,
        )


def _seconds(start: datetime, end: datetime | None) -> float | None:
    return None if end is None else round((end - start).total_seconds(), 3)
