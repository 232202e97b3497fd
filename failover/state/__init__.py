"""A workload's state across a move: what is preserved from the old copy (`last_state`), the moves and runs kept on
the binding (`history`), the label and restore path a moved copy's Work gets (`preserved_state`), and the savepoint
injection: the job id (`jobid`), the workload's own Flink configuration (`flink_config`), where its state may live
(`state_roots`), the checkpoints and savepoints there (`checkpoints`), the newest restorable one (`restore`), which
kinds and fields take it (`profiles`) and the decision for one admitted object (`savepoint`); after a move, a copy
restoring until its first checkpoint (`restoration`), one that started without its state (`empty_start`), and the
JobManager objects that say a copy is stopped (`jobmanager`).

Imports `failover.core` only. The admission webhook and the reconcile loop both read it; it reads neither.
"""
