"""How the loop and the member relay reach the outside: `kube` (cluster access, the Karmada resources), `client`
(the reconcilers' one client, on the loop's threads), `members` (member objects through Karmada's cluster proxy),
`events` (Kubernetes Events), `binding_writes` (the one way to write a binding: with the precondition its decision
read), `fence_store` (the storage fence's records in the checkpoint storage), `fence_metrics` (the storage fence's
metrics, where the member relay can import them), `outage` (an outage said once, as a long-running task lives through
it). Imports `failover` alone."""
