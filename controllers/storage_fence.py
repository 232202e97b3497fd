"""The control plane's storage fence, for `BindingReconciler`: write the fence records a binding needs, read back the
member relays' acknowledgements, and remove the records of copies gone for good (the decisions:
failover/reconcile/storage_fence.py; the storage: controllers/fence_store.py).

A record is written only after the binding was read again from the apiserver and still needs it: the informer's cache
alone never suspends a job (issue 25 item 3). A storage that cannot be read or written only costs the fast path: the
old Work is then fenced by `fenceAfterSeconds` as without the storage fence.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

import structlog
from prometheus_client import CollectorRegistry, Counter, Histogram

from controllers.fence_store import ClusterFences, FenceStore
from failover.core.loop_settings import DecisionSettings
from failover.fence.control_plane import DEFAULT_POLL, StoredFence, decide_storage_fence, records_done, wanted_records

log = structlog.get_logger("failover_relay.storage_fence")


class StorageFenceMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.records = Counter(
            "failover_relay_fence_records_written_total",
            "Fence records written to the checkpoint storage for an old copy on an unreachable cluster.",
            ("member_cluster", "result"),
            registry=registry,
        )
        self.acknowledged = Histogram(
            "failover_relay_fence_acknowledgement_seconds",
            "From a fence record's writing to the member relay's acknowledgement, as the control plane saw it.",
            ("member_cluster",),
            buckets=(1, 2, 5, 10, 20, 30, 60, 120, 300),
            registry=registry,
        )
        self.reads = Counter(
            "failover_relay_fence_storage_reads_total",
            "Reads of a cluster's fence records by the control plane.",
            ("member_cluster", "result"),
            registry=registry,
        )


class StorageFence:
    def __init__(
        self,
        fences: FenceStore,
        settings: DecisionSettings,
        registry: CollectorRegistry,
        poll: timedelta = DEFAULT_POLL,
    ) -> None:
        self.fences, self.settings, self.poll = fences, settings, poll
        self.metrics = StorageFenceMetrics(registry)
        self._acked: set[tuple[str, str]] = set()  # counted and logged once per relay
        self._ack_seen: dict[tuple[str, str], datetime] = {}  # when this relay first read each acknowledgement
        # One listing per cluster and half a poll, shared by every binding waiting on it (a storm's hundred
        # bindings would otherwise list the same directory a hundred times a poll).
        self._read_at: dict[str, tuple[float, ClusterFences]] = {}

    async def check(
        self,
        binding: Mapping[str, Any],
        works: Iterable[Mapping[str, Any]],
        clusters: Mapping[str, Mapping[str, Any]],
        now: datetime,
        fresh: Callable[[], Awaitable[Mapping[str, Any]]],
    ) -> tuple[frozenset[tuple[str, str]], timedelta | None]:
        """(the (cluster, Work name) pairs acknowledged, when to look again) for one binding."""
        works = list(works)
        wanted = wanted_records(binding, works, clusters, self.settings, now)
        if not wanted:
            return frozenset(), None
        stored: dict[tuple[str, str], StoredFence] = {}
        written_at: dict[tuple[str, str], datetime] = {}
        for cluster in sorted({record.cluster for record in wanted}):
            found = await self._read(cluster)
            if found is None:
                return frozenset(), self.poll
            for fence_id in found.present | set(found.acks):
                stored[(cluster, fence_id)] = StoredFence(fence_id in found.present, found.acks.get(fence_id))
            written_at.update({(cluster, fence_id): r.written_at for fence_id, r in found.records.items()})
        for key, held in stored.items():
            if held.ack is not None:
                self._ack_seen.setdefault(key, now)
        decision = decide_storage_fence(wanted, stored, self.poll, seen=self._ack_seen, now=now)
        if decision.write:
            # Only on the apiserver's word: the binding read again must still want each record.
            confirmed = {
                (r.cluster, r.fence_id)
                for r in wanted_records(dict(await fresh()), works, clusters, self.settings, now)
            }
            for record in decision.write:
                if (record.cluster, record.fence_id) in confirmed:
                    await self._write(record)
        for ack in decision.acks:
            if (ack.cluster, ack.fence_id) not in self._acked:
                self._acked.add((ack.cluster, ack.fence_id))
                written = written_at.get((ack.cluster, ack.fence_id))
                log.info(
                    "fence_acknowledged",
                    member_cluster=ack.cluster,
                    fence_id=ack.fence_id,
                    copies=[f"{c.copy.namespace}/{c.copy.name}:{c.state}" for c in ack.copies],
                    savepoint=ack.savepoint,
                )
                if written is not None:
                    self.metrics.acknowledged.labels(ack.cluster).observe(
                        (ack.acknowledged_at - written).total_seconds()
                    )
        return decision.acknowledged, decision.requeue_after

    async def _read(self, cluster: str) -> ClusterFences | None:
        now = time.monotonic()
        cached = self._read_at.get(cluster)
        if cached is not None and now - cached[0] < self.poll.total_seconds() / 2:
            return cached[1]
        try:
            found = await asyncio.to_thread(self.fences.read, cluster)
        except Exception as error:  # noqa: BLE001  any fsspec backend error: the timer still fences
            self.metrics.reads.labels(cluster, "error").inc()
            log.warning(
                "fence_storage_read_failed", member_cluster=cluster, error=type(error).__name__, detail=str(error)[:200]
            )
            return None
        self.metrics.reads.labels(cluster, "success").inc()
        self._read_at[cluster] = (now, found)
        return found

    async def _write(self, record: Any) -> None:
        try:
            written = await asyncio.to_thread(self.fences.write_record, record)
        except Exception as error:  # noqa: BLE001  any fsspec backend error: the timer still fences
            self.metrics.records.labels(record.cluster, "error").inc()
            log.warning(
                "fence_record_write_failed",
                member_cluster=record.cluster,
                fence_id=record.fence_id,
                error=type(error).__name__,
                detail=str(error)[:200],
            )
            return
        self._read_at.pop(record.cluster, None)
        if written:
            self.metrics.records.labels(record.cluster, "success").inc()
            log.info(
                "fence_record_written",
                member_cluster=record.cluster,
                fence_id=record.fence_id,
                work=record.work,
                binding=record.binding,
                copies=[f"{c.namespace}/{c.name}" for c in record.copies],
            )

    async def forget(self, gone: Iterable[tuple[str, str]]) -> None:
        """Remove the records of (cluster, Work name) pairs whose copies are gone for good."""
        by_cluster: dict[str, list[tuple[str, str]]] = {}
        for cluster, work in gone:
            by_cluster.setdefault(cluster, []).append((cluster, work))
        for cluster, keys in by_cluster.items():
            found = await self._read(cluster)
            if found is None:
                continue
            stored = {fence_id: (cluster, record.work) for fence_id, record in found.records.items()}
            for fence_id in records_done(stored, keys):
                try:
                    await asyncio.to_thread(self.fences.remove, cluster, fence_id)
                except Exception as error:  # noqa: BLE001  left behind; harmless (a copy never matches it again)
                    log.warning(
                        "fence_record_remove_failed",
                        member_cluster=cluster,
                        fence_id=fence_id,
                        error=type(error).__name__,
                    )
                    continue
                self._acked.discard((cluster, fence_id))
                self._ack_seen.pop((cluster, fence_id), None)
                self._read_at.pop(cluster, None)
                log.info("fence_record_removed", member_cluster=cluster, fence_id=fence_id)
