"""The reconcile loop's decisions, each a function of (objects, `DecisionSettings`, now) returning a patch, events
and when to look again (`decision`): application failover (`application_failover`), the failover budget
(`failover_budget`), graceful eviction (`graceful_eviction`), cluster failover's state (`cluster_failover`), the old
copy's fence (`fencing`), failback (`failback`), WorkloadRebalancer (`rebalancer`), the stateless-restart warning
(`stateless_restart`), the purge-mode spelling to write (`migration`), the binding's own records in the write of
the change they record (`records`), and what `failover-relay status` shows (`status_view`).

Imports `failover.core` and `failover.state`; never `failover.admission`.
"""
