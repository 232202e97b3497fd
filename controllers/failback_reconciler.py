"""Failback: one Cluster, and when it has recovered and settled, its workloads moved back (the decision:
failover/reconcile/failback.py)."""

from __future__ import annotations

from datetime import timedelta

from kubernetes.client.exceptions import ApiException

from controllers.binding_writes import conditional
from controllers.cache import with_identity
from controllers.kube import conflict
from controllers.loop_parts import LoopParts
from failover.core.api import CLUSTERS, WORKLOAD_REBALANCERS
from failover.core.names import ObjectRef
from failover.reconcile.failback import decide_failback


class FailbackReconciler:
    """One Cluster: when it has recovered and settled, move its workloads back (failover/reconcile/failback.py)."""

    def __init__(self, parts: LoopParts) -> None:
        self.client, self.cache, self.recorder = parts.client, parts.cache, parts.recorder
        self.settings, self.metrics, self.clock = parts.settings, parts.metrics, parts.clock

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
                await self.client.patch(
                    ObjectRef.from_key(CLUSTERS.kind, key), conditional(decision.cluster_patch, cluster)
                ),
                CLUSTERS,
            )
        await self.recorder.record(cluster, decision.events)
        return decision.requeue_after
