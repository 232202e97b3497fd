"""The storage fence's metrics, where every room that runs a side of the fence can import them: the member relay's
room (`controllers/member`) may import `controllers/access`, never `controllers/loop`. Declared as the loop declares
its own (controllers/loop/loop_metrics.py): one class of families, registered once by the wiring and handed to the
part that counts, by Karmada's conventions (the cluster is the `member_cluster` label, results the `result` label).

`StorageFenceMetrics`: the control plane's side (controllers/reconcilers/storage_fence.py), registered only where the
storage fence is on. `MemberFenceMetrics`: the member relay's fence watcher (controllers/member/member_fence.py),
registered only where it runs (`serve --member --fence-cluster`).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

# A fence record's acknowledgement: within two member polls (2 s each by default) when all is well, up to the timer
# fence (60 s by default) and the five minutes of a slow operator.
ACKNOWLEDGEMENT_BUCKETS = (1, 2, 5, 10, 20, 30, 60, 120, 300)


class StorageFenceMetrics:
    """The storage fence's metrics (controllers/reconcilers/storage_fence.py), registered only where it is on."""

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
            buckets=ACKNOWLEDGEMENT_BUCKETS,
            registry=registry,
        )
        self.reads = Counter(
            "failover_relay_fence_storage_reads_total",
            "Reads of a cluster's fence records by the control plane.",
            ("member_cluster", "result"),
            registry=registry,
        )


class MemberFenceMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.polls = Counter(
            "failover_relay_member_fence_polls_total",
            "Reads of this member cluster's fence records from the checkpoint storage.",
            ("member_cluster", "result"),
            registry=registry,
        )
        self.suspensions = Counter(
            "failover_relay_member_fence_suspensions_total",
            "Copies a fence record names set to spec.job.state suspended by the member relay.",
            ("member_cluster", "result"),
            registry=registry,
        )
        self.acknowledgements = Counter(
            "failover_relay_member_fence_acknowledgements_total",
            "Fence records acknowledged by the member relay (their copies stopped or absent).",
            ("member_cluster", "result"),
            registry=registry,
        )
        self.jobmanagers_stopped = Counter(
            "failover_relay_member_fence_jobmanagers_stopped_total",
            "JobManager Deployments of suspended copies the operator left running (FLINK-41262), deleted by the member"
            " relay.",
            ("member_cluster", "result"),
            registry=registry,
        )
        self.records = Gauge(
            "failover_relay_member_fence_records",
            "Fence records of this member cluster in the checkpoint storage, as last read.",
            ("member_cluster",),
            registry=registry,
        )
