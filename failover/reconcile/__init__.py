"""The failover family of the loop's decisions, each a function of (objects, `DecisionSettings`, now) returning a
patch, events and when to look again (`failover.core.decision`): application failover (`application_failover`),
never evicting into no cluster (`last_cluster`), the failover budget (`failover_budget`), cluster failover's eviction
tasks (`cluster_eviction`) under the brake (`brake`) and their state (`cluster_failover`), graceful eviction
(`graceful_eviction`), the stateless-restart warning (`stateless_restart`), the purge-mode spelling to write
(`purge_spelling`), the binding's own records in the write of the change they record (`record_keeping`), and the
fields each decision read, tested by its write (`preconditions`). Planned moves are a room of their own
(`failover.moves`), and so are the views of the read-only commands (`failover.views`) and the old copy's fence
(`failover.fence`).

Imports `failover.core`, `failover.state` and `failover.fence`; never `failover.admission`.
"""
