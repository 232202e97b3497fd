"""The reconcile loop's metrics, all of them: the controllers' reconciles and queues, the API calls, what the binding
pipeline changed, a storm's phases, and (where it is on) the storage fence's records. Karmada's conventions: the cluster
is the `member_cluster` label, results the `result` label, durations `_seconds` histograms.

The storm metrics: after every reconcile of a binding the loop hands its phases (`failover.views.storm.phases`)
to `StormMetrics`, which counts how many workloads wait in which phase per member cluster and how long each phase
took. A phase's duration is measured by the loop as it sees the binding change (its own clock: it starts when a
reconcile first sees the phase), and `total` from the eviction task's creationTimestamp to the first reconcile that
sees every new target Healthy: the time to restore one workload after its eviction (docs/operations.md, "A storm: a
cluster's workloads at once").
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Collection, Mapping
from datetime import datetime
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from failover.state.empty_start import Outcome
from failover.views.storm import RESTORED, WAITING, ClusterPhase, phases

# Reconciles and API calls: from a few milliseconds (a cache hit) to the request deadline.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)

TOTAL = "total"
# From seconds (a healthy control plane) to an hour (Karmada's taint manager at its default eviction rate needs about
# 55 minutes for 5,000 bindings).
PHASE_BUCKETS = (1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600)

BindingKey = tuple[str, str]


class ControllerMetrics:
    """The controllers' work (controllers/loop/controller.py): their reconciles, how long each took, the keys waiting
    in their queues, and the API calls a reconcile's time goes to (controllers/access/client.py `Calls`)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.reconciles = Counter(
            "failover_relay_reconcile_total",
            "Reconciles, by controller and result.",
            ("controller", "result"),
            registry=registry,
        )
        self.latency = Histogram(
            "failover_relay_reconcile_duration_seconds",
            "Time spent in one reconcile.",
            ("controller",),
            registry=registry,
            buckets=LATENCY_BUCKETS,
        )
        self.depth = Gauge(
            "failover_relay_queue_depth",
            "Keys waiting in the work queue (ready and delayed).",
            ("controller",),
            registry=registry,
        )
        self.api_calls = Histogram(
            "failover_relay_api_call_duration_seconds",
            "The loop's API calls, by call, from asking for a thread to the answer: where a reconcile's time goes.",
            ("call",),
            registry=registry,
            buckets=LATENCY_BUCKETS,
        )


class ChangeMetrics:
    """What the reconcilers changed, one counter a kind of change: clusters evicted (application and cluster failover),
    eviction tasks ended, bindings stamped and moves planned, state filled in, old Works and copies released, and the
    binding controller woken."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.evictions = Counter(
            "failover_relay_evictions_total",
            "Clusters removed from a binding by application failover.",
            registry=registry,
        )
        self.cluster_evictions = Counter(
            "failover_relay_cluster_evictions_total",
            "Clusters removed from a binding by cluster failover (a NoExecute taint its placement no longer tolerates),"
            " the eviction task written by the relay.",
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
        self.planned_moves = Counter(
            "failover_relay_planned_moves_total",
            "Planned moves (failback, drain, rebalance) whose eviction was written, by the cluster left and how the"
            " new copy restores:"
            " handoff=savepoint (the old copy stopped with a savepoint) or checkpoint-fallback.",
            ["member_cluster", "reason", "handoff"],
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


class HoldMetrics:
    """The workloads the loop holds where they are, and why: a new copy waiting for the old one on a cluster that is
    not Ready, the brake on every new cluster failover (failover/reconcile/brake.py) and the evictions it holds, and
    the workloads kept on the last cluster that can run them (failover/reconcile/last_cluster.py)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.waiting = KeySet(
            Gauge(
                "failover_relay_bindings_waiting_for_cluster",
                "Bindings whose new copy waits for the old one on a cluster that is not Ready.",
                registry=registry,
            )
        )
        self.brake = Gauge(
            "failover_relay_cluster_failover_braked",
            "1 while the brake holds every new cluster failover: at least controllers.unhealthyClusterThreshold of the"
            " clusters (and at least two) are not Ready (failover/reconcile/brake.py).",
            registry=registry,
        )
        self.braked = BindingsByCluster(
            Gauge(
                "failover_relay_evictions_braked",
                "Workloads whose cluster failover eviction is due but held by the brake, by the cluster they stay on.",
                ("member_cluster",),
                registry=registry,
            )
        )
        self.kept = BindingsByCluster(
            Gauge(
                "failover_relay_workloads_kept_on_last_cluster",
                "Workloads due for failover but kept on the last cluster that can run them: no other cluster can take"
                " them (failover/reconcile/last_cluster.py).",
                ("member_cluster",),
                registry=registry,
            )
        )


