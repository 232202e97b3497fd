"""Preserved-state labels on Karmada `Work` objects: the copy sent to the new cluster carries the failed copy's state.

Reference behaviour: Karmada's binding controller, behind the alpha gate StatefulFailoverInjection (reference
section 3.3, step 3): when the binding's only target is the Work's cluster and the binding's last eviction task
holds `preservedLabelState`, and the cluster is not in that task's `clustersBeforeFailover`, every preserved
key/value is merged into the workload manifest's `metadata.labels`. We decide the same from the admitted Work and
its binding, without the gate, with these differences:

- A label key or value that is not valid label syntax is never written (Karmada writes it and the member apply
  fails); it is skipped with a warning.
- Of the tasks that qualify, the newest is used (a second failover in a row: the decision layer already copies the
  first task's state into the newest one, karmada#6232). Karmada looks at the last task only, and
  injects nothing when that one has no state.
- The purge mode is not consulted: policy validation already refuses statePreservation with a purge mode other
  than Directly, the only one Karmada injects for.
- A task whose `fromCluster` is the Work's cluster never injects there: that state was read from this cluster.

The savepoint path can be set in the same Work (`manifest_injection`): the FlinkDeployment decision of
`failover.state.savepoint` is made on the manifest, as it will look with the labels, and its patch is moved under the
manifest's place in the Work, so the member cluster needs no webhook of its own.

Everything here is pure: the adapter reads the binding and does the storage lookup (webhook/work_mutator.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from failover.core import binding as b
from failover.core.annotations import parse_time
from failover.core.api import (
    CLUSTER_RESOURCE_BINDING,
    CLUSTER_RESOURCE_BINDING_NAME_ANNOTATION,
    EXECUTION_NAMESPACE_PREFIX,
    RESOURCE_BINDING,
    RESOURCE_BINDING_NAME_ANNOTATION,
    RESOURCE_BINDING_NAMESPACE_ANNOTATION,
    GroupKind,
)
from failover.core.labels import escape_json_pointer, label_key_problems, label_value_problems
from failover.core.names import is_dns_label, is_dns_subdomain
from failover.core.verdict import Verdict
from failover.core.work import manifests
from failover.state.history import restore_hints
from failover.state.last_state import APPLICATION, CLUSTER, preservation_rules, recorded_state, recorded_states

MANIFESTS_POINTER = "/spec/workload/manifests"
# Audit annotation keys; the apiserver prefixes them with the webhook's name.
AUDIT_OUTCOME = "preserved-state-outcome"
AUDIT_FROM = "preserved-state-from"
AUDIT_REASON = "preserved-state-reason"

# The alias Karmada's cluster failover documentation uses for the Flink job id.
CLUSTER_FAILOVER_JOB_ID_LABEL = "application.karmada.io/cluster-failover-jobid"
# LabelPlan.source of labels kept from the Work's previous manifests.
RETAINED = "retained"
# A task not yet stamped by the graceful eviction pass was appended last: it counts as the newest.
UNSTAMPED = datetime.max.replace(tzinfo=UTC)


@dataclass(frozen=True)
class BindingRef:
    """The binding a Work belongs to, from the annotations Karmada puts on every Work it renders."""

    kind: GroupKind
    name: str
    namespace: str = ""  # empty for a ClusterResourceBinding

    def __str__(self) -> str:
        return f"{self.kind.kind} {self.namespace + '/' if self.namespace else ''}{self.name}"


@dataclass(frozen=True)
class LabelPlan:
    """What the preserved state does to one Work.

    `labels` are the (valid) labels every manifest must carry, empty when nothing applies; `patch` puts them and the
    `annotations` there (empty when they already are); `source` is the cluster the state was preserved from; `reason`
    says why nothing applies when a task with state exists but cannot be used here.
    """

    labels: Mapping[str, str] = field(default_factory=dict)
    patch: tuple[Mapping[str, Any], ...] = ()
    # The restore hints of `failover.state.history` (earlier job ids, the failed run's start path), set beside the
    # labels.
    annotations: Mapping[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    source: str = ""
    reason: str = ""

    def verdict(self) -> Verdict:
        if self.labels:
            audit = {AUDIT_OUTCOME: "injected" if self.patch else "already-set", AUDIT_FROM: self.source}
        elif self.reason:
            audit = {AUDIT_OUTCOME: "skipped", AUDIT_REASON: self.reason}
        else:
            audit = {}
        return Verdict(patch=self.patch, warnings=self.warnings, audit=audit)


NOTHING = LabelPlan()


def execution_cluster(namespace: Any) -> str | None:
    """The member cluster of an execution namespace `karmada-es-<cluster>`; None for any other namespace."""
    if not isinstance(namespace, str) or not namespace.startswith(EXECUTION_NAMESPACE_PREFIX):
        return None
    cluster = namespace[len(EXECUTION_NAMESPACE_PREFIX) :]
    return cluster or None


def owning_binding(work: Mapping[str, Any]) -> tuple[BindingRef | None, str]:
    """The Work's binding from its annotations, or None; the second value says why an annotation is unusable.

    The names are checked as Kubernetes names before anyone builds a request from them.
    """
    annotations = b.annotations(work)
    name = annotations.get(RESOURCE_BINDING_NAME_ANNOTATION)
    namespace = annotations.get(RESOURCE_BINDING_NAMESPACE_ANNOTATION)
    if name is not None or namespace is not None:
        if not is_dns_label(namespace):
            return None, f"annotation {RESOURCE_BINDING_NAMESPACE_ANNOTATION} is not a namespace name"
        if not is_dns_subdomain(name):
            return None, f"annotation {RESOURCE_BINDING_NAME_ANNOTATION} is not an object name"
        return BindingRef(RESOURCE_BINDING, name, namespace), ""
    cluster_name = annotations.get(CLUSTER_RESOURCE_BINDING_NAME_ANNOTATION)
    if cluster_name is not None:
        if not is_dns_subdomain(cluster_name):
            return None, f"annotation {CLUSTER_RESOURCE_BINDING_NAME_ANNOTATION} is not an object name"
        return BindingRef(CLUSTER_RESOURCE_BINDING, cluster_name), ""
    return None, ""


def belongs_to(work: Mapping[str, Any], binding: Mapping[str, Any]) -> bool:
    """The Work is one Karmada rendered for `binding` (kind, namespace and name, as its annotations say)."""
    ref, owner = owning_binding(work)[0], b.object_ref(binding)
    return ref is not None and (ref.kind.kind, ref.namespace, ref.name) == (owner.kind, owner.namespace, owner.name)


def binding_targets(binding: Mapping[str, Any]) -> set[str]:
    """Every cluster the binding sends the workload to: spec.clusters and the clusters of spec.requiredBy (a
    dependency's binding inherits its dependants' clusters), as Karmada counts them for injection."""
    clusters = {target.name for target in b.target_clusters(binding)}
    required_by = b.spec(binding).get("requiredBy")
    for snapshot in required_by if isinstance(required_by, list) else []:
        entries = snapshot.get("clusters") if isinstance(snapshot, dict) else None
        for entry in entries if isinstance(entries, list) else []:
            name = entry.get("name") if isinstance(entry, dict) else None
            if isinstance(name, str) and name:
                clusters.add(name)
    return clusters


def task_state(binding: Mapping[str, Any], task: Mapping[str, Any]) -> dict[Any, Any]:
    """The state a task carries: its preservedLabelState, else (a task Karmada wrote without state, e.g. the taint
    manager's without its alpha gate) the last healthy report of the evicted copy for the rules of that kind of
    failover (`failover.state.last_state`); for a task of another producer, only its own preservedLabelState."""
    state = task.get("preservedLabelState")
    if isinstance(state, dict) and state:
        return dict(state)
    if not b.is_failover_task(task):
        return {}  # a pass-through task (Karmada PR #7832's preemption) carries only what its producer preserved
    which = CLUSTER if b.is_cluster_failover_task(task) else APPLICATION
    aliases = {rule.alias for rule in preservation_rules(binding, which)}
    return recorded_state(binding, task["fromCluster"], aliases) if aliases else {}


def newest_state_task(binding: Mapping[str, Any], cluster: str) -> tuple[Mapping[str, Any] | None, str]:
    """The newest eviction task whose preserved state belongs on `cluster`, or None and why not.

    A task qualifies when it carries state (`task_state`), did not evict from `cluster` itself, and `cluster` is not
    in its clustersBeforeFailover (the workload ran there before that failover, so its own state there is current).
    Newest: latest creationTimestamp; an unstamped task was appended last; ties go to list order. The returned task
    holds the state in its preservedLabelState.
    """
    candidates = []
    with_state = 0
    for index, task in enumerate(b.eviction_tasks(binding)):
        state = task_state(binding, task)
        if not state:
            continue
        with_state += 1
        before = task.get("clustersBeforeFailover")
        if task["fromCluster"] == cluster or (isinstance(before, list) and cluster in before):
            continue
        created = parse_time(task.get("creationTimestamp")) or UNSTAMPED
        candidates.append((created, index, {**task, "preservedLabelState": state}))
    if candidates:
        return max(candidates, key=lambda candidate: candidate[:2])[2], ""
    if with_state:
        return None, f"the preserved state is not for {cluster}: it ran the workload before that failover"
    return None, ""


def moved_state(binding: Mapping[str, Any], cluster: str) -> tuple[str, dict[str, str]] | None:
    """With no task: the newest recorded state of a copy that ran elsewhere and is no longer targeted, when it is
    newer than what `cluster` itself last reported. That is a workload that moved without a task, or whose task ended
    before the new copy existed (a failback by WorkloadRebalancer, a grace period that ran out): the state outlives
    the task until a new copy has been created with it."""
    records = recorded_states(binding)
    targets = binding_targets(binding) | b.passing_through(binding)  # a stateless move leaves no state to carry
    others = [(state.at, name) for name, state in records.items() if name != cluster and name not in targets]
    if not others:
        return None
    at, source = max(others)
    own = records.get(cluster)
    if own is not None and own.at >= at:
        return None
    return source, dict(records[source].labels)


def retained_labels(
    binding: Mapping[str, Any], work: Mapping[str, Any], old_work: Mapping[str, Any] | None
) -> dict[str, str]:
    """On a re-render of the same Work (UPDATE), the preserved labels its old manifests carried and the new ones
    lack: Karmada rewrites the manifests from the template once the task is gone (`pkg/controllers/ctrlutil/work.go`
    `CreateOrUpdateWork`, Karmada PR #7478), but they still describe the job this copy runs."""
    aliases = {rule.alias for rule in preservation_rules(binding)}
    if old_work is None or not aliases:
        return {}
    kept: dict[str, str] = {}
    for manifest in manifests(work):
        old = same_manifest(old_work, manifest) if isinstance(manifest, dict) else None
        old_labels = b.metadata(old).get("labels") if old is not None else None
        new_labels = b.metadata(manifest).get("labels")
        new_labels = new_labels if isinstance(new_labels, dict) else {}
        for key, value in old_labels.items() if isinstance(old_labels, dict) else ():
            if key in aliases and key not in new_labels and isinstance(value, str):
                kept[key] = value
    return kept


def plan_work_labels(
    work: Mapping[str, Any], binding: Mapping[str, Any], namespace: str = "", old_work: Mapping[str, Any] | None = None
) -> LabelPlan:
    """The preserved labels of `binding` for the manifests of `work`, and the JSONPatch that puts them there.

    The state comes from the newest qualifying eviction task; with none, from a copy that moved away
    (`moved_state`) on CREATE, or from the Work's own previous manifests on UPDATE (`retained_labels`).
    """
    cluster = execution_cluster(namespace or b.metadata(work).get("namespace"))
    if cluster is None:
        return NOTHING
    task, reason = newest_state_task(binding, cluster)
    if task is None:
        if old_work is not None:
            state, source = retained_labels(binding, work, old_work), RETAINED
        else:
            moved = moved_state(binding, cluster)
            state, source = (moved[1], moved[0]) if moved else ({}, "")
        if not state:
            return LabelPlan(reason=reason)
        task = {"fromCluster": source, "preservedLabelState": state}
    targets = binding_targets(binding)
    if targets != {cluster}:
        return LabelPlan(
            reason=f"binding targets {len(targets)} clusters ({', '.join(sorted(targets)[:3])}); "
            "preserved state goes to a single-cluster placement only"
        )
    labels, warnings = valid_labels(task["preservedLabelState"], task["fromCluster"])
    if not labels:
        return LabelPlan(warnings=warnings, reason="no preserved label is valid label syntax")
    hints = restore_hints(binding, labels)
    ops: list[dict[str, Any]] = []
    for index, manifest in enumerate(manifests(work)):
        pointer = f"{MANIFESTS_POINTER}/{index}"
        manifest_ops, problem = metadata_ops(pointer, manifest, labels)
        ops.extend(manifest_ops)
        if problem:
            warnings += (f"preserved labels not set on manifest {index}: {problem}",)
        elif hints:
            ops.extend(metadata_ops(pointer, with_labels(manifest, labels), hints, "annotations")[0])
    return LabelPlan(labels=labels, patch=tuple(ops), annotations=hints, warnings=warnings, source=task["fromCluster"])


def valid_labels(state: Mapping[Any, Any], source: str) -> tuple[dict[str, str], tuple[str, ...]]:
    """The entries of a preservedLabelState that are valid labels; a warning for each one left out.

    Preserved values were read from another cluster's status, so they are untrusted: an invalid one is never
    written, not even cleaned up, because a changed job id would restore the wrong job.
    """
    labels: dict[str, str] = {}
    warnings: list[str] = []
    for key, value in sorted(state.items(), key=lambda item: str(item[0])):
        problems = label_key_problems(key) if isinstance(key, str) else ["must be a string"]
        if problems:
            warnings.append(f"preserved label key {str(key)[:40]!r} from {source} skipped: {problems[0]}")
            continue
        problems = label_value_problems(value)
        if problems:
            warnings.append(f"preserved label {key} from {source} skipped: value {problems[0]}")
            continue
        labels[key] = value
    return labels, tuple(warnings)


def metadata_ops(
    pointer: str, manifest: Any, values: Mapping[str, str], kind: str = "labels"
) -> tuple[list[dict[str, Any]], str]:
    """RFC 6902 operations giving the object at `pointer` every entry of `values` in its metadata.`kind` (labels or
    annotations); none for entries already equal.

    A missing metadata or labels map is added whole; one of the wrong type is left alone and reported.
    """
    if not isinstance(manifest, dict):
        return [], "not an object"
    metadata = manifest.get("metadata")
    if metadata is None:
        return [{"op": "add", "path": f"{pointer}/metadata", "value": {kind: dict(values)}}], ""
    if not isinstance(metadata, dict):
        return [], "metadata is not an object"
    current = metadata.get(kind)
    if current is None:
        op = "replace" if kind in metadata else "add"
        return [{"op": op, "path": f"{pointer}/metadata/{kind}", "value": dict(values)}], ""
    if not isinstance(current, dict):
        return [], f"metadata.{kind} is not an object"
    ops = []
    for key, value in values.items():
        if current.get(key) == value:
            continue
        ops.append(
            {
                "op": "replace" if key in current else "add",
                "path": f"{pointer}/metadata/{kind}/{escape_json_pointer(key)}",
                "value": value,
            }
        )
    return ops, ""


def with_labels(manifest: Mapping[str, Any], labels: Mapping[str, str], kind: str = "labels") -> dict[str, Any]:
    """A copy of `manifest` as it will be once the labels (or annotations, by `kind`) are set (for deciding the
    savepoint on it)."""
    metadata = manifest.get("metadata")
    metadata = dict(metadata) if isinstance(metadata, dict) else {}
    current = metadata.get(kind)
    metadata[kind] = {**(current if isinstance(current, dict) else {}), **labels}
    return {**manifest, "metadata": metadata}


def job_id_view(manifest: Mapping[str, Any] | None, job_id_label: str) -> Mapping[str, Any] | None:
    """`manifest` as the savepoint decision should read it: Karmada's cluster failover guide names the job id label
    `CLUSTER_FAILOVER_JOB_ID_LABEL`, so a manifest carrying only that one is read as carrying `job_id_label` too.
    Only the decision sees this view; the label itself is not added."""
    if manifest is None:
        return None
    labels = b.metadata(manifest).get("labels")
    if not isinstance(labels, dict) or job_id_label in labels or CLUSTER_FAILOVER_JOB_ID_LABEL not in labels:
        return manifest
    return with_labels(manifest, {job_id_label: labels[CLUSTER_FAILOVER_JOB_ID_LABEL]})


def manifest_group_kind(manifest: Any) -> tuple[GroupKind, str] | None:
    """(group and kind, version) of a manifest; None when apiVersion or kind is missing."""
    if not isinstance(manifest, dict):
        return None
    api_version, kind = manifest.get("apiVersion"), manifest.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str) or not api_version or not kind:
        return None
    group, _, version = api_version.rpartition("/")
    return GroupKind(group, kind), version


def same_manifest(work: Mapping[str, Any] | None, manifest: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The manifest of `work` (an old Work) for the same object as `manifest`: apiVersion, kind, namespace, name."""
    identity = _identity(manifest)
    for candidate in manifests(work or {}):
        if isinstance(candidate, dict) and _identity(candidate) == identity:
            return candidate
    return None


def _identity(manifest: Mapping[str, Any]) -> tuple[Any, ...]:
    metadata = b.metadata(manifest)
    return manifest.get("apiVersion"), manifest.get("kind"), metadata.get("namespace"), metadata.get("name")


def manifest_namespace(manifest: Mapping[str, Any]) -> str:
    namespace = b.metadata(manifest).get("namespace")
    return namespace if isinstance(namespace, str) else ""


def under_manifest(index: int, verdict: Verdict) -> Verdict:
    """A verdict about one manifest, its patch moved to that manifest's place in the Work."""
    prefix = f"{MANIFESTS_POINTER}/{index}"
    patch = tuple({**op, "path": prefix + op["path"]} for op in verdict.patch)
    return replace(verdict, patch=patch)


def inherited_state(tasks: list[dict[str, Any]], cluster: str) -> tuple[str, dict[str, str]] | None:
    """The state of an earlier failover that `cluster` was the replacement for (karmada#6232), if still pending.

    The graceful eviction decision removes a task as soon as the binding is scheduled and every target is Healthy,
    so an earlier task that is still present means its replacement copy never became healthy. Tasks kept by
    suppressDeletion are not evidence of that and are not inherited from.
    """
    for task in reversed(tasks):
        state = task.get("preservedLabelState")
        before = task.get("clustersBeforeFailover")
        if (
            task["fromCluster"] == cluster
            or task.get("suppressDeletion") is True
            or not isinstance(state, dict)
            or not state
        ):
            continue
        if isinstance(before, list) and cluster in before:
            continue  # the cluster ran the workload before that failover: its own state is current
        if all(isinstance(k, str) and isinstance(v, str) for k, v in state.items()):
            return task["fromCluster"], dict(state)
    return None
