"""The vocabulary every other room speaks: the Karmada and Flink API catalogue (`api`), object names (`names`),
typed reads of untrusted objects (`fields`), label syntax (`labels`), client-go's JSONPath (`jsonpath`), what a rule
concludes (`verdict`), values kept in annotations (`annotations`), tolerant reads of bindings (`binding`), Clusters
(`cluster`) and Works and their copies (`work`), how many clusters a placement can pick (`placement`), what a
reconcile decision returns beside its patch (`decision`), the loop's settings (`loop_settings`, declared with
`setting_spec`), and the relay's version (`version`: the command line, the logs, the metrics and the API clients'
user agent show it).

Imports nothing of failover-relay: the standard library only.
"""
