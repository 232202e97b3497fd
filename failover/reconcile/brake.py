"""The brake: no new cluster failover while it is more likely the control plane that is cut off than the clusters.

Karmada evicts from every cluster it cannot see, at `--resource-eviction-rate`, which is its only protection against
its own partition: a control plane that loses the network to most members would otherwise evict everything at once.
A smarter brake was proposed (karmada#6777: an unhealthy-cluster threshold and a secondary rate, modelled on
Kubernetes' node lifecycle controller) and never shipped. Once the relay writes the evictions at the apiserver's pace
(failover/reconcile/cluster_eviction.py) the rate protects nothing, so the relay brakes as Kubernetes does: its node
lifecycle controller counts a zone as disrupted when at least `--unhealthy-zone-threshold` (0.55) of its nodes are
not Ready (`pkg/controller/nodelifecycle/node_lifecycle_controller.go` `ComputeZoneState`), and evicts from a fully
disrupted zone nothing at all.

Here the zone is the set of member clusters: the brake is on while at least two clusters are not Ready and they make at
least `threshold` of all clusters (`controllers.unhealthyClusterThreshold`, 0.55 as Kubernetes'). Kubernetes asks for
more than two nodes; members are few, and two of three going not Ready together is the partition the brake is for. A
single dead member is never braked, however few the members (one of two is 0.5). The brake is a function of the Clusters
alone, so a restart or a new leader finds it as it was. It comes off by itself when enough clusters are Ready again, or
for one cluster when an operator annotates it with `BRAKE_RELEASED_ANNOTATION` and a time at or after its Ready
condition's last transition (`kubectl annotate cluster NAME failover-relay.io/brake-released=$(date -u +%FT%TZ)`): their
word that this outage is the cluster's own.
The next outage of that cluster is braked again, with no annotation to clean up.

Clusters cut off together are not marked not Ready at the same moment (each is probed on its own timer), so an
eviction from a cluster that went not Ready less than the window ago (`controllers.brakeWindowSeconds`) waits for
the others to show (`settled_after`). A NoExecute taint on a Ready cluster (put there by hand) is no outage: it
neither counts nor waits.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from failover.core import binding as b
from failover.core.annotations import parse_time
from failover.core.cluster import is_ready, reachability

BRAKE_RELEASED_ANNOTATION = "failover-relay.io/brake-released"
# Fewer not-Ready clusters than this are a cluster's outage, never the control plane's.
LEAST_NOT_READY = 2

EVENT_BRAKED = "ClusterFailoverBraked"
EVENT_RELEASED = "ClusterFailoverBrakeReleased"


@dataclass(frozen=True)
class Brake:
    """Whether cluster failover is braked, and the clusters it is about."""

    engaged: bool
    not_ready: tuple[str, ...]  # sorted
    total: int
    threshold: float
    released: tuple[str, ...] = ()  # not-Ready clusters an operator released from the brake

    def holds(self, cluster: str) -> bool:
        """A new eviction from `cluster` waits."""
        return self.engaged and cluster not in self.released

    @property
    def share(self) -> float:
        return len(self.not_ready) / self.total if self.total else 0.0

    def message(self) -> str:
        """One line for an Event, a log line and `status`."""
        counted = f"{len(self.not_ready)} of {self.total} clusters not Ready ({', '.join(self.not_ready)})"
        if not self.engaged:
            return f"cluster failover runs: {counted}, under the brake's threshold {self.threshold:g}"
        released = f"; released by an operator: {', '.join(self.released)}" if self.released else ""
        return (
            f"cluster failover braked: {counted}, at least the threshold {self.threshold:g}; the control plane may be"
            f" the one cut off, so no new eviction is written until enough clusters are Ready again or an operator"
            f" annotates a cluster {BRAKE_RELEASED_ANNOTATION}=<now>{released}"
        )


OFF = Brake(False, (), 0, 1.0)  # no clusters known: nothing to brake


def brake(clusters: Mapping[str, Mapping[str, Any]], threshold: float) -> Brake:
    """The brake over every Cluster by name."""
    not_ready = tuple(sorted(name for name, cluster in clusters.items() if not is_ready(cluster)))
    engaged = len(not_ready) >= LEAST_NOT_READY and len(not_ready) >= threshold * len(clusters)
    released = tuple(name for name in not_ready if engaged and _released(clusters[name]))
    return Brake(engaged, not_ready, len(clusters), threshold, released)


def settled_after(cluster: Mapping[str, Any] | None, window: timedelta, now: datetime) -> timedelta:
    """How long until an eviction from `cluster` may be written: the rest of the window since it went not Ready;
    zero for a Ready cluster, or one whose transition time is not known."""
    seen = reachability(cluster)
    if seen.ready or seen.since is None:
        return timedelta(0)
    return max(seen.since + window - now, timedelta(0))


def _released(cluster: Mapping[str, Any]) -> bool:
    """An operator released the cluster from the brake since its Ready condition last changed."""
    at = parse_time(b.annotations(cluster).get(BRAKE_RELEASED_ANNOTATION))
    since = reachability(cluster).since
    return at is not None and (since is None or at >= since)
