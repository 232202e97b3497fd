"""Failback: when a cluster that workloads were evicted from has recovered, spread them back with a rebalancer.

Karmada never moves a workload back by itself: a WorkloadRebalancer has to be created by hand (docs/design.md,
"Failback"; karmada#6774). This decision creates one, for one Cluster at a time:

- the cluster has recovered: Ready=True and no NoExecute taint. The recovery time is the later of the Ready
  condition's lastTransitionTime and the moment the loop saw a NoExecute taint go away (kept in the Cluster
  annotation `RECOVERY_ANNOTATION`, since a removed taint leaves no trace);
- it has stayed so for `DecisionSettings.failback_settle`;
- the affected workloads are bindings that no longer target the cluster, whose eviction from it (or a failover
  whose `clustersBeforeFailover` named it) started before the recovery, that have no eviction task from the cluster
  any more (Karmada's scheduler keeps a workload off a cluster it is still being evicted from), and that opted in:
  `DecisionSettings.failback_enabled`, or their (Cluster)PropagationPolicy annotated `FAILBACK_ANNOTATION: "true"`
  (`"false"` opts a policy out of a global opt-in);
- the WorkloadRebalancer's name is derived from the cluster, the recovery time and the affected bindings, and is
  recorded on the Cluster, so the same recovery never creates a second one. An application failure on a cluster that
  stayed Ready is not a recovery and never fails back (the cluster's Ready transition predates the eviction).

How a workload moves back depends on its placement, because a WorkloadRebalancer alone neither carries state (it
writes no eviction task, so nothing preserves the job id) nor moves a single-cluster placement (Karmada's
`ClusterLocality` score keeps the current cluster,
`pkg/scheduler/framework/plugins/clusterlocality/cluster_locality.go`):

- a single-cluster placement (spread `maxGroups: 1`, or every affinity naming one cluster) is moved by an eviction of
  its current cluster, exactly as a failover, written once its copy stopped with a savepoint where a member relay
  watches that cluster (a planned move, failover/moves/handoff.py): `purgeMode: Directly` (the old copy is
  deleted before the new one is created, never two copies), `preservedLabelState` from the current copy's last
  healthy report (`failover.state.last_state`), `clustersBeforeFailover: [current]`. The scheduler then never picks
  the evicted cluster (its ClusterEviction filter) and scores every other cluster 0 for locality, so ties go by name
  (`pkg/scheduler/core/spreadconstraint/util.go` `sortClusters`). With ordered `clusterAffinities` the binding is
  also stamped `rescheduleTriggeredAt`, so the scheduler starts again from the first affinity term
  (`scheduler.go` `scheduleResourceBindingWithClusterAffinities`). The eviction is written only when that choice is
  the recovered cluster; otherwise a Warning `FailbackNotPossible` says why and the recovery is marked handled;
- every other placement (replicas spread over several clusters) gets the WorkloadRebalancer, whose fresh replica
  assignment spreads the replicas back.

At most `DecisionSettings.failback_max_in_flight` such evictions are under way at once (counted over every binding);
the others wait for a later pass.

The caller creates `rebalancer` (AlreadyExists counts as done), then applies `binding_patches` (they clear the
evicted-from records the failback handles; each written on the binding's version it was decided on), then
`cluster_patch`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from failover.core import binding as b
from failover.core import cluster as c
from failover.core.annotations import format_time, parse_time, read_json_annotation, write_time_annotation
from failover.core.api import (
    CLUSTER_PROPAGATION_POLICY,
    CLUSTER_PROPAGATION_POLICY_NAME_ANNOTATION,
    FAILBACK_ANNOTATION,
    PROPAGATION_POLICY,
    PROPAGATION_POLICY_NAME_ANNOTATION,
    PROPAGATION_POLICY_NAMESPACE_ANNOTATION,
    REASON_FAILBACK,
    WORKLOAD_REBALANCER,
    WORKLOAD_REBALANCERS,
)
from failover.core.decision import NORMAL, WARNING, BindingPatch, Event, clip_message, earliest
from failover.core.labels import label_value_problems
from failover.core.loop_settings import DecisionSettings
from failover.core.names import ObjectRef, is_dns_label
from failover.core.placement import clusters_by_name_only, placement_is_single_cluster
from failover.fence.control_plane import DEFAULT_POLL
from failover.moves.cluster_drain import is_drained
from failover.moves.handoff import (
    HANDOFF_ANNOTATION,
    Handoff,
    handoff_in_flight,
    move_eviction,
    moved_without_handoff,
    planned_move_in_flight,
    start_handoff,
)
from failover.reconcile.graceful_eviction import EVICTED_FROM_ANNOTATION, evicted_from

EVENT_FAILBACK_NOT_POSSIBLE = "FailbackNotPossible"
# How often to look again when failback evictions were held back by failback_max_in_flight or another move of the
# workload: a move ends in its binding's pipeline, which does not queue the Cluster (as DRAIN_RETRY).
IN_FLIGHT_RETRY = DEFAULT_POLL
RECOVERY_ANNOTATION = "failover-relay.io/recovery"
FAILBACK_CLUSTER_LABEL = "failover-relay.io/failback-cluster"
EVENT_FAILBACK = "FailbackTriggered"


@dataclass(frozen=True)
class FailbackDecision:
    """What to do for one Cluster.

    `rebalancer`: a WorkloadRebalancer object to create, or None. `binding_patches`: merge patches for the bindings
    it covers. `cluster_patch`: merge patch for the Cluster's metadata.annotations, None when unchanged.
    `requeue_after`: when the settle time runs out.
    """

    rebalancer: Mapping[str, Any] | None = None
    binding_patches: tuple[BindingPatch, ...] = ()
    cluster_patch: Mapping[str, Any] | None = None
    events: tuple[Event, ...] = ()
    requeue_after: timedelta | None = None


def decide_failback(
    cluster: Mapping[str, Any],
    bindings: Iterable[Mapping[str, Any]],
    policies: Iterable[Mapping[str, Any]],
    settings: DecisionSettings,
    now: datetime,
    clusters: Mapping[str, Mapping[str, Any]] | None = None,
    works_of: Callable[[Mapping[str, Any]], Iterable[Mapping[str, Any]]] | None = None,
    watched: frozenset[str] | None = None,
) -> FailbackDecision:
    """Decide failback for `cluster` (a cluster.karmada.io/v1alpha1 Cluster) over all ResourceBindings and
    ClusterResourceBindings, with the PropagationPolicies and ClusterPropagationPolicies that made them, and every
    Cluster by name (to predict the scheduler's choice; None: every cluster is schedulable). `works_of`: a binding's
    Works; `watched`: the clusters a member relay watches with the storage fence on, from which a workload is moved
    by savepoint handoff (without `works_of`, none is)."""
    if not isinstance(cluster, dict):
        return FailbackDecision()
    name = b.metadata(cluster).get("name")
    if not isinstance(name, str) or not name:
        return FailbackDecision()
    record = _read_record(b.annotations(cluster).get(RECOVERY_ANNOTATION))
    recovery = _recovery(cluster, record, settings, now)
    if isinstance(recovery, FailbackDecision):
        return recovery
    new_record, recovered = recovery
    bindings = [binding for binding in bindings if isinstance(binding, dict)]
    affected = _affected_workloads(bindings, name, recovered, policies, settings)
    if not affected:
        return FailbackDecision(cluster_patch=_record_patch(record, new_record))
    plan = _FailbackPlan(name, recovered, settings, now)
    room = settings.failback_max_in_flight - sum(1 for binding in bindings if planned_move_in_flight(binding))
    for binding, workload in affected:
        if handoff_in_flight(binding):
            plan.held_back += 1  # another planned move of it (a drain) is under way: one move at a time
            continue
        route, detail = failback_route(binding, name, _schedulable(clusters, name))
        if route == REBALANCE:
            plan.rebalanced.append((binding, workload))
        elif route == EVICT and room <= 0:
            plan.held_back += 1
        elif route == EVICT:
            room -= 1
            works = works_of(binding) if works_of is not None else ()
            plan.move_back(binding, detail, works, None if watched is None else detail in watched)
        else:
            plan.refuse(binding, detail)
    rebalancer = plan.rebalance(new_record)
    return FailbackDecision(
        rebalancer=rebalancer,
        binding_patches=tuple(plan.patches),
        cluster_patch=_record_patch(record, new_record),
        events=tuple(plan.events),
        # A handoff just begun goes on in its binding's pipeline (decide_handoff): its fence record, its
        # acknowledgement.
        requeue_after=earliest(IN_FLIGHT_RETRY if plan.held_back else None, DEFAULT_POLL if plan.handed_off else None),
    )


def _recovery(
    cluster: Mapping[str, Any], record: Mapping[str, Any], settings: DecisionSettings, now: datetime
) -> tuple[dict[str, Any], datetime] | FailbackDecision:
    """When `cluster` recovered and the record that keeps it, once it has settled; else the decision that records
    it down, or not yet settled."""
    ready_since = _ready_since(cluster)
    # A drained cluster (failover/moves/cluster_drain.py) is down for failback: its workloads come home when
    # undrained.
    if ready_since is None or c.has_taint(cluster) or is_drained(cluster):
        down = {"downSeenAt": record.get("downSeenAt") or format_time(now)}
        return FailbackDecision(cluster_patch=_record_patch(record, down))
    new_record = dict(record)
    if "downSeenAt" in record and "recoveredSince" not in record:
        new_record["recoveredSince"] = format_time(now)  # the taint (or readiness) loss we saw is over
    recovered = max(filter(None, (ready_since, parse_time(new_record.get("recoveredSince")))))
    settled_at = recovered + settings.failback_settle
    if now < settled_at:
        return FailbackDecision(cluster_patch=_record_patch(record, new_record), requeue_after=settled_at - now)
    return new_record, recovered


def _affected_workloads(
    bindings: Iterable[Mapping[str, Any]],
    name: str,
    recovered: datetime,
    policies: Iterable[Mapping[str, Any]],
    settings: DecisionSettings,
) -> list[tuple[Mapping[str, Any], dict[str, str]]]:
    """The bindings evicted from `name` before it recovered whose policy opted in to failback, with their workload."""
    policy_index = _index_policies(policies)
    affected = []
    for binding in bindings:
        if _affected(binding, name, recovered) and _opted_in(binding, policy_index, settings):
            workload = b.workload_reference(binding)
            if workload is not None:
                affected.append((binding, workload))
    return affected


def _schedulable(clusters: Mapping[str, Mapping[str, Any]] | None, name: str) -> set[str] | None:
    if clusters is None:
        return None
    return {cluster_name for cluster_name, obj in clusters.items() if c.is_schedulable(obj)} | {name}


@dataclass
class _FailbackPlan:
    """What one failback of cluster `name` writes, decided workload by workload."""

    name: str
    recovered: datetime
    settings: DecisionSettings
    now: datetime
    patches: list[BindingPatch] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    rebalanced: list[tuple[Mapping[str, Any], dict[str, str]]] = field(default_factory=list)
    held_back: int = 0
    handed_off: int = 0

    def move_back(
        self, binding: Mapping[str, Any], current: str, works: Iterable[Mapping[str, Any]], watched: bool | None
    ) -> None:
        """Move `binding`'s workload back off `current`: by savepoint handoff where a member relay can stop its copy,
        else by the eviction at once, from the newest completed checkpoint."""
        name, recovered, now = self.name, format_time(self.recovered), self.now
        patch: dict[str, Any] = {"metadata": {"annotations": _forget_eviction(binding, name)}}
        started = start_handoff(binding, works, current, name, REASON_FAILBACK, watched, now)
        if isinstance(started, Handoff):
            patch["metadata"]["annotations"][HANDOFF_ANNOTATION] = started.annotation()
            self.handed_off += 1
            message = (
                f"cluster {name} recovered at {recovered}; stopping the copy on {current} with a"
                f" savepoint, then it moves back to {name} and restores from it"
            )
        else:
            fallback = moved_without_handoff(REASON_FAILBACK, current, name, started, now)
            patch["metadata"]["annotations"][HANDOFF_ANNOTATION] = fallback.annotation()
            patch["spec"] = move_eviction(binding, current, REASON_FAILBACK, self.settings, now)
            message = (
                f"cluster {name} recovered at {recovered}; evicted the workload from {current} so"
                f" that it moves back to {name} with its newest completed checkpoint, not a savepoint: {started}"
            )
        self.events.append(Event(NORMAL, EVENT_FAILBACK, clip_message(message), b.object_ref(binding)))
        self.patches.append(b.patch_on(binding, patch))

    def refuse(self, binding: Mapping[str, Any], why: str) -> None:
        """Say why `binding`'s workload is not moved back, and forget the eviction the failback handled."""
        message = clip_message(f"cluster {self.name} recovered, but this workload is not moved back: {why}")
        self.events.append(Event(WARNING, EVENT_FAILBACK_NOT_POSSIBLE, message, b.object_ref(binding)))
        self.patches.append(b.patch_on(binding, {"metadata": {"annotations": _forget_eviction(binding, self.name)}}))

    def rebalance(self, record: dict[str, Any]) -> dict[str, Any] | None:
        """The WorkloadRebalancer that spreads the rebalanced workloads back, once per recovery (`record` keeps its
        name), and the evicted-from records it handles forgotten."""
        if not self.rebalanced:
            return None
        name = self.name
        rebalancer_name = _rebalancer_name(name, self.recovered, [b.object_ref(one) for one, _ in self.rebalanced])
        if record.get("rebalancer") == rebalancer_name:
            return None
        record["rebalancer"] = rebalancer_name
        rebalancer = _rebalancer(name, rebalancer_name, [workload for _, workload in self.rebalanced], self.settings)
        for binding, _ in self.rebalanced:
            if name in evicted_from(binding):
                forget = {"metadata": {"annotations": _forget_eviction(binding, name)}}
                self.patches.append(b.patch_on(binding, forget))
        message = (
            f"cluster {name} recovered at {format_time(self.recovered)}; WorkloadRebalancer {rebalancer_name} spreads"
            f" {len(rebalancer['spec']['workloads'])} workload(s) back"
        )
        self.events.append(Event(NORMAL, EVENT_FAILBACK, message))
        return rebalancer


EVICT = "evict"
REBALANCE = "rebalance"
REFUSE = "refuse"


def failback_route(binding: Mapping[str, Any], recovered: str, schedulable: set[str] | None = None) -> tuple[str, str]:
    """How the workload of `binding` can move back to `recovered`: (EVICT, current cluster), (REBALANCE, "") or
    (REFUSE, why). `schedulable`: the clusters the scheduler may pick (None: every cluster)."""
    placement = b.spec(binding).get("placement")
    targets = b.target_clusters(binding)
    if not placement_is_single_cluster(placement) or len(targets) != 1:
        return REBALANCE, ""
    current = targets[0].name
    evicting = {task["fromCluster"] for task in b.eviction_tasks(binding)}

    def choice(names: list[str]) -> str | None:
        candidates = sorted(
            n for n in names if n != current and n not in evicting and (schedulable is None or n in schedulable)
        )
        return candidates[0] if candidates else None

    affinities = placement.get("clusterAffinities") if isinstance(placement, dict) else None
    if isinstance(affinities, list) and affinities:
        for term in affinities:
            names = clusters_by_name_only(term)
            if names is None:
                return REFUSE, (
                    "an affinity term selects clusters by label, field or overflow, so the scheduler's"
                    " choice is unknown"
                )
            picked = choice(names)
            if picked is not None:
                if picked == recovered:
                    return EVICT, current
                return REFUSE, (
                    f"the scheduler would pick {picked} (affinity term "
                    f"{term.get('affinityName') if isinstance(term, dict) else ''!s}) before {recovered}"
                )
        return REFUSE, f"no affinity term leaves a cluster other than {current}"
    names = clusters_by_name_only(placement.get("clusterAffinity") if isinstance(placement, dict) else None)
    if names is None:
        return REFUSE, (
            "the placement selects clusters by label or field (or not at all), so the scheduler's choice"
            " is unknown; list clusterNames, or use ordered clusterAffinities"
        )
    picked = choice(names)
    if picked != recovered:
        return REFUSE, (
            f"with clusterAffinity the scheduler breaks the tie by name and would pick {picked}; use"
            f" ordered clusterAffinities with {recovered} in the first term"
        )
    return EVICT, current


def _forget_eviction(binding: Mapping[str, Any], cluster: str) -> dict[str, Any]:
    record = evicted_from(binding)
    record.pop(cluster, None)
    return {EVICTED_FROM_ANNOTATION: write_time_annotation(record)}


def _rebalancer(cluster: str, name: str, workloads: list[dict[str, str]], settings: DecisionSettings) -> dict[str, Any]:
    unique = sorted(
        {json.dumps(w, sort_keys=True): w for w in workloads}.values(),
        key=lambda w: (w["apiVersion"], w["kind"], w.get("namespace", ""), w["name"]),
    )
    rebalancer: dict[str, Any] = {
        "apiVersion": WORKLOAD_REBALANCERS.api_version,
        "kind": WORKLOAD_REBALANCER.kind,
        "metadata": {"name": name},
        "spec": {"workloads": unique},
    }
    if not label_value_problems(cluster):
        rebalancer["metadata"]["labels"] = {FAILBACK_CLUSTER_LABEL: cluster}
    if settings.failback_rebalancer_ttl_seconds is not None:
        rebalancer["spec"]["ttlSecondsAfterFinished"] = settings.failback_rebalancer_ttl_seconds
    return rebalancer


def _ready_since(cluster: Mapping[str, Any]) -> datetime | None:
    """When the Ready condition last turned True; None when the cluster is not Ready."""
    if not c.is_ready(cluster):
        return None
    # A Ready condition without a transition time counts as ready since the epoch: it is ready, and no eviction can be
    # proven to predate it, so only a recorded taint removal makes it a recovery.
    return c.reachability(cluster).since or datetime.min.replace(tzinfo=UTC)


def _affected(binding: Mapping[str, Any], cluster: str, recovered: datetime) -> bool:
    """The workload left `cluster` in an eviction or failover that started before the recovery, and is not back."""
    if any(target.name == cluster for target in b.target_clusters(binding)):
        return False
    tasks = b.eviction_tasks(binding)
    if any(task["fromCluster"] == cluster for task in tasks):
        return False  # still being evicted from it: the scheduler would not place it there anyway
    started = [evicted_from(binding).get(cluster)]
    for task in tasks:
        before = task.get("clustersBeforeFailover")
        if isinstance(before, list) and cluster in before:
            started.append(parse_time(task.get("creationTimestamp")))
    return any(moment is not None and moment < recovered for moment in started)


def _index_policies(policies: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str, str], Mapping[str, Any]]:
    index: dict[tuple[str, str, str], Mapping[str, Any]] = {}
    for policy in policies:
        if isinstance(policy, dict):
            ref = b.object_ref(policy)
            index[(ref.kind, ref.namespace, ref.name)] = policy
    return index


