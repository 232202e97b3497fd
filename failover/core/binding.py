"""Tolerant reads of ResourceBinding / ClusterResourceBinding objects (work.karmada.io/v1alpha2).

Field names follow `pkg/apis/work/v1alpha2/binding_types.go`. The decisions run on whatever the apiserver holds,
so every reader returns an empty or None value for a field of the wrong shape instead of raising: a malformed
binding is left alone, it never crashes the loop.

No `from __future__ import annotations` here: this module's own `annotations()` would shadow the feature's name.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from failover.core.api import (
    PLANNED_MOVE_PRODUCERS,
    PLANNED_MOVE_REASONS,
    PRODUCER_CRB_APPLICATION_FAILOVER,
    PRODUCER_RB_APPLICATION_FAILOVER,
    PRODUCER_TAINT_MANAGER,
    REASON_APPLICATION_FAILURE,
    REASON_TAINT_UNTOLERATED,
    PurgeMode,
)
from failover.core.decision import BindingPatch
from failover.core.fields import is_int
from failover.core.names import ObjectRef

HEALTHY = "Healthy"
UNHEALTHY = "Unhealthy"
UNKNOWN = "Unknown"


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    """`value` if it is a list, else empty: a field of an object nothing validated is read as what it should be."""
    return value if isinstance(value, list) else []


def metadata(obj: Any) -> Mapping[str, Any]:
    return _mapping(_mapping(obj).get("metadata"))


def spec(obj: Any) -> Mapping[str, Any]:
    return _mapping(_mapping(obj).get("spec"))


def status(obj: Any) -> Mapping[str, Any]:
    return _mapping(_mapping(obj).get("status"))


def annotations(obj: Any) -> Mapping[str, Any]:
    return _mapping(metadata(obj).get("annotations"))


def object_ref(obj: Mapping[str, Any]) -> ObjectRef:
    meta = metadata(obj)
    kind = obj.get("kind")
    name = meta.get("name")
    namespace = meta.get("namespace")
    return ObjectRef(
        kind=kind if isinstance(kind, str) else "",
        name=name if isinstance(name, str) else "",
        namespace=namespace if isinstance(namespace, str) else "",
    )


def resource_version(obj: Mapping[str, Any]) -> str:
    """The resourceVersion the object was read at ("" when it has none)."""
    version = metadata(obj).get("resourceVersion")
    return version if isinstance(version, str) else ""


def patch_on(binding: Mapping[str, Any], patch: Mapping[str, Any]) -> BindingPatch:
    """`patch` for `binding`, decided on the version of it that was read: the write service sends that version as
    the patch's precondition."""
    return BindingPatch(object_ref(binding), patch, resource_version(binding))


def is_deleting(obj: Mapping[str, Any]) -> bool:
    return bool(metadata(obj).get("deletionTimestamp"))


@dataclass(frozen=True)
class TargetCluster:
    """One entry of spec.clusters (the scheduling result)."""

    name: str
    replicas: int


def target_clusters(binding: Mapping[str, Any]) -> list[TargetCluster]:
    targets = []
    for entry in as_list(spec(binding).get("clusters")):
        entry = _mapping(entry)
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            continue
        replicas = entry.get("replicas")
        targets.append(TargetCluster(name, replicas if is_int(replicas) else 0))
    return targets


