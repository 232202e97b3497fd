"""The reconcile loop's machinery: `informer` (list-then-watch of one resource into a local cache), `cache` (what the
reconcilers read without asking the apiserver), `queue` (a rate-limited work queue of keys), `controller` (a queue
and its workers), `leader` (Lease election), `loop_metrics` (every metric of the loop). Imports `controllers.access`."""
