"""Cluster failover's eviction tasks, written by the relay: the task Karmada's taint manager writes, at the apiserver's
pace, with the preserved state in the same write.

Reference behaviour: `pkg/controllers/cluster/taint_manager.go` (`syncBindingEviction`,
`needEvictionWithCurrentTime`) over `pkg/util/helper/taint.go` (`GetMatchingTolerations`,
`GetMinTolerationTimeWithCurrentTime`) and `ResourceBindingSpec.GracefulEvictCluster`
(`pkg/apis/work/v1alpha2/binding_types_helper.go`). A target cluster with NoExecute taints is left when one of them
is tolerated by none of the `clusterTolerations` of the binding's applied placement (the
`policy.karmada.io/applied-placement` annotation, not spec.placement), or when the earliest `timeAdded +
tolerationSeconds` of the tolerations used has come; a placement that tolerates them all without `tolerationSeconds`
stays. A binding without an applied placement is never evicted (Karmada's `needEviction` errs on it). The task is
Karmada's: `fromCluster`, the cluster failover's `purgeMode` (Gracefully when unset; the
`--no-execute-taint-eviction-purge-mode` setting for a binding without `failover.cluster`), reason
`TaintUntolerated`, producer `TaintManager` (which the graceful eviction and the scheduler key on), and the evicted
cluster's replicas; the cluster leaves spec.clusters in the same write. Where this differs:

- Pace. The taint manager's 3 workers each pause `1/--resource-eviction-rate` (2 s at the default 0.5): about 1.2-1.5
  bindings/s, 11 minutes of tasks for 1,000 jobs (karmada#7495; docs/operations.md, "A storm"). The relay writes a
  binding's task when it reconciles it, with the workers of every other decision.
- The preserved state is in the task, as `StatefulFailoverInjection` (alpha, off by default) would put it, but from
  the copy's last healthy report when the dead cluster's reflected status has none (failover/reconcile/
  cluster_failover.py `cluster_state`), with `clustersBeforeFailover` and a `creationTimestamp`.
- The brake (failover/reconcile/brake.py): while it holds a cluster, no task is written for it, and a task from a
  cluster that went not Ready less than `controllers.brakeWindowSeconds` ago waits for other clusters to follow.

Beside the taint manager (`--enable-no-execute-taint-eviction` left on) nothing is written twice: each write is
guarded by the targets and tasks it was decided on, so the second writer's write fails its precondition (ours) or
its `Update` conflicts (Karmada's), and decided again, the cluster is no longer a target.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from failover.core import binding as b
from failover.core.annotations import format_time, parse_time
from failover.core.api import (
    APPLIED_PLACEMENT_ANNOTATION,
    DEFAULT_PURGE_MODE,
    PRODUCER_TAINT_MANAGER,
    REASON_TAINT_UNTOLERATED,
    PurgeMode,
)
from failover.core.cluster import NO_EXECUTE, taints
from failover.core.decision import NORMAL, WARNING, Event, clip_message, earliest
from failover.core.fields import is_int
from failover.core.loop_settings import DecisionSettings
from failover.reconcile.brake import EVENT_BRAKED, OFF, Brake, settled_after
from failover.reconcile.cluster_failover import EVENT_STATE_NOT_FOUND, cluster_state, no_state_message
from failover.state.last_state import CLUSTER, preservation_rules, recorded_states

EVENT_EVICTED = "ClusterFailover"
# A braked eviction is looked at again this often: the brake comes off on another cluster's change, which queues no
# binding of this one.
BRAKE_RECHECK = timedelta(seconds=15)


@dataclass(frozen=True)
class ClusterEviction:
    """`patch` is a merge patch of spec.clusters and spec.gracefulEvictionTasks (apply it guarded by what
    `cluster_eviction_reads` names); `braked` the clusters whose eviction is due but held by the brake."""

    patch: Mapping[str, Any] | None = None
    evicted: tuple[str, ...] = ()
    braked: tuple[str, ...] = ()
    events: tuple[Event, ...] = ()
    requeue_after: timedelta | None = None


def decide_cluster_evictions(
    binding: Mapping[str, Any],
    clusters: Mapping[str, Mapping[str, Any]] | None,
    settings: DecisionSettings,
    now: datetime,
    held: Brake = OFF,
) -> ClusterEviction:
    """Evict the binding from each target cluster whose NoExecute taints its placement does not (or no longer)
    tolerate. `clusters`: every Cluster by name (None: not listed yet, nothing is decided)."""
    if not isinstance(binding, dict) or b.is_deleting(binding) or clusters is None:
        return ClusterEviction()
    placement = applied_placement(binding)
    if placement is None:
        return ClusterEviction()
    tolerations = [t for t in b.as_list(placement.get("clusterTolerations")) if isinstance(t, dict)]
    evicting = {task["fromCluster"] for task in b.eviction_tasks(binding)}
    targets = b.target_clusters(binding)
    due: list[b.TargetCluster] = []
    braked: list[str] = []
    delays: list[timedelta | None] = []
    for target in targets:
        no_execute = [taint for taint in taints(clusters.get(target.name)) if taint.get("effect") == NO_EXECUTE]
        wait = untolerated_after(no_execute, tolerations, now)
        if wait is None or target.name in evicting:
            continue
        wait = max(wait, settled_after(clusters.get(target.name), settings.brake_window, now))
        if wait > timedelta(0):
            delays.append(wait)
        elif held.holds(target.name):
            braked.append(target.name)
        else:
            due.append(target)
    events: list[Event] = [
        Event(WARNING, EVENT_BRAKED, clip_message(f"eviction from {name} held: {held.message()}")) for name in braked
    ]
    if braked:
        delays.append(BRAKE_RECHECK)
    if not due:
        return ClusterEviction(braked=tuple(braked), events=tuple(events), requeue_after=earliest(*delays))
    before = [target.name for target in targets]
    new_tasks = []
    for target in due:
        task, task_events = _eviction_task(binding, target, before, settings, now)
        new_tasks.append(task)
        events.extend(task_events)
    evicted = tuple(task["fromCluster"] for task in new_tasks)
    spec = b.spec(binding)
    patch = {
        "spec": {
            "clusters": [
                entry
                for entry in b.as_list(spec.get("clusters"))
                if not (isinstance(entry, dict) and entry.get("name") in evicted)
            ],
            "gracefulEvictionTasks": [*b.as_list(spec.get("gracefulEvictionTasks")), *new_tasks],
        }
    }
    return ClusterEviction(patch, evicted, tuple(braked), tuple(events), earliest(*delays))


def applied_placement(binding: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The placement Karmada applied (`policy.karmada.io/applied-placement`, JSON); None when absent or unreadable."""
    raw = b.annotations(binding).get(APPLIED_PLACEMENT_ANNOTATION)
    try:
        placement = json.loads(raw) if isinstance(raw, str) and raw else None
    except ValueError:
        return None
    return placement if isinstance(placement, dict) else None


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """corev1 `Toleration.ToleratesTaint` with the comparison operators off, as Karmada calls it."""
    effect, key, operator = toleration.get("effect"), toleration.get("key"), toleration.get("operator")
    if effect and effect != taint.get("effect"):
        return False
    if key and key != taint.get("key"):
        return False
    if operator in (None, "", "Equal"):
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return bool(operator == "Exists")


