"""What each controller of the loop does with a key, built from `loop_parts` (`LoopParts`): `binding_reconciler` (one
binding's reconcile as a pipeline of `STEPS`), `cluster_reconciler` (one Cluster's passes: the brake reported, the
planned moves that start from it), `rebalancer_reconciler` (WorkloadRebalancer); and the adapters they share:
`old_copies` (a Work released or handed over, a member copy deleted), `storage_fence` (the control plane's storage
fence), `restore_watch` (a restoring copy's first checkpoint), `brake_report` (the brake said where operators look),
`moves_report` (a planned move's eviction said where operators look).
Imports `controllers.access` and `controllers.loop`."""
