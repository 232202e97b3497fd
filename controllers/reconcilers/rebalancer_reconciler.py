"""WorkloadRebalancer: stamp the bindings it names, write its status, delete it after its TTL (the decisions:
failover/moves/rebalancer.py). A stamp is written through the write service on the binding's version it was decided
on; a binding gone or written since is read again and decided again, in the same reconcile."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from functools import partial
from typing import Any, Literal

import structlog
from kubernetes.client.exceptions import ApiException

from controllers.access.binding_writes import conditional, write_binding
from controllers.access.kube import conflict, not_found, with_identity
from controllers.reconcilers.loop_parts import LoopParts
from failover.core.api import WORKLOAD_REBALANCERS
from failover.core.names import ObjectRef
from failover.moves.rebalancer import RebalanceDecision, decide_rebalance, referenced_bindings

log = structlog.get_logger("failover_relay.reconcile")


class RebalancerReconciler:
    """WorkloadRebalancer: stamp bindings, write status, expire after the TTL."""

    def __init__(self, parts: LoopParts) -> None:
        self.client, self.cache, self.recorder = parts.client, parts.cache, parts.recorder
        self.settings, self.metrics, self.clock = parts.settings, parts.metrics, parts.clock
        self.fence = parts.storage_fence  # which members a member relay watches: a move by savepoint handoff

    async def __call__(self, key: str) -> timedelta | None:
        if self.cache.get(WORKLOAD_REBALANCERS.kind, key) is None:
            return None
        ref = ObjectRef.from_key(WORKLOAD_REBALANCERS.kind, key)
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
        clusters = self.cache.clusters()
        watched = await self.fence.watched(clusters, now) if self.fence is not None else None
        decide = partial(
            decide_rebalance,
            rebalancer,
            settings=self.settings,
            now=now,
            clusters=clusters,
            works_of=self.cache.works_of,
            watched=watched,
        )
        decision = decide(bindings)
        for _ in range(len(decision.stamps) + 1):
            stale = await self._stamp_all(decision)
            if stale is None:
                return self.settings.rebalancer_retry
            if not stale:
                break
            # Gone, or written by someone else since it was read: decided again on what the apiserver holds now.
            bindings.update({ref: binding for ref in stale if (binding := await self._read(ref)) is not False})
            decision = decide(bindings)
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

    async def _stamp_all(self, decision: RebalanceDecision) -> list[ObjectRef] | None:
        """Write the stamps, each on the version of its binding it was decided on
        (controllers/access/binding_writes.py): the refs whose binding turned out not to exist or to have moved on, or
        None when a stamp failed otherwise."""
        stale = []
        for stamp in decision.stamps:
            try:
                await write_binding(self.client, stamp)
            except ApiException as error:
                if not_found(error) or conflict(error):
                    stale.append(stamp.binding)
                    continue
                log.warning("binding_stamp_failed", binding=str(stamp.binding), status=error.status)
                return None
            self.metrics.rebalances.inc()
        return stale