def untolerated_after(
    no_execute: Sequence[Mapping[str, Any]], tolerations: Sequence[Mapping[str, Any]], now: datetime
) -> timedelta | None:
    """How long until the taints are no longer tolerated (zero: now); None when there are none or they are
    tolerated for ever (`GetMatchingTolerations`, then `GetMinTolerationTimeWithCurrentTime`)."""
    if not no_execute:
        return None
    used = []
    for taint in no_execute:
        match = next((toleration for toleration in tolerations if tolerates(toleration, taint)), None)
        if match is None:
            return timedelta(0)
        used.append(match)
    triggers = [
        added + timedelta(seconds=toleration["tolerationSeconds"])
        for toleration in used
        if is_int(toleration.get("tolerationSeconds"))
        for taint in no_execute
        if (added := parse_time(taint.get("timeAdded"))) is not None and tolerates(toleration, taint)
    ]
    if not triggers:
        return None
    return max(min(triggers) - now, timedelta(0))


def eviction_order(binding: Mapping[str, Any]) -> tuple[int, int, datetime | str]:
    """The order a storm's evictions are queued in: the policy's `schedulePriority` first (copied onto the binding),
    then the stateful workloads, the oldest last good state first (its job has the most input to catch up on), then
    the rest by name."""
    priority = b.spec(binding).get("schedulePriority")
    value = priority.get("priority") if isinstance(priority, dict) else None
    states = recorded_states(binding)
    if states:
        return (-(value if is_int(value) else 0), 0, min(state.at for state in states.values()))
    return (-(value if is_int(value) else 0), 1, str(b.metadata(binding).get("name")))


def _eviction_task(
    binding: Mapping[str, Any],
    target: b.TargetCluster,
    before: list[str],
    settings: DecisionSettings,
    now: datetime,
) -> tuple[dict[str, Any], list[Event]]:
    mode = _purge_mode(binding, settings)
    task: dict[str, Any] = {
        "fromCluster": target.name,
        "purgeMode": settings.spell(mode),
        "reason": REASON_TAINT_UNTOLERATED,
        "message": f"cluster {target.name} has NoExecute taints the placement does not tolerate",
        "producer": PRODUCER_TAINT_MANAGER,
    }
    if target.replicas > 0:
        task["replicas"] = target.replicas
    events = []
    rules = preservation_rules(binding, CLUSTER)
    if rules:
        state, source = cluster_state(binding, target.name, rules)
        if state:
            task["preservedLabelState"] = state
            events.append(
                Event(
                    NORMAL,
                    EVENT_EVICTED,
                    clip_message(
                        f"evicted from {target.name} (untolerated NoExecute taint) with purgeMode {task['purgeMode']};"
                        f" preserved {', '.join(sorted(state))} from {source}"
                    ),
                )
            )
        else:
            events.append(Event(WARNING, EVENT_STATE_NOT_FOUND, clip_message(no_state_message(target.name, rules))))
    if not events:
        events.append(
            Event(
                NORMAL,
                EVENT_EVICTED,
                f"evicted from {target.name} (untolerated NoExecute taint) with purgeMode {task['purgeMode']}",
            )
        )
    task["clustersBeforeFailover"] = list(before)
    task["creationTimestamp"] = format_time(now)
    return task, events


def _purge_mode(binding: Mapping[str, Any], settings: DecisionSettings) -> PurgeMode:
    """`getPurgeMode`: the cluster failover's, Gracefully when it names none; without one, the relay's setting."""
    section = b.cluster_failover(binding)
    if section is None:
        return PurgeMode(settings.taint_eviction_purge_mode.value)
    try:
        return PurgeMode(section.get("purgeMode"))
    except (ValueError, TypeError):
        return DEFAULT_PURGE_MODE
