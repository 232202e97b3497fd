"""The member relay (`serve --member --fence-cluster NAME`), a process of its own: `member_fence`, the storage fence's
watcher that suspends the copies its cluster's records name and acknowledges them, and the member's objects it acts on
(`MemberObjects`). It reaches everything through the shared access (the records, the copies, Events and metrics of
`controllers.access`); its wiring is the program's (relay/fence_watcher.py says why). Imports `failover` and
`controllers.access`."""
