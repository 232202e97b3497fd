"""The reconcile loop's decisions, each a function of (objects, `DecisionSettings`, now) returning a patch, events
and when to look again (`failover.core.decision`): application failover (`application_failover`), never evicting
into no cluster (`last_cluster`), the failover budget (`failover_budget`), graceful eviction (`graceful_eviction`),
cluster failover's state (`cluster_failover`), failback (`failback`), WorkloadRebalancer (`rebalancer`), the
stateless-restart warning (`stateless_restart`), the purge-mode spelling to write (`purge_spelling`), the binding's
own records in the write of the change they record (`record_keeping`), the fields each decision read, tested by its
write (`preconditions`), where a storm's workloads stand (`storm`), and what `failover-relay status` shows
(`status_view`). The old copy's fence is a room of its own (`failover.fence`).

Imports `failover.core`, `failover.state` and `failover.fence`; never `failover.admission`.
"""
