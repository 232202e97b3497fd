"""Failback: when a cluster that workloads were evicted from has recovered, spread them back with a rebalancer.

Karmada never moves a workload back by itself: a WorkloadRebalancer has to be created by hand (reference sections
3.5 and 8, issue #6774). This decision creates one, for one Cluster at a time:

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

The caller creates `rebalancer` (AlreadyExists counts as done), then applies `binding_patches` (they clear the
evicted-from records the rebalancer handles), then `cluster_patch`.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Iterable, Mapping

from failover import binding as b
from failover.api import (
    CLUSTER_PROPAGATION_POLICY,
    CLUSTER_PROPAGATION_POLICY_NAME_ANNOTATION,
    PROPAGATION_POLICY,
    PROPAGATION_POLICY_NAME_ANNOTATION,
    PROPAGATION_POLICY_NAMESPACE_ANNOTATION,
    WORKLOAD_REBALANCER,
    WORKLOAD_REBALANCERS,
)
from failover.decision import (
    NORMAL,
    BindingPatch,
    DecisionSettings,
    Event,
    ObjectRef,
    format_time,
    parse_time,
    read_json_annotation,
    write_time_annotation,
)
from failover.graceful_eviction import EVICTED_FROM_ANNOTATION, evicted_from
from failover.labels import label_value_problems

FAILBACK_ANNOTATION = "failover-relay.io/failback"
RECOVERY_ANNOTATION = "failover-relay.io/recovery"
FAILBACK_CLUSTER_LABEL = "failover-relay.io/failback-cluster"
EVENT_FAILBACK = "FailbackTriggered"
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z")
NO_EXECUTE = "NoExecute"


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


def decide_failback(cluster: Mapping[str, Any], bindings: Iterable[Mapping[str, Any]],
                    policies: Iterable[Mapping[str, Any]], settings: DecisionSettings,
                    now: datetime) -> FailbackDecision:
    """Decide failback for `cluster` (a cluster.karmada.io/v1alpha1 Cluster) over all ResourceBindings and
    ClusterResourceBindings, with the PropagationPolicies and ClusterPropagationPolicies that made them."""
    if not isinstance(cluster, dict):
        return FailbackDecision()
    name = b.metadata(cluster).get("name")
    if not isinstance(name, str) or not name:
        return FailbackDecision()
    record = _read_record(b.annotations(cluster).get(RECOVERY_ANNOTATION))
    ready_since = _ready_since(cluster)
    if ready_since is None or _has_no_execute_taint(cluster):
        down = {"downSeenAt": record.get("downSeenAt") or format_time(now)}
        return FailbackDecision(cluster_patch=_record_patch(record, down))

    new_record = dict(record)
    if "downSeenAt" in record and "recoveredSince" not in record:
        new_record["recoveredSince"] = format_time(now)  # the taint (or readiness) loss we saw is over
    recovered = max(filter(None, (ready_since, parse_time(new_record.get("recoveredSince")))))
    settled_at = recovered + settings.failback_settle
    if now < settled_at:
        return FailbackDecision(cluster_patch=_record_patch(record, new_record), requeue_after=settled_at - now)

    policy_index = _index_policies(policies)
    affected: list[tuple[Mapping[str, Any], dict[str, str]]] = []
    for binding in bindings:
        if isinstance(binding, dict) and _affected(binding, name, recovered) and _opted_in(
                binding, policy_index, settings):
            workload = b.workload_reference(binding)
            if workload is not None:
                affected.append((binding, workload))
    if not affected:
        return FailbackDecision(cluster_patch=_record_patch(record, new_record))

    rebalancer_name = _rebalancer_name(name, recovered, [b.object_ref(binding) for binding, _ in affected])
    if new_record.get("rebalancer") == rebalancer_name:
        return FailbackDecision(cluster_patch=_record_patch(record, new_record))
    new_record["rebalancer"] = rebalancer_name
    workloads = sorted({json.dumps(w, sort_keys=True): w for _, w in affected}.values(),
                       key=lambda w: (w["apiVersion"], w["kind"], w.get("namespace", ""), w["name"]))
    rebalancer: dict[str, Any] = {
        "apiVersion": WORKLOAD_REBALANCERS.api_version,
        "kind": WORKLOAD_REBALANCER.kind,
        "metadata": {"name": rebalancer_name},
        "spec": {"workloads": workloads},
    }
    if not label_value_problems(name):
        rebalancer["metadata"]["labels"] = {FAILBACK_CLUSTER_LABEL: name}
    if settings.failback_rebalancer_ttl_seconds is not None:
        rebalancer["spec"]["ttlSecondsAfterFinished"] = settings.failback_rebalancer_ttl_seconds
    binding_patches = []
    for binding, _ in affected:
        record_of_binding = evicted_from(binding)
        if record_of_binding.pop(name, None) is not None:
            binding_patches.append(BindingPatch(b.object_ref(binding), {"metadata": {"annotations": {
                EVICTED_FROM_ANNOTATION: write_time_annotation(record_of_binding)}}}))
    event = Event(NORMAL, EVENT_FAILBACK, f"cluster {name} recovered at {format_time(recovered)}; WorkloadRebalancer"
                  f" {rebalancer_name} spreads {len(workloads)} workload(s) back")
    return FailbackDecision(rebalancer=rebalancer, binding_patches=tuple(binding_patches),
                            cluster_patch=_record_patch(record, new_record), events=(event,))


def _ready_since(cluster: Mapping[str, Any]) -> datetime | None:
    """When the Ready condition last turned True; None when the cluster is not Ready."""
    conditions = b.status(cluster).get("conditions")
    for condition in conditions if isinstance(conditions, list) else ():
        if isinstance(condition, dict) and condition.get("type") == "Ready":
            if condition.get("status") != "True":
                return None
            # A Ready condition without a transition time counts as ready since the epoch: it is ready, and no
            # eviction can be proven to predate it, so only a recorded taint removal makes it a recovery.
            return parse_time(condition.get("lastTransitionTime")) or datetime.min.replace(tzinfo=timezone.utc)
    return None


def _has_no_execute_taint(cluster: Mapping[str, Any]) -> bool:
    taints = b.spec(cluster).get("taints")
    return any(isinstance(taint, dict) and taint.get("effect") == NO_EXECUTE
               for taint in (taints if isinstance(taints, list) else ()))


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
    index = {}
    for policy in policies:
        if isinstance(policy, dict):
            ref = b.object_ref(policy)
            index[(ref.kind, ref.namespace, ref.name)] = policy
    return index


def _opted_in(binding: Mapping[str, Any], policies: Mapping[tuple[str, str, str], Mapping[str, Any]],
              settings: DecisionSettings) -> bool:
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
    safe = cluster if _DNS_LABEL.match(cluster) else "cluster"
    return f"failback-{safe}-{digest}"


def _read_record(raw: Any) -> dict[str, str]:
    return {key: value for key, value in read_json_annotation(raw).items()
            if key in ("downSeenAt", "recoveredSince", "rebalancer") and isinstance(value, str)}


def _record_patch(old: Mapping[str, str], new: Mapping[str, str]) -> Mapping[str, Any] | None:
    if dict(old) == dict(new):
        return None
    value = json.dumps(dict(sorted(new.items())), separators=(",", ":")) if new else None
    return {"metadata": {"annotations": {RECOVERY_ANNOTATION: value}}}
