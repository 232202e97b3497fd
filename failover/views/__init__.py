"""What the read-only commands show, computed from what the cluster and the storage hold: `status_view` (one
workload, for `failover-relay status`), `storm` (where each workload of a member cluster stands in its move away
from it: the phases a storm is watched by, in `status --cluster` and the loop's metrics).

Imports `failover.core`, `failover.state`, `failover.fence`, `failover.reconcile` and `failover.moves`."""
