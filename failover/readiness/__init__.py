"""The readiness check's judgement (`failover-relay readiness`): would a workload come back with its state if its
cluster died or its job failed now, and what would it cost? Each condition docs/operations.md sets for a stateful
failover is a plain function of what the command read (Karmada's objects, karmada-controller-manager's metrics, the
relay's Lease, the answers of two dry-run probes, the member relays' heartbeats, the restore lookup) and the current
time, returning a `Finding`: ok, warning or problem, the evidence, and the section of the docs that says how to fix
it. Nothing here reads a server.

- `findings`: what the check says of one condition (`Finding`), and the sections of the docs a fix points to;
- `shared_conditions`: the conditions every workload shares: Karmada's controllers, the relay's Lease, the
  ClusterTaintPolicy, the webhooks as the apiserver calls them, the checkpoint storage, the member relays;
- `workload`: one workload's conditions (its policy, health interpretation, Flink configuration, newest state,
  targets), and the RPO and RTO it would get.
"""
