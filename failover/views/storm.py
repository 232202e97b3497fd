"""Where each workload of a member cluster stands in its move away from it: the phases a storm is watched by.

A cluster that dies takes all of its workloads with it; each then goes through the same phases, and an operator
needs to see how many are in which (the metrics of `controllers/loop/loop_metrics.py`) and which ones
(`failover-relay status --cluster NAME`; docs/operations.md, "A storm: a cluster's workloads at once"). For one
binding and one cluster the phase is read from the binding and from whether a Work for that cluster still exists:

- `running`: the cluster is a target and the copy there is Healthy;
- `unhealthy`: a target whose copy is not Healthy (a toleration may be running);
- `releasing`: an eviction task from the cluster, and its old Work still there (Karmada deletes it, or the
  relay fences it on a cluster that is gone; with purgeMode Directly the new copy waits for this);
- `scheduling`: the old Work gone (or kept, Gracefully) and no target elsewhere for the current generation yet;
- `restoring`: targets elsewhere, not every one of them Healthy;
- `restored`: every new target Healthy while the task is still there (it ends on the next pass).

`releasing`, `scheduling` and `restoring` are the phases a workload waits in (`WAITING`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from failover.core import binding as b
from failover.core.annotations import parse_time

RUNNING = "running"
UNHEALTHY = "unhealthy"
RELEASING = "releasing"
SCHEDULING = "scheduling"
RESTORING = "restoring"
RESTORED = "restored"
WAITING = (RELEASING, SCHEDULING, RESTORING)
PHASES = (RUNNING, UNHEALTHY, *WAITING, RESTORED)


@dataclass(frozen=True)
class ClusterPhase:
    cluster: str
    phase: str
    since: datetime | None = None  # the eviction task's creationTimestamp (None for a target, or an unstamped task)
    reason: str = ""  # the task's reason


def phases(binding: Mapping[str, Any], work_clusters: Collection[str]) -> list[ClusterPhase]:
    """The phase of the workload on every cluster it runs on or is being evicted from, sorted by cluster.
    `work_clusters`: the clusters a Work of this binding exists for."""
    if not isinstance(binding, dict) or b.is_deleting(binding):
        return []
    health = b.aggregated_status(binding)
    targets = [target.name for target in b.target_clusters(binding)]
    found: dict[str, ClusterPhase] = {}
    tasks = {task["fromCluster"]: task for task in b.eviction_tasks(binding)}
    for cluster, task in tasks.items():
        since = parse_time(task.get("creationTimestamp"))
        reason = str(task.get("reason") or "")
        elsewhere = [name for name in targets if name != cluster]
        # With Directly the new copy waits for the old Work to go (Karmada v1.15+, `checkDirectPurgeOrphanWorks`);
        # Gracefully and Never keep the old copy beside the new one, so its Work is no phase of the move.
        if cluster in work_clusters and b.is_directly(task):
            phase = RELEASING
        elif not elsewhere or not b.scheduled_for_generation(binding):
            phase = SCHEDULING
        else:
            phase = RESTORED if restored_away_from(binding, cluster) else RESTORING
        found[cluster] = ClusterPhase(cluster, phase, since, reason)
    for cluster in targets:
        if cluster not in found:
            healthy = b.health_of(health.get(cluster)) == b.HEALTHY
            found[cluster] = ClusterPhase(cluster, RUNNING if healthy else UNHEALTHY)
    return [found[cluster] for cluster in sorted(found)]


def restored_away_from(binding: Mapping[str, Any], cluster: str) -> bool:
    """Scheduled for its generation onto clusters other than `cluster`, and every one of them Healthy."""
    health = b.aggregated_status(binding)
    elsewhere = [target.name for target in b.target_clusters(binding) if target.name != cluster]
    return (
        bool(elsewhere)
        and b.scheduled_for_generation(binding)
        and all(b.health_of(health.get(name)) == b.HEALTHY for name in elsewhere)
    )


def workload_phase_rows(
    bindings: Collection[Mapping[str, Any]], works: Mapping[tuple[str, str], Collection[str]], cluster: str
) -> list[dict[str, Any]]:
    """`status --cluster`: every workload `cluster` runs or is being evicted from, with its phase there.
    `works`: the clusters with a Work, by (binding kind, binding key)."""
    rows = []
    for binding in bindings:
        ref = b.object_ref(binding)
        key = f"{ref.namespace}/{ref.name}" if ref.namespace else ref.name
        for found in phases(binding, works.get((ref.kind, key), ())):
            if found.cluster != cluster:
                continue
            resource = b.spec(binding).get("resource")
            resource = resource if isinstance(resource, dict) else {}
            namespace, name = resource.get("namespace"), resource.get("name")
            rows.append(
                {
                    "workload": f"{resource.get('kind')}/{namespace}/{name}"
                    if namespace
                    else f"{resource.get('kind')}/{name}",
                    "binding": key,
                    "phase": found.phase,
                    "reason": found.reason or None,
                    "since": found.since.strftime("%Y-%m-%dT%H:%M:%SZ") if found.since else None,
                    "targets": [target.name for target in b.target_clusters(binding)],
                }
            )
    return sorted(rows, key=lambda row: (PHASES.index(row["phase"]), row["workload"]))
