"""The reconcile loop and the member relay's watcher: watches through the `kubernetes` client, and adapters that read
objects, call the decisions of `failover/` and write the result back with a precondition. Nothing here decides.

Four rooms and the wiring (tests/test_layers.py holds the imports to them):

- `access/`: how the loop reaches the outside: cluster access and the Karmada resources (`kube`), the reconcilers'
  one client (`client`), member objects through Karmada's cluster proxy (`members`), Events (`events`), the one way
  to write a binding (`binding_writes`), the storage fence's records in the checkpoint storage (`fence_store`), and
  an outage lived through (`outage`). Imports `failover` alone.
- `loop/`: the loop's machinery: list-then-watch into a cache (`informer`, `cache`), the work queue (`queue`), a queue
  and its workers (`controller`), Lease election (`leader`), every metric of the loop (`loop_metrics`). Imports
  `access`.
- `reconcilers/`: what each controller does with a key, each built from `loop_parts`: `binding_reconciler` (one
  binding's pipeline of steps), `cluster_reconciler` (a Cluster's passes: the brake reported, planned moves
  started), `rebalancer_reconciler`; their adapters: `old_copies` (a Work released or handed over, a member copy
  deleted), `storage_fence` (the control plane's storage fence), `restore_watch` (a restoring copy's first
  checkpoint), `brake_report`. Imports `access` and `loop`.
- `member/`: the member relay's fence watcher (`member_fence`). Imports `access`.
- `manager`: the reconcile loop as a whole; `CONTROLLERS` is the wiring. `cabundle`: the webhook configurations'
  caBundle, kept on every replica (it reads our CA from the cert dir, so it imports `certs`).
"""
