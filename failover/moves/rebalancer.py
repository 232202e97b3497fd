"""WorkloadRebalancer (apps.karmada.io/v1alpha1): ask the scheduler to place the listed workloads from scratch.

Reference behaviour: Karmada's `pkg/controllers/workloadrebalancer/workloadrebalancer_controller.go` (docs/design.md,
"WorkloadRebalancer"), which this reproduces rule for rule:

- each workload's binding is named `<name>-<kind>` in lower case (':' in the name becomes '.'), a
  ResourceBinding in the workload's namespace, or a ClusterResourceBinding when the namespace is empty;
- a binding whose `spec.rescheduleTriggeredAt` is unset or older than the rebalancer's creationTimestamp gets that
  creationTimestamp (so a rebalancer acts once, and a newer one acts again);
- `status.observedWorkloads` records Successful, or Failed with reason ReferencedBindingNotFound;
- when `spec.workloads` changes: an added workload is rebalanced; a removed one stays in the status only if it
  was Successful; a modified one counts as removed plus added; a reordering changes nothing. The list is sorted by
  "apiVersion kind namespace name" and `observedGeneration` follows the rebalancer's generation;
- when the status changes and nothing is left to retry, `finishTime` is set to now;
- with `ttlSecondsAfterFinished` the rebalancer is deleted that many seconds after `finishTime`.

Where we differ (docs/design.md, "Planned moves"): a stateful single-cluster workload that the fresh reschedule would
move (`rebalance_move`) is handed over by savepoint instead of stamped, where a member relay watches its cluster; the
handoff's eviction stamps it later, and it counts as Successful at once.

The decision is pure: the caller reads the bindings it is told about (`referenced_bindings`), passes them in, and
writes back what the decision returns. See `decide_rebalance` for the order of the writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from failover.core import binding as b
from failover.core import cluster as c
from failover.core.annotations import format_time, parse_time
from failover.core.api import (
    CLUSTER_RESOURCE_BINDING,
    REASON_REBALANCE,
    REBALANCE_FAILED,
    REBALANCE_REFERENCED_BINDING_NOT_FOUND,
    REBALANCE_SUCCESSFUL,
    RESOURCE_BINDING,
)
from failover.core.decision import NORMAL, WARNING, BindingPatch, Event, clip_message, earliest
from failover.core.fields import is_int
from failover.core.loop_settings import DecisionSettings
from failover.core.names import ObjectRef
from failover.core.placement import clusters_by_name_only, placement_is_single_cluster
from failover.moves.handoff import HANDOFF_ANNOTATION, Handoff, handoff_in_flight, start_handoff
from failover.state.last_state import preservation_rules

WORKLOAD_FIELDS = ("apiVersion", "kind", "namespace", "name")

EVENT_RESCHEDULE_TRIGGERED = "RescheduleTriggered"
EVENT_BINDING_NOT_FOUND = REBALANCE_REFERENCED_BINDING_NOT_FOUND


@dataclass(frozen=True)
class RebalanceDecision:
    """What to write for one WorkloadRebalancer.

    `stamps`: merge patches for bindings, each on the binding's version it was decided on (apply first). `status_patch`:
    merge patch for the rebalancer's status subresource (`{"status": {...}}`), None when the status is unchanged.
    `delete`: delete the rebalancer now (with its resourceVersion as precondition), its TTL after finishTime has passed.
    `pending`: bindings that were not passed in (a read failed for another reason than NotFound) and are retried after
    `requeue_after`.
    """

    stamps: tuple[BindingPatch, ...] = ()
    status_patch: Mapping[str, Any] | None = None
    delete: bool = False
    pending: tuple[ObjectRef, ...] = ()
    events: tuple[Event, ...] = ()
    requeue_after: timedelta | None = None


def binding_name(kind: str, name: str) -> str:
    """Karmada's `names.GenerateBindingName`: `<name>-<kind>` lower-cased, ':' replaced by '.'."""
    return f"{name.replace(':', '.')}-{kind}".lower()