def aggregated_status(binding: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """status.aggregatedStatus items by clusterName."""
    items: dict[str, Mapping[str, Any]] = {}
    for item in as_list(status(binding).get("aggregatedStatus")):
        item = _mapping(item)
        name = item.get("clusterName")
        if isinstance(name, str) and name:
            items[name] = item
    return items


def health_of(item: Mapping[str, Any] | None) -> str:
    """Healthy, Unhealthy or Unknown; a missing item or a value outside the enum is Unknown."""
    health = (item or {}).get("health")
    return health if health in (HEALTHY, UNHEALTHY) else UNKNOWN


def eviction_tasks(binding: Mapping[str, Any]) -> list[dict[str, Any]]:
    """spec.gracefulEvictionTasks, each a mapping with a string fromCluster (others are dropped from view)."""
    return [
        dict(task)
        for task in as_list(spec(binding).get("gracefulEvictionTasks"))
        if isinstance(task, dict) and isinstance(task.get("fromCluster"), str)
    ]


def purge_mode(task: Mapping[str, Any]) -> PurgeMode | None:
    """The task's purgeMode, legacy names included; None when absent or not one of Karmada's."""
    try:
        return PurgeMode(task.get("purgeMode"))
    except ValueError:
        return None


def is_directly(task: Mapping[str, Any]) -> bool:
    """The task purges Directly (or Immediately): since v1.15 Karmada creates the new copy only once the old one is
    deleted (`pkg/controllers/binding/binding_controller.go` `checkDirectPurgeOrphanWorks`)."""
    mode = purge_mode(task)
    return mode is not None and mode.is_directly


def is_cluster_failover_task(task: Mapping[str, Any]) -> bool:
    """A task of Karmada's taint manager (cluster failover), as opposed to application failover or ours."""
    return task.get("producer") == PRODUCER_TAINT_MANAGER or task.get("reason") == REASON_TAINT_UNTOLERATED


# The producers and reasons of the failovers Karmada and the relay write tasks for (v1.19's
# pkg/apis/work/v1alpha2/well_known_constants.go, and our planned moves: failback, drain, rebalance, drill).
FAILOVER_PRODUCERS = frozenset(
    (
        PRODUCER_TAINT_MANAGER,
        PRODUCER_RB_APPLICATION_FAILOVER,
        PRODUCER_CRB_APPLICATION_FAILOVER,
        *PLANNED_MOVE_PRODUCERS,
    )
)
FAILOVER_REASONS = frozenset((REASON_TAINT_UNTOLERATED, REASON_APPLICATION_FAILURE, *PLANNED_MOVE_REASONS))


def is_failover_task(task: Mapping[str, Any]) -> bool:
    """A task of a failover (the taint manager's, application failover's, our failback's). Any other producer and
    reason (Karmada PR #7832's `Scheduler` / `BindingPreempted`) passes through: graceful eviction ends it by Karmada's
    rules alone and no state is carried for it but what the task itself preserved (docs/design.md, "Eviction tasks
    of other producers")."""
    return task.get("producer") in FAILOVER_PRODUCERS or task.get("reason") in FAILOVER_REASONS


def passing_through(binding: Mapping[str, Any]) -> set[str]:
    """The clusters the binding's pass-through tasks (not `is_failover_task`) evict from."""
    return {task["fromCluster"] for task in eviction_tasks(binding) if not is_failover_task(task)}


def scheduled_for_generation(binding: Mapping[str, Any]) -> bool:
    """The scheduler has acted on the binding's current spec (status.schedulerObservedGeneration == generation)."""
    generation = metadata(binding).get("generation")
    observed = status(binding).get("schedulerObservedGeneration")
    return isinstance(generation, int) and generation == observed


def application_failover(binding: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """spec.failover.application, which Karmada copies from the policy into the binding; None when absent."""
    application = _mapping(spec(binding).get("failover")).get("application")
    return application if isinstance(application, dict) else None


def cluster_failover(binding: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """spec.failover.cluster, the same copy of the policy's cluster failover; None when absent."""
    section = _mapping(spec(binding).get("failover")).get("cluster")
    return section if isinstance(section, dict) else None


def workload_reference(binding: Mapping[str, Any]) -> dict[str, str] | None:
    """spec.resource as a WorkloadRebalancer workload entry (apiVersion, kind, name[, namespace])."""
    resource = _mapping(spec(binding).get("resource"))
    fields: dict[str, Any] = {key: resource.get(key) for key in ("apiVersion", "kind", "name", "namespace")}
    if not all(isinstance(fields[key], str) and fields[key] for key in ("apiVersion", "kind", "name")):
        return None
    reference = {key: fields[key] for key in ("apiVersion", "kind", "name")}
    if isinstance(fields["namespace"], str) and fields["namespace"]:
        reference["namespace"] = fields["namespace"]
    return reference
