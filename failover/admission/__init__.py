"""The admission rules: PropagationPolicy / ClusterPropagationPolicy validation and defaults (`policy`),
WorkloadRebalancer validation (`rebalancer_rules`), warnings for failover that cannot happen (`failover_warnings`),
Karmada's own webhook rules and CRD schema steps for `check` (`karmada_admission`, `schema`), the registry that
routes a kind to its rules and renders the webhook configurations (`registry`), the names of the rules (`rules`), and
the same rules as CEL for the apiserver to run without the relay (`cel`: `checks`, `expressions`, `policy_rules`,
`workload_rebalancer`, and `forms`, how each named rule is enforced there).

Imports `failover.core` and `failover.state`; never `failover.reconcile` (a review decides from the object alone).
"""
