"""The storm metrics: how many workloads wait in which phase per member cluster, and how long each phase took.

After every reconcile of a binding the loop hands its phases (`failover.reconcile.storm.phases`) here. Karmada's
metric conventions: the cluster is the `member_cluster` label, durations are `_seconds` histograms. A phase's
duration is measured by the loop as it sees the binding change (its own clock: it starts when a reconcile first sees
the phase), and `total` from the eviction task's creationTimestamp to the first reconcile that sees every new
target Healthy: the time to restore one workload after its eviction (docs/operations.md, "A storm: a cluster's
workloads at once").
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from datetime import datetime
from typing import Any

from prometheus_client import CollectorRegistry, Gauge, Histogram

from failover.reconcile.storm import RESTORED, WAITING, ClusterPhase, phases

TOTAL = "total"
# From seconds (a healthy control plane) to an hour (Karmada's taint manager at its default eviction rate needs about
# 55 minutes for 5,000 bindings).
BUCKETS = (1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600)

BindingKey = tuple[str, str]


class StormMetrics:
    def __init__(self, registry: CollectorRegistry, clock: Callable[[], float] = time.monotonic) -> None:
        self.waiting = Gauge(
            "failover_relay_workloads_waiting",
            "Workloads evicted from a member cluster that wait in a phase of their move (releasing: the old Work, "
            "scheduling: a new cluster, restoring: a Healthy new copy).",
            ("member_cluster", "phase"),
            registry=registry,
        )
        self.duration = Histogram(
            "failover_relay_failover_phase_duration_seconds",
            "How long a workload evicted from a member cluster spent in each phase of its move; `total`: from the "
            "eviction task's creation until every new copy was Healthy.",
            ("member_cluster", "phase"),
            registry=registry,
            buckets=BUCKETS,
        )
        self.clock = clock
        # binding -> cluster -> (phase, when the loop first saw it, the task's creation); only waiting/restored ones.
        self._seen: dict[BindingKey, dict[str, tuple[str, float, datetime | None]]] = {}
        self._counts: dict[tuple[str, str], int] = {}

    def observe(
        self,
        binding_key: BindingKey,
        binding: Mapping[str, Any] | None,
        work_clusters: Collection[str],
        now: datetime,
        restored: Collection[str] = (),
    ) -> None:
        """Record the binding's phases after a reconcile (None: the binding is gone). `restored`: the clusters whose
        eviction task this reconcile ended because every new copy was Healthy (the task is gone, and the binding it
        left has a new generation the scheduler has not seen yet)."""
        current = {found.cluster: found for found in (phases(binding, work_clusters) if binding is not None else [])}
        before = self._seen.pop(binding_key, {})
        after: dict[str, tuple[str, float, datetime | None]] = {}
        at = self.clock()
        for cluster, (phase, started, created) in before.items():
            found = current.get(cluster)
            if found is not None and found.phase == phase:
                after[cluster] = (phase, started, created)
                continue
            self._count(cluster, phase, -1)
            if phase in WAITING:
                self.duration.labels(cluster, phase).observe(at - started)
            # Restored: seen so, or the task ended in this reconcile with every new copy Healthy.
            done = (found is not None and found.phase == RESTORED) or (found is None and cluster in restored)
            if phase != RESTORED and done and created is not None:
                self.duration.labels(cluster, TOTAL).observe(max(0.0, (now - created).total_seconds()))
        for cluster, found in current.items():
            if cluster in after or not _tracked(found):
                continue
            after[cluster] = (found.phase, at, found.since)
            self._count(cluster, found.phase, +1)
        if after:
            self._seen[binding_key] = after

    def _count(self, cluster: str, phase: str, delta: int) -> None:
        if phase not in WAITING:
            return
        key = (cluster, phase)
        self._counts[key] = self._counts.get(key, 0) + delta
        self.waiting.labels(cluster, phase).set(self._counts[key])


def _tracked(found: ClusterPhase) -> bool:
    return found.phase in (*WAITING, RESTORED)
