"""Graceful eviction: when an eviction task on a binding is over, so the old copy can go.

Reference behaviour: Karmada's graceful eviction controllers (`pkg/controllers/gracefuleviction/evictiontask.go`;
docs/design.md, "Graceful eviction"). A task ends when:

1. `suppressDeletion` is false (a user confirmed the deletion);
2. its grace period (`gracePeriodSeconds`, else `DecisionSettings.graceful_eviction_timeout`) has passed since its
   `creationTimestamp`;
3. the binding is scheduled for its generation (`status.schedulerObservedGeneration == metadata.generation`) and
   every cluster in `spec.clusters` is Healthy in `status.aggregatedStatus`.

A task with `suppressDeletion: true` stays until someone removes it. A task without `creationTimestamp` (written by
Karmada's taint manager, say) is stamped with `now` and kept on that pass. Where this differs from Karmada: an
EMPTY target list is not "every target healthy" (karmada#7455, where a binding that fitted nowhere lost its
old copy at once); such a task of a failover waits for its grace period.

A task of a producer we do not know (`failover.core.binding.is_failover_task`; Karmada PR #7832's binding preemption
writes `Scheduler` / `BindingPreempted`) passes through: it ends exactly as Karmada's controller ends it, an empty
target list included (a preempted workload that fits nowhere is meant to give its resources up), and it is not
remembered for failback (docs/design.md, "Eviction tasks of other producers").

Every ended task of a failover is remembered on the binding in `EVICTED_FROM_ANNOTATION` (JSON `{"member1": "<task
creationTimestamp>"}`), so failback can later tell which workloads left a cluster, and when, after the tasks are gone.
The state such a task carried goes with it into `RESTORING_ANNOTATION` for each copy its move brought, until that copy
has a checkpoint of its own (failover/state/restoration.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from failover.core import binding as b
from failover.core.annotations import format_time, parse_time, read_time_annotation, write_time_annotation
from failover.core.api import REASON_DRILL, REASON_REBALANCE
from failover.core.decision import NORMAL, Event, earliest
from failover.core.fields import is_int
from failover.core.loop_settings import DecisionSettings
from failover.state.restoration import RESTORING_ANNOTATION, moved_in, restoring, restoring_value

EVICTED_FROM_ANNOTATION = "failover-relay.io/evicted-from"
EVENT_TASK_REMOVED = "EvictionTaskRemoved"

ENDED_CONFIRMED = "suppressDeletion set to false"
ENDED_TIMEOUT = "grace period passed"
ENDED_HEALTHY = "every target cluster is healthy"


@dataclass(frozen=True)
class EndedTask:
    from_cluster: str
    why: str  # ENDED_CONFIRMED, ENDED_TIMEOUT or ENDED_HEALTHY
    started: datetime  # the task's creationTimestamp
    failover: bool = True  # False: a pass-through task of another producer (b.is_failover_task)
    reason: str | None = None  # the task's reason


@dataclass(frozen=True)
class EvictionDecision:
    """What to write on the binding's eviction tasks.

    `patch` is a JSON merge patch replacing `spec.gracefulEvictionTasks` (None when unchanged); apply it with the
    resourceVersion the decision was made on. `ended` lists the removed tasks, `requeue_after` is the time until the
    next grace period runs out (None when no task can end by time alone).
    """

    patch: Mapping[str, Any] | None = None
    ended: tuple[EndedTask, ...] = ()
    events: tuple[Event, ...] = ()
    requeue_after: timedelta | None = None


def decide_graceful_eviction(binding: Mapping[str, Any], settings: DecisionSettings, now: datetime) -> EvictionDecision:
    """Stamp new tasks, drop the ones that are over and say when to look again."""
    if not isinstance(binding, dict) or b.is_deleting(binding):
        return EvictionDecision()
    raw_tasks = b.spec(binding).get("gracefulEvictionTasks")
    if not isinstance(raw_tasks, list) or not raw_tasks:
        return EvictionDecision()
    # Karmada's assessment (evictiontask.go allScheduledResourceInHealthyState) counts no target as all healthy.
    targets_healthy = {True: all_targets_healthy(binding), False: all_targets_healthy(binding, empty_is_healthy=True)}
    kept: list[Any] = []
    ended: list[EndedTask] = []
    delays: list[timedelta | None] = []
    changed = False
    for task in raw_tasks:
        if not isinstance(task, dict) or not isinstance(task.get("fromCluster"), str):
            kept.append(task)  # not ours to judge; leave it exactly as stored
            continue
        created = parse_time(task.get("creationTimestamp"))
        if created is None:
            # Karmada's first pass only stamps; the grace period starts now.
            kept.append({**task, "creationTimestamp": format_time(now)})
            changed = True
            delays.append(None if task.get("suppressDeletion") is True else _timeout(task, settings))
            continue
        failover = b.is_failover_task(task)
        why, delay = _task_end(task, created, targets_healthy[failover], settings, now)
        if why is None:
            kept.append(task)
            delays.append(delay)
        else:
            ended.append(EndedTask(task["fromCluster"], why, created, failover, task.get("reason")))
            changed = True
    if not changed:
        return EvictionDecision(requeue_after=earliest(*delays))
    events = tuple(
        Event(
            NORMAL,
            EVENT_TASK_REMOVED,
            f"eviction from {task.from_cluster} finished ({task.why}); its copy there is released",
        )
        for task in ended
    )
    patch: dict[str, Any] = {"spec": {"gracefulEvictionTasks": kept}}
    # A rebalance moved the workload where its user asked, and a drill moves it back itself: failback never takes it
    # back there.
    remembered = [task for task in ended if task.failover and task.reason not in (REASON_REBALANCE, REASON_DRILL)]
    annotations: dict[str, Any] = {}
    if remembered:
        record = evicted_from(binding)
        for task in remembered:
            record[task.from_cluster] = max(task.started, record.get(task.from_cluster, task.started))
        annotations[EVICTED_FROM_ANNOTATION] = write_time_annotation(record)
    ending = {task.from_cluster for task in ended}
    arriving = [
        copy
        for task in raw_tasks
        if isinstance(task, dict) and task.get("fromCluster") in ending
        for copy in moved_in(binding, task)
    ]
    if arriving:
        records = {**restoring(binding), **{copy.cluster: copy for copy in arriving}}
        annotations[RESTORING_ANNOTATION] = restoring_value(records.values())
    if annotations:
        patch["metadata"] = {"annotations": annotations}
    return EvictionDecision(patch=patch, ended=tuple(ended), events=events, requeue_after=earliest(*delays))


def all_targets_healthy(binding: Mapping[str, Any], empty_is_healthy: bool = False) -> bool:
    """Scheduled for the current generation and every target Healthy; no targets is not healthy (karmada#7455) unless
    `empty_is_healthy` (Karmada's own rule, for pass-through tasks)."""
    if not b.scheduled_for_generation(binding):
        return False
    targets = b.target_clusters(binding)
    if not targets:
        return empty_is_healthy
    health = b.aggregated_status(binding)
    return all(b.health_of(health.get(target.name)) == b.HEALTHY for target in targets)


def _timeout(task: Mapping[str, Any], settings: DecisionSettings) -> timedelta:
    grace = task.get("gracePeriodSeconds")
    if is_int(grace) and grace >= 0:
        return timedelta(seconds=grace)
    return settings.graceful_eviction_timeout


def _task_end(
    task: Mapping[str, Any], created: datetime, targets_healthy: bool, settings: DecisionSettings, now: datetime
) -> tuple[str | None, timedelta | None]:
    """Why the task is over (None if it is not) and, if not, how long until its grace period runs out."""
    suppress = task.get("suppressDeletion")
    if suppress is True:
        return None, None  # kept until a user or tool removes it or sets it to false
    if suppress is False:
        return ENDED_CONFIRMED, None
    deadline = created + _timeout(task, settings)
    if now >= deadline:
        return ENDED_TIMEOUT, None
    if targets_healthy:
        return ENDED_HEALTHY, None
    return None, deadline - now


def evicted_from(binding: Mapping[str, Any]) -> dict[str, datetime]:
    """EVICTED_FROM_ANNOTATION: cluster -> when the (last) finished eviction from it started; {} when unreadable."""
    return read_time_annotation(b.annotations(binding).get(EVICTED_FROM_ANNOTATION))
