"""The reconcile loop: watches through the `kubernetes` client, and adapters that read objects, call the decisions
of `failover/` and write the result back with a precondition. Nothing here decides.

- The loop's machinery: `manager` (every controller, behind the Lease; `CONTROLLERS` is the wiring), `leader`
  (Lease election), `informer` (list-then-watch into a cache), `cache` (what the reconcilers read), `queue` (the
  work queue), `controller` (a queue and its workers), `loop_metrics` (every metric of the loop).
- Talking to the apiserver: `kube` (cluster access and the Karmada resources), `client` (the reconcilers' one
  client, on the loop's threads), `members` (member objects through Karmada's cluster proxy), `events` (Events).
- The reconcilers, each built from `loop_parts`: `binding_reconciler` (one binding's pipeline of steps),
  `binding_writes` (a write with a precondition, decided again on a fresh read), `old_copies` (a Work released or handed
  over, a member copy deleted), `rebalancer_reconciler`, `planned_moves_reconciler`.
- The storage fence's adapters: `storage_fence` (the control plane's), `member_fence` (a member relay's watcher),
  `fence_store` (the records in the checkpoint storage, for both).
- `cabundle`: the webhook configurations' caBundle, kept on every replica.

Imports `failover` and `certs` (the caBundle sync reads our CA from the cert dir).
"""
