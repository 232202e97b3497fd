"""The failover domain: Karmada API names, policy rules, state extraction and failover decisions.

Everything here is a plain function of its inputs (objects, settings, the current time) and imports nothing of
failover-relay outside this package, so every rule is tested without a server or a cluster. None of it talks to an
apiserver. The one kind of I/O is reading checkpoint storage: `checkpoints.py` and `restore.py` list and stat
directories through the `CheckpointStore` they are given (a local filesystem, or S3 through fsspec), and the
webhook runs them in a thread under a deadline.
"""
