"""The old Works a Directly eviction waits on, and when the timer fence may release one: the one statement both fences
(the timer's, `old_copy`, and the storage fence's, `control_plane`) decide from, so they cannot drift apart.

Since v1.15 Karmada's binding controller creates the new Work of a Directly-purged workload only after the old Work
is deleted (`pkg/controllers/binding/binding_controller.go` `checkDirectPurgeOrphanWorks`), and the execution
controller keeps the old Work (its finalizer) until the copy is deleted from the member cluster
(`pkg/controllers/execution/execution_controller.go` `handleWorkDelete`). A held Work on a cluster that is not
Ready therefore waits for as long as that cluster is unreachable.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from failover.core import binding as b
from failover.core import cluster as c
from failover.core import work as w
from failover.core.loop_settings import DecisionSettings


@dataclass(frozen=True)
class HeldWork:
    """An old Work of the binding on the cluster of a Directly eviction task: Karmada is deleting it, and the
    execution controller's finalizer holds it until its copy is deleted from `cluster`."""

    cluster: str
    work: Mapping[str, Any]
    reach: c.Reachability
    pull: bool  # the cluster is in Pull mode: its agent, not the cluster proxy, deletes the copy

    @property
    def waits(self) -> bool:
        """The new copy waits on a cluster that is not Ready: only a fence (or the cluster's return) ends it."""
        return not self.reach.ready


def held_works(
    binding: Mapping[str, Any], works: Iterable[Mapping[str, Any]], clusters: Mapping[str, Mapping[str, Any]]
) -> list[HeldWork]:
    """The binding's held Works on the clusters of its Directly eviction tasks, in the tasks' order."""
    held = [work for work in works if isinstance(work, dict) and w.is_held(work)]
    found = []
    for cluster in dict.fromkeys(task["fromCluster"] for task in b.eviction_tasks(binding) if b.is_directly(task)):
        reach, pull = c.reachability(clusters.get(cluster)), c.is_pull(clusters.get(cluster))
        found += [HeldWork(cluster, work, reach, pull) for work in held if w.work_cluster(work) == cluster]
    return found


def fence_time(reach: c.Reachability, settings: DecisionSettings, now: datetime) -> datetime | None:
    """When the timer fence may release a Work waiting on a cluster of this reachability: `fence_after` from its
    Ready transition (from now when that is unknown); None when it never may (fencing off, or a NoExecute taint
    required and absent)."""
    if not settings.fences or (settings.fence_needs_no_execute_taint and not reach.no_execute):
        return None
    return (reach.since or now) + settings.fence_after
