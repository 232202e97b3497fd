"""The fence: the old copy of a Directly-purged workload, released only once it cannot run beside the new one.

- `waiting`: the old Works a Directly eviction waits on, and when the timer fence may release one; both fences
  decide from it.
- `old_copy`: the timer fence and the rest of the old copy's end: release a Work whose cluster stayed unreachable
  (hand it to a Pull cluster's agent), finish a stuck deletion, delete a fenced copy when its cluster returns, wake
  Karmada's binding controller.
- `fenced_copies`: the copies a binding remembers fencing, until they are deleted.
- The storage fence, which releases within seconds a copy its own member relay has suspended:
  `fence_files` (the record and acknowledgement in the checkpoint storage), `control_plane` (which records a binding
  needs, which acknowledgements count) and `member_relay` (what the member relay suspends, acknowledges and keeps
  suspended).

The walk of the storage fence (record -> suspend -> acknowledge -> release) enters this room for every decision and
`controllers/` for every adapter (`storage_fence`, `fence_store`, `member_fence`, and the binding pipeline's
`old_copies`). Imports `failover.core` and `failover.state` (what a Flink job's state and its paths are).
"""
