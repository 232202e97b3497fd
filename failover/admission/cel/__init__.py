"""The policy rules as CEL: what `failover-relay manifests admission-policies` renders (the shapes, `checks`; shared
pieces, `expressions`; the (Cluster)PropagationPolicy and WorkloadRebalancer rules, `policy_rules`,
`workload_rebalancer`), how each named rule is enforced without the webhook (`forms`), and the member clusters'
fail-closed guard for copies the savepoint webhook did not reach (`restore_guard`)."""
