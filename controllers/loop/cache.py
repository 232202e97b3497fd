"""What the reconcilers read without asking the apiserver: one informer cache per resource, and Works by binding.

Decisions are made on these snapshots and written with a precondition on the version they saw (its resourceVersion,
or a test of every field they read; see `controllers/access/binding_writes.py`), so a cache that lags costs a failed
write and a read, never a wrong write.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Any

from controllers.access.kube import with_identity
from controllers.loop.informer import Informer
from failover.core import binding as b
from failover.core.api import BINDING_RESOURCES, CLUSTERS, POLICY_RESOURCES, WORKS, Resource
from failover.core.cluster import has_taint
from failover.core.jsonpath import JSONPathSyntaxError, parse_template
from failover.core.names import object_key
from failover.fence.fenced_copies import FENCED_ANNOTATION, fenced_copies
from failover.reconcile.cluster_eviction import eviction_order
from failover.reconcile.stateless_restart import is_flink_deployment
from failover.state.empty_start import START_WITHOUT_STATE_ANNOTATION, watched_clusters
from failover.state.history import JOB_STATUS
from failover.state.last_state import preservation_rules
from failover.state.preserved_state import owning_binding

BindingKey = tuple[str, str]  # (kind, key)
RECONCILIATION = "reconciliationStatus"
# A copy's lifecycle: FAILED ends its restore grace at once (failover/state/restoration.py `terminally_failed`).
LIFECYCLE = "lifecycleState"


def _read_spec(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """Of a manifest's spec, what the loop reads, in one `spec`: a FlinkDeployment's flinkConfiguration (a few keys,
    which failover/reconcile/stateless_restart.py judges) and the restore path
    (`failover.state.history.restore_paths`)."""
    spec: dict[str, Any] = {}
    configuration = b.spec(manifest).get("flinkConfiguration")
    if is_flink_deployment(manifest) and isinstance(configuration, dict):
        spec["flinkConfiguration"] = configuration
    job = b.spec(manifest).get("job")
    path = job.get("initialSavepointPath") if isinstance(job, dict) else None
    if isinstance(path, str) and path:
        spec["job"] = {"initialSavepointPath": path}
    return {"spec": spec} if spec else {}


def _identity_and_acceptance(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """A manifest's name and namespace, and the annotation that accepts the loss of a job's state (empty_start.py)."""
    kept = {k: v for k, v in b.metadata(manifest).items() if k in ("name", "namespace")}
    accepted = b.annotations(manifest).get(START_WITHOUT_STATE_ANNOTATION)
    if isinstance(accepted, str):
        kept["annotations"] = {START_WITHOUT_STATE_ANNOTATION: accepted}
    return kept


def work_cached_form(work: Mapping[str, Any]) -> Mapping[str, Any]:
    """A Work as the cache keeps it: metadata, and of each manifest only what names the object it puts on its
    cluster, a FlinkDeployment's flinkConfiguration and a restore path (the manifests are most of a Work's size and
    nothing else of them is read)."""
    metadata = work.get("metadata")
    metadata = {k: v for k, v in metadata.items() if k != "managedFields"} if isinstance(metadata, dict) else {}
    workload = b.spec(work).get("workload")
    manifests = workload.get("manifests") if isinstance(workload, dict) else None
    identities = [
        {
            "apiVersion": m.get("apiVersion"),
            "kind": m.get("kind"),
            "metadata": _identity_and_acceptance(m),
            **_read_spec(m),
        }
        for m in (manifests if isinstance(manifests, list) else ())
        if isinstance(m, dict)
    ]
    return {
        "apiVersion": WORKS.api_version,
        "kind": WORKS.kind,
        "metadata": metadata,
        "spec": {"workload": {"manifests": identities}},
    }


def binding_cached_form(binding: Mapping[str, Any]) -> Mapping[str, Any]:
    """A binding as the cache keeps it: without managedFields, and each copy's reflected status
    (`status.aggregatedStatus[*].status`) cut to the top-level fields the loop reads: `jobStatus` (the history of runs),
    `lifecycleState` (a terminal failure), what the binding's statePreservation rules name, and for the copies a move
    brings their `reconciliationStatus` (whether the operator deployed them from a restore path). A FlinkDeployment's
    reflected status carries the whole last spec twice as strings (`reconciliationStatus`), most of a binding's size;
    at 50,000 bindings this is the difference to the memory target (docs/benchmarks.md, "Reconcile loop at scale"). A
    rule that may read anything keeps the status whole."""
    metadata = binding.get("metadata")
    if isinstance(metadata, dict) and "managedFields" in metadata:
        binding = {**binding, "metadata": {k: v for k, v in metadata.items() if k != "managedFields"}}
    items = b.status(binding).get("aggregatedStatus")
    if not isinstance(items, list) or not items:
        return binding
    kept: set[str] = {JOB_STATUS, LIFECYCLE}
    for rule in preservation_rules(binding):
        try:
            fields = parse_template(rule.json_path).leading_fields()
        except JSONPathSyntaxError:
            continue  # never evaluates to a value
        if fields is None:
            return binding
        kept |= fields
    watched = watched_clusters(binding)
    trimmed = [
        {
            **item,
            "status": {
                k: v for k, v in item["status"].items() if k in kept or (k == RECONCILIATION and _of(item, watched))
            },
        }
        if isinstance(item, dict) and isinstance(item.get("status"), dict)
        else item
        for item in items
    ]
    return {**binding, "status": {**b.status(binding), "aggregatedStatus": trimmed}}


def _of(item: Mapping[str, Any], clusters: set[str]) -> bool:
    return item.get("clusterName") in clusters


class Cache:
    """The informers of the loop by kind, and an index of Works by the binding they render."""

    def __init__(self) -> None:
        self.informers: dict[str, Informer] = {}
        self._resources: dict[str, Resource] = {}
        self._works_of: dict[BindingKey, set[str]] = {}
        self._owner_of: dict[str, BindingKey] = {}

    def add(self, resource: Resource, informer: Informer) -> None:
        self.informers[resource.kind] = informer
        self._resources[resource.kind] = resource

    def get(self, kind: str, key: str) -> dict[str, Any] | None:
        obj = self.informers[kind].get(key)
        return None if obj is None else with_identity(obj, self._resources[kind])

    def list(self, kind: str) -> list[dict[str, Any]]:
        informer = self.informers.get(kind)
        if informer is None:
            return []
        return [with_identity(obj, self._resources[kind]) for obj in list(informer.cache.values())]

    # From here on `list` in the class body is the method above, so annotations spell the builtin `builtins.list`.
    def bindings(self) -> builtins.list[dict[str, Any]]:
        return [obj for resource in BINDING_RESOURCES for obj in self.list(resource.kind)]

    def policies(self) -> builtins.list[dict[str, Any]]:
        return [obj for resource in POLICY_RESOURCES for obj in self.list(resource.kind)]

    def clusters(self) -> dict[str, dict[str, Any]]:
        return {str(b.metadata(cluster).get("name")): cluster for cluster in self.list(CLUSTERS.kind)}

    def synced(self, kind: str) -> bool:
        informer = self.informers.get(kind)
        return informer is not None and informer.synced.is_set()

    def works_of(self, binding: Mapping[str, Any]) -> builtins.list[dict[str, Any]]:
        ref = b.object_ref(binding)
        keys = self._works_of.get((ref.kind, object_key(ref.namespace, ref.name)), set())
        return [work for key in sorted(keys) if (work := self.get(WORKS.kind, key)) is not None]

    def work_changed(self, key: str) -> BindingKey | None:
        """Re-index the Work `key` after its informer reported it; the binding it belongs to (before or after)."""
        old = self._owner_of.pop(key, None)
        if old is not None:
            self._works_of.get(old, set()).discard(key)
        work = self.informers[WORKS.kind].get(key)
        ref = owning_binding(work)[0] if work is not None else None
        if ref is None:
            return old
        owner = (ref.kind.kind, object_key(ref.namespace, ref.name))
        self._owner_of[key] = owner
        self._works_of.setdefault(owner, set()).add(key)
        return owner

    def bindings_touching(self, cluster: str) -> builtins.list[BindingKey]:
        """Bindings with an eviction task from `cluster` or fenced copies on it: a change of the cluster's
        readiness changes what fencing decides for them. While the cluster carries a NoExecute taint, also the
        bindings it is a target of, in the order their evictions should be written (`eviction_order`)."""
        touching = []
        tainted = CLUSTERS.kind in self.informers and has_taint(self.get(CLUSTERS.kind, cluster))
        targeted: builtins.list[tuple[Any, BindingKey]] = []
        for resource in BINDING_RESOURCES:
            for key, obj in list(self.informers[resource.kind].cache.items()):
                if any(task["fromCluster"] == cluster for task in b.eviction_tasks(obj)) or (
                    FENCED_ANNOTATION in b.annotations(obj) and cluster in fenced_copies(obj)
                ):
                    touching.append((resource.kind, key))
                elif tainted and any(target.name == cluster for target in b.target_clusters(obj)):
                    targeted.append((eviction_order(obj), (resource.kind, key)))
        return [*touching, *(key for _, key in sorted(targeted, key=lambda entry: entry[0]))]