class RestoreMetrics:
    """How moved copies restore their state: the time from a move to the restore, and the copies that started without
    the state their move carried or are parked for the lack of it (failover/state/empty_start.py)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.restores = Histogram(
            "failover_relay_restore_seconds",
            "From a move to the moved copy's restore: its job's first completed checkpoint of its own (its first"
            " Healthy report where the loop cannot read the checkpoint storage).",
            ("member_cluster",),
            registry=registry,
            buckets=PHASE_BUCKETS,
        )
        self.state_losses = Counter(
            "failover_relay_copies_started_without_state_total",
            "Moved copies found running without the state their move carried (outcome empty), or parked for the lack"
            " of it (outcome parked: failureMode closed).",
            ("outcome",),
            registry=registry,
        )
        for outcome in Outcome:  # exported from 0, so that the first loss is an increase
            self.state_losses.labels(outcome.value)
        self.without_state = ByOutcome(
            Gauge(
                "failover_relay_copies_without_state",
                "Moved copies that run without the state their move carried, or are parked for the lack of it, until"
                " restored by hand or accepted (failover/state/empty_start.py).",
                ("outcome",),
                registry=registry,
            ),
            tuple(Outcome),
        )


class LoopMetrics(ControllerMetrics, ChangeMetrics, HoldMetrics, RestoreMetrics):
    """Every metric of the reconcile loop, registered once per loop: each group's attributes are the loop's own
    (`metrics.reconciles`, `metrics.kept`, ...), registered in this order."""

    def __init__(self, registry: CollectorRegistry) -> None:
        ControllerMetrics.__init__(self, registry)
        ChangeMetrics.__init__(self, registry)
        HoldMetrics.__init__(self, registry)
        RestoreMetrics.__init__(self, registry)
        # The one way to write a binding (controllers/access/binding_writes.py).
        self.precondition_failures = Counter(
            "failover_relay_binding_precondition_failures_total",
            "Binding writes decided on the cache that found the binding changed (a failed test of a field the decision"
            " read, or a 409 on the cached resourceVersion): decided again on a fresh read.",
            registry=registry,
        )
        self.storm = StormMetrics(registry)


class KeySet:
    """A set of keys whose size is a gauge."""

    def __init__(self, gauge: Gauge) -> None:
        self.gauge, self.keys = gauge, set[Any]()

    def add(self, key: Any) -> None:
        self.keys.add(key)
        self.gauge.set(len(self.keys))

    def discard(self, key: Any) -> None:
        self.keys.discard(key)
        self.gauge.set(len(self.keys))


class BindingsByCluster:
    """Which bindings are in some state on which of their clusters (kept there, braked), counted per cluster (Karmada's
    `member_cluster` label). The counts are kept as the sets change: a storm sets thousands of keys."""

    def __init__(self, gauge: Gauge) -> None:
        self.gauge, self.clusters = gauge, dict[Any, tuple[str, ...]]()
        self.counts: collections.Counter[str] = collections.Counter()

    def set(self, key: Any, clusters: tuple[str, ...]) -> None:
        old = self.clusters.get(key, ())
        if set(old) == set(clusters):
            return
        if clusters:
            self.clusters[key] = clusters
        else:
            self.clusters.pop(key, None)
        self.counts.subtract(set(old))
        self.counts.update(set(clusters))
        for cluster in {*old, *clusters}:
            self.gauge.labels(cluster).set(self.counts[cluster])


class ByOutcome:
    """Which bindings hold copies of which outcome, counted per outcome; every outcome is exported, 0 included."""

    def __init__(self, gauge: Gauge, outcomes: tuple[str, ...]) -> None:
        self.gauge, self.outcomes, self.by_key = gauge, outcomes, dict[Any, tuple[str, ...]]()
        for outcome in outcomes:
            gauge.labels(outcome).set(0)

    def set(self, key: Any, outcomes: tuple[str, ...]) -> None:
        if tuple(outcomes) == self.by_key.get(key, ()):
            return
        if outcomes:
            self.by_key[key] = tuple(outcomes)
        else:
            self.by_key.pop(key, None)
        for outcome in self.outcomes:
            self.gauge.labels(outcome).set(sum(held.count(outcome) for held in self.by_key.values()))


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
            buckets=PHASE_BUCKETS,
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
