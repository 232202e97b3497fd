"""The vocabulary every other room speaks: the Karmada and Flink API catalogue (`api`), object names (`names`),
typed reads of untrusted objects (`fields`), label syntax (`labels`), client-go's JSONPath (`jsonpath`), what a rule
concludes (`verdict`), values kept in annotations (`annotations`), tolerant binding reads (`binding`) and how many
clusters a placement can pick (`placement`).

Imports nothing of failover-relay: the standard library only.
"""