def binding_ref(workload: Mapping[str, Any]) -> ObjectRef | None:
    """The binding a workload entry refers to; None when the entry lacks a kind or a name."""
    kind, name, namespace = workload.get("kind"), workload.get("name"), workload.get("namespace") or ""
    if not (isinstance(kind, str) and kind and isinstance(name, str) and name and isinstance(namespace, str)):
        return None
    if namespace:
        return ObjectRef(RESOURCE_BINDING.kind, binding_name(kind, name), namespace)
    return ObjectRef(CLUSTER_RESOURCE_BINDING.kind, binding_name(kind, name))


def referenced_bindings(rebalancer: Mapping[str, Any]) -> tuple[ObjectRef, ...]:
    """The bindings the caller must read before `decide_rebalance`: those of entries not yet decided."""
    refs = []
    for entry in _observed_after_spec_change(rebalancer):
        ref = binding_ref(entry["workload"])
        if entry.get("result") not in (REBALANCE_SUCCESSFUL, REBALANCE_FAILED) and ref is not None:
            refs.append(ref)
    return tuple(dict.fromkeys(refs))


def decide_rebalance(
    rebalancer: Mapping[str, Any],
    bindings: Mapping[ObjectRef, Mapping[str, Any] | None],
    settings: DecisionSettings,
    now: datetime,
    clusters: Mapping[str, Mapping[str, Any]] | None = None,
    works_of: Callable[[Mapping[str, Any]], Iterable[Mapping[str, Any]]] | None = None,
    watched: frozenset[str] | None = None,
) -> RebalanceDecision:
    """Stamp the referenced bindings, record the results, finish and expire the rebalancer.

    A stateful single-cluster workload that the fresh reschedule would move (`rebalance_move`, from `clusters`) is
    handed over by savepoint instead of stamped, where a member relay watches its cluster (`watched`; its Works from
    `works_of`): its binding gets the handoff annotation (failover/moves/handoff.py), whose eviction later stamps
    it. Without `works_of` every binding is stamped, as Karmada does.

    `bindings` maps each ref of `referenced_bindings(rebalancer)` to the binding as read, or to None when the read
    answered NotFound; a ref left out could not be read and is retried. The caller then: applies `stamps` (a stamp
    answered with NotFound: decide again with that binding None, or Conflict: decide again on it read afresh; another
    failure: requeue without writing the status), writes `status_patch` through the status subresource, and deletes the
    rebalancer when `delete`. Deciding again after the stamps succeeded yields the same status and no stamps, so a crash
    in between is safe.
    """
    if not isinstance(rebalancer, dict) or b.is_deleting(rebalancer):
        return RebalanceDecision()
    meta = b.metadata(rebalancer)
    created_raw = meta.get("creationTimestamp")
    created = parse_time(created_raw)
    if created is None:
        return RebalanceDecision(
            events=(
                Event(
                    WARNING, "MissingCreationTimestamp", "rebalancer has no creationTimestamp to stamp bindings with"
                ),
            )
        )
    observed = _observed_after_spec_change(rebalancer)
    stamps: list[BindingPatch] = []
    pending: list[ObjectRef] = []
    events: list[Event] = []
    name = meta.get("name")
    name = name if isinstance(name, str) else ""
    for entry in observed:
        if entry.get("result") in (REBALANCE_SUCCESSFUL, REBALANCE_FAILED):
            continue
        ref = binding_ref(entry["workload"])
        if ref is None or (ref in bindings and bindings[ref] is None):
            entry["result"], entry["reason"] = REBALANCE_FAILED, REBALANCE_REFERENCED_BINDING_NOT_FOUND
            events.append(
                Event(
                    WARNING,
                    EVENT_BINDING_NOT_FOUND,
                    f"no binding {ref.name if ref else '(unnamed)'} for {_describe(entry['workload'])}",
                )
            )
            continue
        if ref not in bindings:
            pending.append(ref)
            continue
        binding = bindings[ref] or {}  # read: a binding that was not found is Failed above
        triggered = parse_time(b.spec(binding).get("rescheduleTriggeredAt"))
        if (triggered is None or created > triggered) and not handoff_in_flight(binding):
            stamp, event = _stamp(ref, binding, name, str(created_raw), clusters, works_of, watched, now)
            stamps.append(stamp)
            events.append(event)
        entry["result"] = REBALANCE_SUCCESSFUL

    status_patch, delete, requeue_after = _status_and_expiry(rebalancer, observed, pending, settings, now)
    return RebalanceDecision(
        stamps=tuple(stamps),
        status_patch=status_patch,
        delete=delete,
        pending=tuple(pending),
        events=tuple(events),
        requeue_after=requeue_after,
    )


