"""Never none: a workload is not failed over from the last cluster that can run it into no cluster at all.

Karmada's scheduler keeps a workload off every cluster it is still being evicted from
(`pkg/scheduler/framework/plugins/clustereviction/cluster_eviction.go` `Filter`), off clusters whose NoSchedule or
NoExecute taints the placement does not tolerate (`tainttoleration`; a cluster that is not Ready carries
`cluster.karmada.io/not-ready:NoSchedule`) and off clusters the placement's affinity does not name
(`clusteraffinity`). When application failover evicts a workload's only cluster while every other cluster is excluded
so, the scheduler finds nothing and leaves `spec.clusters` empty: the copy is purged and none is created anywhere
(copies slow to come up can be failed over member1 -> member2 -> member3 -> nowhere; karmada#7455).

So an eviction that would leave no target, when no other cluster can take the workload, is not made: the copy stays
where it is, Unhealthy but there, and the loop looks again every `RECHECK` (a Cluster turning Ready or an eviction task
ending elsewhere changes the answer). The caller reports it with a Warning `KeptOnLastCluster`, and a gauge by
`member_cluster` that an alert watches.

What is read of the placement is what can be known without evaluating a label or field selector: the clusters its
affinities name (`failover.core.placement.placement_clusters`); a placement without names lets every cluster count.
A selector that excludes a cluster therefore makes that cluster count as a taker: the eviction goes ahead as it does
in Karmada, never held back wrongly. Without the Clusters (the loop's cache not synced yet) only the names count.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import timedelta
from typing import Any

from failover.core import binding as b
from failover.core import cluster as c
from failover.core.placement import placement_clusters

EVENT_KEPT = "KeptOnLastCluster"
# A Cluster turning Ready does not change the binding, so nothing else would wake a held workload.
RECHECK = timedelta(seconds=30)


def why_not_takers(
    binding: Mapping[str, Any], clusters: Mapping[str, Mapping[str, Any]] | None, leaving: Collection[str]
) -> dict[str, str] | None:
    """None when evicting `leaving` leaves the workload somewhere to run: a target that stays, or a cluster the
    scheduler could pick. Otherwise why each other known cluster cannot take it (empty when none is known)."""
    targets = [target.name for target in b.target_clusters(binding)]
    if any(name not in leaving for name in targets):
        return None
    evicting = {task["fromCluster"] for task in b.eviction_tasks(binding)}
    placement = b.spec(binding).get("placement")
    named = placement_clusters(placement)
    known = set(clusters) if clusters is not None else set(named or ())
    if clusters is None and named is None:
        return None  # nothing known about the other clusters: Karmada's behaviour
    reasons: dict[str, str] = {}
    for name in sorted(known - set(targets) - set(leaving)):
        if named is not None and name not in named:
            continue  # not a cluster of this workload at all
        if name in evicting:
            reasons[name] = "still being evicted from"
        elif clusters is not None and (problem := _unschedulable(clusters[name], placement)):
            reasons[name] = problem
        else:
            return None
    return reasons


def kept_message(cluster: str, reasons: Mapping[str, str], toleration_seconds: int) -> str:
    others = "; ".join(f"{name} {why}" for name, why in reasons.items()) or "no other cluster in its placement"
    return (
        f"workload was Unhealthy on {cluster} for {toleration_seconds}s (tolerationSeconds) but no other cluster can"
        f" take it ({others}); kept on {cluster}, the last cluster it can run on, rather than evicted into none"
    )


def _unschedulable(cluster: Mapping[str, Any], placement: Any) -> str:
    """Why the scheduler would not pick `cluster` whatever the workload, "" when it might."""
    if not c.is_ready(cluster):
        return "not Ready"
    tolerations = placement.get("clusterTolerations") if isinstance(placement, dict) else None
    for taint in c.taints(cluster):
        if taint.get("effect") in c.SCHEDULING_EFFECTS and not _tolerated(taint, tolerations):
            return f"tainted {taint.get('key')}:{taint.get('effect')}"
    return ""


def _tolerated(taint: Mapping[str, Any], tolerations: Any) -> bool:
    """Kubernetes' `Toleration.ToleratesTaint` (k8s.io/api/core/v1/toleration.go), which Karmada's filter calls."""
    for toleration in tolerations if isinstance(tolerations, list) else ():
        if not isinstance(toleration, dict):
            continue
        if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
            continue
        if toleration.get("key") and toleration.get("key") != taint.get("key"):
            continue
        operator = toleration.get("operator") or "Equal"
        if operator == "Exists" or (operator == "Equal" and toleration.get("value", "") == taint.get("value", "")):
            return True
    return False
