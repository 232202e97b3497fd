"""The failover domain: Karmada API names, policy rules, state extraction and failover decisions.

Everything here is a plain function of its inputs (objects, settings, the current time). Nothing in this package
touches the network or imports the rest of failover-relay, so every rule is tested without a server or a cluster.
"""
