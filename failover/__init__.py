"""The failover domain: every decision failover-relay makes, as plain functions of their inputs.

Eight rooms, each allowed to import only the rooms named here (a test, tests/test_layers.py, holds the code to it):

- `core/`: the Karmada and Flink API catalogue, object names and typed field reads, labels, JSONPath, verdicts,
  annotation values, binding, Cluster and Work reads, the placement reader, what a reconcile decision returns,
  the loop's settings, and the relay's version (`--version`, the logs, the metrics and the API clients' user agent
  show it). Imports nothing of ours.
- `state/`: a workload's state: what to preserve, where its checkpoints and savepoints are, which one to restore
  from, and the label and restore path a moved copy gets. Imports `core`.
- `admission/`: the webhook's rules for policies and rebalancers, Karmada's own admission and schema steps, warnings
  and the registry that routes them. Imports `core` and `state`, never `reconcile`.
- `fence/`: the old copy of a Directly purge: the Works a new copy waits on, the timer fence, the storage fence's
  files and both sides' decisions. Imports `core` and `state`.
- `reconcile/`: the failover family of the loop's decisions on bindings: application and cluster failover, the
  brake, graceful eviction, the failover budget, the preconditions of their writes. Imports `core`, `state` and
  `fence`, never `admission`.
- `moves/`: planned moves, handed over by savepoint: the handoff, drain, failback, the WorkloadRebalancer, the
  drill. Imports `core`, `state`, `fence` and `reconcile`.
- `views/`: what the read-only commands show: one workload's `status`, a storm's phases. Imports `core`, `state`,
  `fence`, `reconcile` and `moves`.
- `readiness/`: the readiness check's judgement: would a workload survive a failover now, what each condition
  docs/operations.md sets says, and the RPO and RTO it would get. Imports `core`, `state`, `fence` and `admission`.

Everything here is a plain function of its inputs (objects, settings, the current time) and imports nothing of
failover-relay outside this package, so every rule is tested without a server or a cluster. None of it talks to an
apiserver. The one kind of I/O is reading checkpoint storage: `state/checkpoints.py` and `state/restore.py` list and
stat directories through the `CheckpointStore` they are given (a local filesystem, or S3 through fsspec), and the
webhook runs them in a thread under a deadline.
"""
