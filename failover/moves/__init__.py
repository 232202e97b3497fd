"""Planned moves: a workload moved on purpose off a cluster that is reachable, handed over by savepoint
(docs/design.md, "Planned moves"). `handoff` (the handoff a binding carries in its annotation, advanced by the
binding's own pipeline, and the eviction of every planned move), `cluster_drain` (a drained cluster's workloads moved
off a few at a time), `failback` (back to a recovered cluster: an eviction, or a WorkloadRebalancer for a spread
workload), `rebalancer` (WorkloadRebalancer, rule for rule as Karmada), `drill` (`failover-relay drill`'s legs).

Imports `failover.core`, `failover.state`, `failover.fence` and `failover.reconcile`."""