def _stamp(
    ref: ObjectRef,
    binding: Mapping[str, Any],
    name: str,
    created: str,
    clusters: Mapping[str, Mapping[str, Any]] | None,
    works_of: Callable[[Mapping[str, Any]], Iterable[Mapping[str, Any]]] | None,
    watched: frozenset[str] | None,
    now: datetime,
) -> tuple[BindingPatch, Event]:
    """What rebalancer `name` (created at `created`) writes to one binding it names, on the version read: the
    handoff annotation where the fresh reschedule would move a stateful workload a member relay can stop, else
    Karmada's stamp, `rescheduleTriggeredAt`; and the Event that says which."""
    handoff = _handoff(binding, clusters, works_of, watched, now)
    if isinstance(handoff, Handoff):
        patch: dict[str, Any] = {"metadata": {"annotations": {HANDOFF_ANNOTATION: handoff.annotation()}}}
        message = (
            f"WorkloadRebalancer {name} moves the workload from {handoff.source} to {handoff.target}: its copy"
            " stops with a savepoint first, and the new one restores from it"
        )
    else:
        patch = {"spec": {"rescheduleTriggeredAt": created}}
        message = f"WorkloadRebalancer {name} asked the scheduler to place the workload afresh" + (
            f" (a move, not by savepoint: {handoff})" if handoff else ""
        )
    event = Event(NORMAL, EVENT_RESCHEDULE_TRIGGERED, clip_message(message), regarding=ref)
    return BindingPatch(ref, patch, b.resource_version(binding)), event


def _status_and_expiry(
    rebalancer: Mapping[str, Any],
    observed: list[dict[str, Any]],
    pending: list[ObjectRef],
    settings: DecisionSettings,
    now: datetime,
) -> tuple[dict[str, Any] | None, bool, timedelta | None]:
    """The status patch (None: unchanged; `finishTime` set when nothing is left to retry), whether the TTL after
    `finishTime` has passed, and when to look again."""
    old_status = b.status(rebalancer)
    generation = b.metadata(rebalancer).get("generation")
    new_core = {"observedWorkloads": observed, "observedGeneration": generation}
    old_core = {
        "observedWorkloads": [_normalized(item) for item in b.as_list(old_status.get("observedWorkloads"))],
        "observedGeneration": old_status.get("observedGeneration"),
    }
    finish_raw = old_status.get("finishTime")
    status_patch = None
    if new_core != old_core:
        if not pending:
            finish_raw = format_time(now)
        status: dict[str, Any] = {"observedWorkloads": observed}
        if isinstance(generation, int):
            status["observedGeneration"] = generation
        status["finishTime"] = finish_raw if finish_raw else None
        status_patch = {"status": status}
    delete, delays = False, [settings.rebalancer_retry if pending else None]
    ttl = b.spec(rebalancer).get("ttlSecondsAfterFinished")
    finished = parse_time(finish_raw)
    if is_int(ttl) and ttl >= 0 and finished is not None and not pending:
        expiry = finished + timedelta(seconds=ttl)
        if now >= expiry:
            delete = True
        else:
            delays.append(expiry - now)
    return status_patch, delete, earliest(*delays)


