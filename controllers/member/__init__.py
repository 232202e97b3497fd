"""The member relay (`serve --member --fence-cluster NAME`): `member_fence`, the storage fence's watcher that suspends
the copies its cluster's records name and acknowledges them. Imports `controllers.access`."""
