"""Tolerant reads of Karmada Works (work.karmada.io/v1alpha1) and of the objects a Work applies on its cluster: which
cluster a Work is for, whether Karmada is deleting it, the copies it put on the member, and whether a member object is
one of them. Field names follow `pkg/apis/work/v1alpha1/work_types.go` and
`pkg/apis/work/v1alpha2/well_known_constants.go`; a field of the wrong shape reads as absent.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from failover.core import binding as b
from failover.core.api import EXECUTION_NAMESPACE_PREFIX

EXECUTION_FINALIZER = "karmada.io/execution-controller"  # pkg/util/constants.go ExecutionControllerFinalizer
# Stamped on every object a Work applies (`pkg/util/work.go` `SetLabelsAndAnnotationsForWorkload`).
WORK_NAME_ANNOTATION = "work.karmada.io/name"
WORK_NAMESPACE_ANNOTATION = "work.karmada.io/namespace"
# A UUID Karmada's Work webhook gives every Work (`pkg/webhook/work/mutating.go`), also stamped on what it applies.
PERMANENT_ID_LABEL = "work.karmada.io/permanent-id"
# The labels `FindWorksInClusters` finds a binding's Works by (`pkg/util/helper/binding.go`, an index on them).
BINDING_ID_LABELS = (
    "resourcebinding.karmada.io/permanent-id",
    "clusterresourcebinding.karmada.io/permanent-id",
)


@dataclass(frozen=True)
class MemberCopy:
    """One object a Work put on a member cluster: the one type for it, on the binding (the fenced copies), in the
    storage fence's records and in the calls through the cluster proxy."""

    cluster: str
    api_version: str
    kind: str
    namespace: str
    name: str
    work: str  # the Work's name (its namespace is karmada-es-<cluster>)

    def object_fields(self) -> dict[str, str]:
        """The object's identity on the member, as the storage fence's records hold it."""
        return {"apiVersion": self.api_version, "kind": self.kind, "namespace": self.namespace, "name": self.name}

    def as_record(self) -> dict[str, str]:
        """The object's identity and its Work, as the binding's fenced-copies annotation holds it."""
        return {**self.object_fields(), "work": self.work}


def execution_namespace(cluster: str) -> str:
    """The namespace of a cluster's Works on the control plane: karmada-es-<cluster>."""
    return f"{EXECUTION_NAMESPACE_PREFIX}{cluster}"


def work_cluster(work: Mapping[str, Any]) -> str | None:
    """The cluster a Work is for, from its execution namespace; None for an object outside one."""
    namespace = b.metadata(work).get("namespace")
    if not isinstance(namespace, str) or not namespace.startswith(EXECUTION_NAMESPACE_PREFIX):
        return None
    return namespace[len(EXECUTION_NAMESPACE_PREFIX) :] or None


def finalizers(work: Mapping[str, Any]) -> list[str]:
    found = b.metadata(work).get("finalizers")
    return [name for name in found if isinstance(name, str)] if isinstance(found, list) else []


def is_held(work: Mapping[str, Any]) -> bool:
    """Karmada is deleting the Work and its execution controller still holds it: the copy on the member has not been
    deleted yet (`pkg/controllers/execution/execution_controller.go` `handleWorkDelete`)."""
    return b.is_deleting(work) and EXECUTION_FINALIZER in finalizers(work)


def permanent_id(work: Mapping[str, Any]) -> str | None:
    labels = b.metadata(work).get("labels")
    value = labels.get(PERMANENT_ID_LABEL) if isinstance(labels, dict) else None
    return value if isinstance(value, str) else None


def binding_id_labels(work: Mapping[str, Any]) -> tuple[str, ...]:
    """The binding permanent-id labels the Work carries: what counts it as the binding's Work for Karmada."""
    labels = b.metadata(work).get("labels")
    return tuple(label for label in BINDING_ID_LABELS if isinstance(labels, dict) and label in labels)


def handed_to_agent(work: Mapping[str, Any]) -> bool:
    """The Work is held (`is_held`) and no longer counted as the binding's: it waits for its Pull cluster's agent to
    delete its copy (failover/fence/old_copy.py, "A Pull cluster")."""
    return is_held(work) and not binding_id_labels(work)


def manifests(work: Mapping[str, Any]) -> list[Any]:
    """The objects a Work carries (`spec.workload.manifests`), as written: [] when the field is not a list."""
    workload = b.spec(work).get("workload")
    items = workload.get("manifests") if isinstance(workload, dict) else None
    return items if isinstance(items, list) else []


def live_manifests(works: Iterable[Mapping[str, Any]], cluster: str) -> Iterator[dict[str, Any]]:
    """The manifests of the Works for `cluster` that are not being deleted: what the binding puts there now."""
    for work in works:
        if work_cluster(work) == cluster and not b.is_deleting(work):
            yield from (manifest for manifest in manifests(work) if isinstance(manifest, dict))


def member_copies(work: Mapping[str, Any]) -> tuple[MemberCopy, ...]:
    """The objects a Work puts on its cluster, from its manifests' identities."""
    cluster = work_cluster(work)
    name = b.metadata(work).get("name")
    copies = []
    for manifest in manifests(work) if cluster and isinstance(name, str) else ():
        meta = b.metadata(manifest)
        api_version, kind = (
            (manifest.get("apiVersion"), manifest.get("kind")) if isinstance(manifest, dict) else (None, None)
        )
        obj_name, namespace = meta.get("name"), meta.get("namespace") or ""
        if all(isinstance(v, str) and v for v in (api_version, kind, obj_name)) and isinstance(namespace, str):
            copies.append(MemberCopy(str(cluster), str(api_version), str(kind), namespace, str(obj_name), str(name)))
    return tuple(copies)


def copy_of(member_object: Mapping[str, Any], cluster: str, work: str) -> MemberCopy:
    """`member_object` (as read from `cluster`) named as a copy of the Work `work`, whether that Work applied it or
    not (`applied_by` says)."""
    meta = b.metadata(member_object)
    return MemberCopy(
        cluster,
        str(member_object.get("apiVersion")),
        str(member_object.get("kind")),
        str(meta.get("namespace") or ""),
        str(meta.get("name")),
        work,
    )


def applied_by(member_object: Mapping[str, Any], copy: MemberCopy, permanent: str | None = None) -> bool:
    """The object on the member cluster is the one `copy`'s Work put there (Karmada stamps every applied object with
    its Work's name and namespace, and the Work's permanent id), not one someone else created since. `permanent`:
    also require this permanent id, so a copy the workload is back on (a new Work) never matches."""
    notes, labels = b.annotations(member_object), b.metadata(member_object).get("labels")
    labels = labels if isinstance(labels, dict) else {}
    return (
        notes.get(WORK_NAME_ANNOTATION) == copy.work
        and notes.get(WORK_NAMESPACE_ANNOTATION) == execution_namespace(copy.cluster)
        and (permanent is None or labels.get(PERMANENT_ID_LABEL) == permanent)
    )