def _observed_after_spec_change(rebalancer: Mapping[str, Any]) -> list[dict[str, Any]]:
    """observedWorkloads brought in line with spec.workloads (Karmada's syncWorkloadsFromSpecToStatus)."""
    spec_workloads: dict[tuple[str, ...], dict[str, str]] = {}
    for workload in b.as_list(b.spec(rebalancer).get("workloads")):
        if isinstance(workload, dict):
            normalized = _workload(workload)
            spec_workloads.setdefault(_key(normalized), normalized)
    observed: list[dict[str, Any]] = []
    for item in b.as_list(b.status(rebalancer).get("observedWorkloads")):
        if not isinstance(item, dict) or not isinstance(item.get("workload"), Mapping):
            continue
        entry = _normalized(item)
        key = _key(entry["workload"])
        if key in spec_workloads:
            spec_workloads.pop(key)
            observed.append(entry)
        elif entry.get("result") == REBALANCE_SUCCESSFUL:
            observed.append(entry)  # removed from spec after it was done: the record stays
    observed.extend({"workload": workload} for workload in spec_workloads.values())
    observed.sort(key=lambda entry: " ".join(_key(entry["workload"])))
    return observed


def _workload(workload: Mapping[str, Any]) -> dict[str, str]:
    normalized = {
        field: workload[field] for field in WORKLOAD_FIELDS if isinstance(workload.get(field), str) and workload[field]
    }
    return normalized


def _key(workload: Mapping[str, str]) -> tuple[str, ...]:
    return tuple(workload.get(field, "") for field in WORKLOAD_FIELDS)


def _normalized(item: Mapping[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = {"workload": _workload(item.get("workload") or {})}
    for field in ("result", "reason"):
        if isinstance(item.get(field), str) and item[field]:
            entry[field] = item[field]
    return entry


def _describe(workload: Mapping[str, str]) -> str:
    where = f"{workload['namespace']}/" if workload.get("namespace") else ""
    return f"{workload.get('kind', '?')} {where}{workload.get('name', '?')}"


def rebalance_move(binding: Mapping[str, Any], clusters: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The cluster a fresh reschedule moves the binding's single-cluster workload to, or None when it stays (or the
    scheduler's choice cannot be told). Only ordered `clusterAffinities` move: the scheduler starts again from the
    first term (`scheduler.go` `scheduleResourceBindingWithClusterAffinities`) and takes the first that has a
    schedulable cluster; within it the current cluster wins (`ClusterLocality`), else ties go by name
    (`spreadconstraint/util.go` `sortClusters`). A flat `clusterAffinity` keeps the current cluster."""
    placement = b.spec(binding).get("placement")
    targets = b.target_clusters(binding)
    if not placement_is_single_cluster(placement) or len(targets) != 1 or not isinstance(placement, dict):
        return None
    current = targets[0].name
    affinities = placement.get("clusterAffinities")
    for term in affinities if isinstance(affinities, list) else ():
        names = clusters_by_name_only(term)
        if names is None:
            return None
        feasible = sorted(n for n in names if c.is_schedulable(clusters.get(n)))
        if current in feasible:
            return None
        if feasible:
            return feasible[0]
    return None


def _handoff(
    binding: Mapping[str, Any],
    clusters: Mapping[str, Mapping[str, Any]] | None,
    works_of: Callable[[Mapping[str, Any]], Iterable[Mapping[str, Any]]] | None,
    watched: frozenset[str] | None,
    now: datetime,
) -> Handoff | str:
    """The handoff of a stateful workload the rebalance moves; why not (a move without one); "" when nothing moves."""
    if works_of is None or clusters is None or not preservation_rules(binding):
        return ""
    target = rebalance_move(binding, clusters)
    if target is None:
        return ""
    source = b.target_clusters(binding)[0].name
    is_watched = None if watched is None else source in watched
    return start_handoff(binding, works_of(binding), source, target, REASON_REBALANCE, is_watched, now)
