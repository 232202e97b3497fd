"""The control plane's storage fence, for the binding pipeline's old-copy step: read the member relays'
acknowledgements of the fence records a binding needs, write those records, and remove the records of copies gone for
good (the decisions: failover/fence/control_plane.py; the storage: controllers/access/fence_store.py).

A record is written only for a binding read again from the apiserver that still needs it (`write`, after
`BindingWrites.reread`): the informer's cache alone never suspends a job, so a stale cache after a control-plane
outage cannot. A storage that cannot be read or written only costs the fast path: the old Work is then fenced by
`fenceAfterSeconds` as without the storage fence.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

import structlog

from controllers.access.fence_metrics import StorageFenceMetrics
from controllers.access.fence_store import ClusterFences, FenceStorageError, FenceStore, on_storage
from controllers.access.outage import Outage
from failover.core.loop_settings import DecisionSettings
from failover.fence.control_plane import (
    DEFAULT_POLL,
    StorageFenceDecision,
    StoredFence,
    decide_storage_fence,
    records_done,
    wanted_records,
    watched_by_relay,
    without_relay,
)
from failover.fence.fence_files import FenceRecord

log = structlog.get_logger("failover_relay.storage_fence")
# How long the member relays' heartbeats, once read, answer `watched` (seconds).
HEARTBEAT_READ = 10.0


class StorageFence:
    def __init__(
        self,
        fences: FenceStore,
        settings: DecisionSettings,
        metrics: StorageFenceMetrics,
        poll: timedelta = DEFAULT_POLL,
    ) -> None:
        self.fences, self.settings, self.poll = fences, settings, poll
        self.metrics = metrics
        self._acked: set[tuple[str, str]] = set()  # counted and logged once per relay
        self._ack_seen: dict[tuple[str, str], datetime] = {}  # when this relay first read each acknowledgement
        # One listing per cluster and half a poll, shared by every binding waiting on it (a storm's hundred
        # bindings would otherwise list the same directory a hundred times a poll).
        self._read_at: dict[str, tuple[float, ClusterFences]] = {}
        self._outages: dict[str, Outage] = {}  # the storage as each cluster's directory is read, said once per outage
        self._unwatched: tuple[str, ...] | None = None  # the members last reported without a relay
        self._heartbeats: tuple[float, Mapping[str, Any]] | None = None  # when read (monotonic), and what

    async def check(
        self,
        binding: Mapping[str, Any],
        works: Iterable[Mapping[str, Any]],
        clusters: Mapping[str, Mapping[str, Any]],
        now: datetime,
    ) -> StorageFenceDecision:
        """What the storage holds for the records `binding` needs: the (cluster, Work name) pairs acknowledged, the
        records still to write (each only with `write`, on the apiserver's word), when to look again."""
        wanted = wanted_records(binding, works, clusters, self.settings, now)
        if not wanted:
            return StorageFenceDecision()
        stored: dict[tuple[str, str], StoredFence] = {}
        written_at: dict[tuple[str, str], datetime] = {}
        for cluster in sorted({record.cluster for record in wanted}):
            found = await self._read(cluster)
            if found is None:
                return StorageFenceDecision(requeue_after=self.poll)
            for fence_id in found.present | set(found.acks):
                stored[(cluster, fence_id)] = StoredFence(fence_id in found.present, found.acks.get(fence_id))
            written_at.update({(cluster, fence_id): r.written_at for fence_id, r in found.records.items()})
        for key, held in stored.items():
            if held.ack is not None:
                self._ack_seen.setdefault(key, now)
        decision = decide_storage_fence(wanted, stored, self.poll, seen=self._ack_seen, now=now)
        for ack in decision.acks:
            if (ack.cluster, ack.fence_id) not in self._acked:
                self._acked.add((ack.cluster, ack.fence_id))
                written = written_at.get((ack.cluster, ack.fence_id))
                log.info(
                    "fence_acknowledged",
                    member_cluster=ack.cluster,
                    fence_id=ack.fence_id,
                    copies=ack.copy_states(),
                    savepoint=ack.savepoint,
                )
                if written is not None:
                    self.metrics.acknowledged.labels(ack.cluster).observe(
                        (ack.acknowledged_at - written).total_seconds()
                    )
        return decision

    async def write(
        self,
        records: Iterable[FenceRecord],
        fresh: Mapping[str, Any],
        works: Iterable[Mapping[str, Any]],
        clusters: Mapping[str, Mapping[str, Any]],
        now: datetime,
    ) -> None:
        """Write each of `records` that the binding as the apiserver holds it (`fresh`) still needs."""
        confirmed = {(r.cluster, r.fence_id) for r in wanted_records(fresh, works, clusters, self.settings, now)}
        for record in records:
            if (record.cluster, record.fence_id) in confirmed:
                await self._write(record)

    def _outage(self, cluster: str) -> Outage:
        return self._outages.setdefault(cluster, Outage(log, "fence_storage_read_failed", "fence_storage_read_again"))

    async def _read(self, cluster: str) -> ClusterFences | None:
        now = time.monotonic()
        cached = self._read_at.get(cluster)
        if cached is not None and now - cached[0] < self.poll.total_seconds() / 2:
            return cached[1]
        try:
            found = await on_storage(self.fences.read, cluster)
        except FenceStorageError as failed:  # the timer still fences
            self.metrics.reads.labels(cluster, "error").inc()
            self._outage(cluster).failed(member_cluster=cluster, **failed.fields)
            return None
        self._outage(cluster).succeeded(member_cluster=cluster)
        self.metrics.reads.labels(cluster, "success").inc()
        self._read_at[cluster] = (now, found)
        return found

    async def _write(self, record: FenceRecord) -> None:
        try:
            written = await on_storage(self.fences.write_record, record)
        except FenceStorageError as failed:  # the timer still fences
            self.metrics.records.labels(record.cluster, "error").inc()
            log.warning(
                "fence_record_write_failed", member_cluster=record.cluster, fence_id=record.fence_id, **failed.fields
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

    async def stored(self, cluster: str) -> dict[str, StoredFence] | None:
        """What the storage holds for `cluster`, by fence id; None when it cannot be read now."""
        found = await self._read(cluster)
        if found is None:
            return None
        return {
            fence_id: StoredFence(fence_id in found.present, found.acks.get(fence_id))
            for fence_id in found.present | set(found.acks)
        }

    async def write_record(self, record: FenceRecord) -> None:
        """Write `record` unless it is stored (a handoff's, whose binding the apiserver annotated first)."""
        await self._write(record)

    async def watched(self, clusters: Iterable[str], now: datetime) -> frozenset[str] | None:
        """The clusters a member relay watches now (a fresh heartbeat); None when the storage cannot be read. The
        heartbeats are read at most every HEARTBEAT_READ seconds: every Cluster's pass asks, and a heartbeat is
        written only every 30 s and missed after 90."""
        at = time.monotonic()
        if self._heartbeats is None or at - self._heartbeats[0] >= HEARTBEAT_READ:
            try:
                self._heartbeats = (at, await on_storage(self.fences.read_heartbeats))
            except FenceStorageError:
                return None
        return watched_by_relay(clusters, self._heartbeats[1], now)

    async def report_relays(self, clusters: Iterable[str], now: datetime) -> None:
        """Say which members no member relay watches, once each time that set changes: their copies are fenced by
        time only, and a partitioned member's runs on beside the new one from the fence until the partition heals."""
        try:
            heartbeats = await on_storage(self.fences.read_heartbeats)
        except FenceStorageError:
            return  # said by the reads of the records, which fail alike
        missing = without_relay(clusters, heartbeats, now)
        if missing == self._unwatched:
            return
        self._unwatched = missing
        if missing:
            log.warning(
                "members_without_relay",
                member_clusters=list(missing),
                consequence="fenced by time only: a partitioned member's copy runs beside the new one until it heals",
            )
        else:
            log.info("members_all_watched")

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
                    await on_storage(self.fences.remove, cluster, fence_id)
                except FenceStorageError as failed:  # left behind; harmless (a copy never matches it again)
                    log.warning(
                        "fence_record_remove_failed",
                        member_cluster=cluster,
                        fence_id=fence_id,
                        error=failed.fields["error"],
                    )
                    continue
                self._acked.discard((cluster, fence_id))
                self._ack_seen.pop((cluster, fence_id), None)
                self._read_at.pop(cluster, None)
                log.info("fence_record_removed", member_cluster=cluster, fence_id=fence_id)
