"""Tolerant reads of Karmada Clusters (cluster.karmada.io/v1alpha1, `pkg/apis/cluster/v1alpha1/types.go`): the Ready
condition, the taints and the sync mode, each read here once. A field of the wrong shape reads as absent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from failover.core import binding as b
from failover.core.annotations import parse_time

READY = "Ready"  # ClusterConditionReady
NO_EXECUTE = "NoExecute"  # the effect the taint manager evicts on (TaintEffectNoExecute)
NO_SCHEDULE = "NoSchedule"
SCHEDULING_EFFECTS = (NO_SCHEDULE, NO_EXECUTE)  # the effects the scheduler keeps an untolerating workload off for
PULL = "Pull"  # ClusterSyncMode: its karmada-agent applies its Works; the control plane does not reach it


@dataclass(frozen=True)
class Reachability:
    """What the loop knows of a cluster's reachability: Ready, since when the Ready condition has its status, and
    whether a NoExecute taint is on it. A cluster without a Ready condition is not Ready, since an unknown time."""

    ready: bool
    since: datetime | None
    no_execute: bool


def ready_condition(cluster: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The first `Ready` condition of status.conditions; None when there is none."""
    conditions = b.status(cluster).get("conditions")
    for condition in conditions if isinstance(conditions, list) else ():
        if isinstance(condition, dict) and condition.get("type") == READY:
            return condition
    return None


def is_ready(cluster: Mapping[str, Any] | None) -> bool:
    condition = ready_condition(cluster)
    return condition is not None and condition.get("status") == "True"


def taints(cluster: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    """spec.taints, each a mapping (others are dropped from view)."""
    found = b.spec(cluster).get("taints")
    return [taint for taint in found if isinstance(taint, dict)] if isinstance(found, list) else []


def has_taint(cluster: Mapping[str, Any] | None, effects: tuple[str, ...] = (NO_EXECUTE,)) -> bool:
    """A taint with one of `effects` is on the cluster (by default NoExecute)."""
    return any(taint.get("effect") in effects for taint in taints(cluster))


def is_schedulable(cluster: Mapping[str, Any] | None) -> bool:
    """The scheduler may place a workload there: Ready, and no taint it keeps an untolerating workload off for."""
    return is_ready(cluster) and not has_taint(cluster, SCHEDULING_EFFECTS)


def reachability(cluster: Mapping[str, Any] | None) -> Reachability:
    condition = ready_condition(cluster)
    since = parse_time(condition.get("lastTransitionTime")) if condition is not None else None
    return Reachability(is_ready(cluster), since, has_taint(cluster))


def is_pull(cluster: Mapping[str, Any] | None) -> bool:
    """The Cluster is in Pull mode (its agent applies its Works; the control plane does not reach it)."""
    return b.spec(cluster).get("syncMode") == PULL