def _opted_in(
    binding: Mapping[str, Any], policies: Mapping[tuple[str, str, str], Mapping[str, Any]], settings: DecisionSettings
) -> bool:
    notes = {key: value for key, value in b.annotations(binding).items() if isinstance(value, str)}
    cluster_policy = notes.get(CLUSTER_PROPAGATION_POLICY_NAME_ANNOTATION)
    if cluster_policy:
        policy = policies.get((CLUSTER_PROPAGATION_POLICY.kind, "", cluster_policy))
    else:
        namespace = notes.get(PROPAGATION_POLICY_NAMESPACE_ANNOTATION) or b.object_ref(binding).namespace
        policy = policies.get((PROPAGATION_POLICY.kind, namespace, notes.get(PROPAGATION_POLICY_NAME_ANNOTATION, "")))
    choice = b.annotations(policy).get(FAILBACK_ANNOTATION) if policy is not None else None
    if choice == "true":
        return True
    if choice == "false":
        return False
    return settings.failback_enabled


def _rebalancer_name(cluster: str, recovered: datetime, bindings: list[ObjectRef]) -> str:
    """Deterministic per (cluster, recovery, bindings): the same recovery yields the same name."""
    identity = json.dumps([cluster, format_time(recovered), sorted(str(ref) for ref in bindings)])
    digest = hashlib.sha256(identity.encode()).hexdigest()[:10]
    # Cluster names are DNS labels in Karmada; anything else is hashed away rather than put into a name.
    safe = cluster if is_dns_label(cluster) else "cluster"
    return f"failback-{safe}-{digest}"


def _read_record(raw: Any) -> dict[str, str]:
    return {
        key: value
        for key, value in read_json_annotation(raw).items()
        if key in ("downSeenAt", "recoveredSince", "rebalancer") and isinstance(value, str)
    }


def _record_patch(old: Mapping[str, str], new: Mapping[str, str]) -> Mapping[str, Any] | None:
    if dict(old) == dict(new):
        return None
    value = json.dumps(dict(sorted(new.items())), separators=(",", ":")) if new else None
    return {"metadata": {"annotations": {RECOVERY_ANNOTATION: value}}}
