"""Application failover: when a workload has been Unhealthy on a cluster for tolerationSeconds, move it away.

Reference behaviour: Karmada's application failover controllers (`pkg/controllers/applicationfailover/`;
docs/design.md, "Application failover"). The binding loses the cluster from `spec.clusters` and gains an eviction task
(`fromCluster`, reason `ApplicationFailure`, producer, purge mode, replicas, grace period or suppressDeletion,
preserved state, clustersBeforeFailover). Where this differs from Karmada:

- The first-unhealthy time of each cluster is kept on the binding (annotation `UNHEALTHY_SINCE_ANNOTATION`, JSON
  `{"member1": "2024-05-01T10:00:00Z"}`), not in memory, so a restart or a new leader keeps counting.
- `Unknown` health neither starts nor resets the timer; only `Healthy` resets it (karmada#7431, where
  Unhealthy/Unknown flapping postponed failover forever).
- A statePreservation JSONPath that finds nothing in the failing copy's status takes the value the copy last
  reported while Healthy (`failover.state.last_state`). Only when there is none either does it delay the eviction, by at
  most `DecisionSettings.state_wait`; then the cluster is evicted without that state and a Warning says so (Karmada
  retries forever, no eviction).
- A preserved value that is not a valid label value, or an alias that is not a valid label key, is dropped with a
  Warning instead of being written into a task whose injection would break the member apply.
- A second failover away from a copy that never became healthy keeps the first failover's preserved state instead
  of re-reading it from the broken copy (karmada#6232).
- No ping-pong: a failover budget, backoff and a restore grace (`failover.reconcile.failover_budget`, karmada#4480,
  karmada#6233).
- Never none: the last cluster that can run the workload is not evicted when no other cluster can take it
  (`failover.reconcile.last_cluster`, karmada#7455); the copy is kept there with a Warning.
- Missing `propagateDeps` on a ResourceBinding is reported with a Warning event instead of silently doing nothing
  (karmada#3738); ClusterResourceBindings are not checked, as in Karmada.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from failover.core import binding as b
from failover.core.annotations import format_time, read_time_annotation, write_time_annotation
from failover.core.api import (
    CLUSTER_RESOURCE_BINDING,
    DEFAULT_GRACE_PERIOD_SECONDS,
    DEFAULT_PURGE_MODE,
    DEFAULT_TOLERATION_SECONDS,
    PRODUCER_CRB_APPLICATION_FAILOVER,
    PRODUCER_RB_APPLICATION_FAILOVER,
    REASON_APPLICATION_FAILURE,
    PurgeMode,
)
from failover.core.decision import NORMAL, WARNING, Event, clip_message, earliest
from failover.core.fields import is_int
from failover.core.loop_settings import DecisionSettings
from failover.reconcile.failover_budget import (
    EVENT_HELD_BACK,
    FAILOVERS_ANNOTATION,
    Hold,
    failover_history,
    held_back_message,
    hold,
    restoring_until,
    write_history,
)
from failover.reconcile.last_cluster import EVENT_KEPT, RECHECK, kept_message, why_not_takers
from failover.state.last_state import APPLICATION, evaluate_rule, preservation_rules, recorded_state
from failover.state.preserved_state import inherited_state
from failover.state.restoration import lineage

UNHEALTHY_SINCE_ANNOTATION = "failover-relay.io/unhealthy-since"

EVENT_FAILED_OVER = "ApplicationFailover"
EVENT_NEEDS_PROPAGATE_DEPS = "FailoverNeedsPropagateDeps"
EVENT_STATE_NOT_FOUND = "PreservedStateNotFound"
EVENT_STATE_INCOMPLETE = "PreservedStateIncomplete"
EVENT_STATE_INVALID = "PreservedStateInvalid"
EVENT_STATE_INHERITED = "PreservedStateInherited"


@dataclass(frozen=True)
class FailoverDecision:
    """What to write on the binding after one look at it.

    `patch` is a JSON merge patch for the binding's main resource (metadata.annotations and spec; lists replace
    whole), None when nothing changes. Apply it with the resourceVersion the decision was made on (optimistic
    concurrency) and decide again on conflict. `evicted` names the clusters removed from spec.clusters and
    `new_tasks` the eviction tasks appended for them. `requeue_after` is when the decision may change with no
    update of the binding (a toleration or state wait running out); None when only a change can change it.
    """

    patch: Mapping[str, Any] | None = None
    evicted: tuple[str, ...] = ()
    new_tasks: tuple[Mapping[str, Any], ...] = ()
    events: tuple[Event, ...] = ()
    requeue_after: timedelta | None = None
    kept: tuple[str, ...] = ()  # clusters not evicted because no other cluster can take the workload


@dataclass(frozen=True)
class _StateOutcome:
    state: dict[str, str] | None  # None: wait for it
    events: tuple[Event, ...]
    wait: timedelta | None = None


def decide_application_failover(
    binding: Mapping[str, Any],
    settings: DecisionSettings,
    now: datetime,
    clusters: Mapping[str, Mapping[str, Any]] | None = None,
) -> FailoverDecision:
    """Track unhealthy time per cluster and fail over the clusters whose toleration has run out.

    `binding` is a ResourceBinding or ClusterResourceBinding as returned by the API (its `kind` decides the
    producer and whether propagateDeps is required). The policy's `failover.application` is read from the
    binding's `spec.failover`, where Karmada copies it. `clusters` are the Cluster objects by name (None: not
    known), to tell whether another cluster can take the workload (`failover.reconcile.last_cluster`).
    """
    if not isinstance(binding, dict) or b.is_deleting(binding):
        return FailoverDecision()
    old_timers_raw = b.annotations(binding).get(UNHEALTHY_SINCE_ANNOTATION)
    application = b.application_failover(binding)
    if application is None:
        return _forget_timers(old_timers_raw, ())
    if not _is_cluster_binding(binding) and b.spec(binding).get("propagateDeps") is not True:
        return _forget_timers(old_timers_raw, _needs_propagate_deps(binding))

    toleration = timedelta(seconds=toleration_seconds(application))
    timers = _count_unhealthy_time(binding, read_time_annotation(old_timers_raw), toleration, settings, now)
    history = failover_history(binding, settings, now)
    rule = hold(history, settings, now) if timers.due else None
    if rule is not None:
        acted = _held_back(timers.due, rule, now)
    else:
        acted = _evict_due(binding, application, timers.due, toleration, clusters, settings, now)

    evicted = tuple(task["fromCluster"] for task in acted.new_tasks)
    still_counting = {name: since for name, since in timers.since.items() if name not in evicted}
    patch = _patch(binding, old_timers_raw, still_counting, evicted, acted.new_tasks)
    if evicted:
        patch = patch or {}
        patch.setdefault("metadata", {}).setdefault("annotations", {})[FAILOVERS_ANNOTATION] = write_history(
            [*history, now]
        )
    return FailoverDecision(
        patch=patch,
        evicted=evicted,
        new_tasks=tuple(acted.new_tasks),
        events=tuple(acted.events),
        requeue_after=earliest(*timers.delays, *acted.delays),
        kept=tuple(acted.kept),
    )


@dataclass
class _Timers:
    """The unhealthy timers after one look at the binding: the first-unhealthy time of each target that still counts,
    the targets whose toleration has run out (with when it ran out), and how long until the next may run out."""

    since: dict[str, datetime] = field(default_factory=dict)
    due: list[tuple[b.TargetCluster, datetime]] = field(default_factory=list)
    delays: list[timedelta | None] = field(default_factory=list)


@dataclass
class _Evictions:
    """What was decided for the due targets: the eviction tasks to append, the targets kept where they are, the
    events, and how long until the decision may change."""

    new_tasks: list[dict[str, Any]] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    delays: list[timedelta | None] = field(default_factory=list)


def _is_cluster_binding(binding: Mapping[str, Any]) -> bool:
    return binding.get("kind") == CLUSTER_RESOURCE_BINDING.kind


def _needs_propagate_deps(binding: Mapping[str, Any]) -> tuple[Event, ...]:
    """A ResourceBinding without propagateDeps is not failed over (Karmada's controller does nothing for it): a
    Warning names the Unhealthy clusters it stays on instead of silence (karmada#3738)."""
    unhealthy = [name for name, item in b.aggregated_status(binding).items() if b.health_of(item) == b.UNHEALTHY]
    if not unhealthy:
        return ()
    return (
        Event(
            WARNING,
            EVENT_NEEDS_PROPAGATE_DEPS,
            clip_message(
                "spec.failover.application is set but propagateDeps is not true, so the workload is not failed"
                f" over from {', '.join(sorted(unhealthy))}; set propagateDeps: true in the PropagationPolicy"
            ),
        ),
    )


def _count_unhealthy_time(
    binding: Mapping[str, Any],
    timers: Mapping[str, datetime],
    toleration: timedelta,
    settings: DecisionSettings,
    now: datetime,
) -> _Timers:
    """Start, keep or reset each target's first-unhealthy time (`timers`, as the annotation holds them) and find the
    targets Unhealthy for `toleration`: Healthy resets a timer, Unknown keeps it without starting it (karmada#7431),
    and a new copy still restoring its state is not counted yet (karmada#6233)."""
    counted = _Timers()
    health = b.aggregated_status(binding)
    evicting = {task["fromCluster"] for task in b.eviction_tasks(binding)}
    for target in b.target_clusters(binding):
        if target.name in evicting:
            continue  # already on its way out; Karmada's controller skips these too
        cluster_health = b.health_of(health.get(target.name))
        since = timers.get(target.name)
        if cluster_health == b.HEALTHY:
            continue  # healthy resets the timer
        if cluster_health == b.UNKNOWN:
            if since is not None:
                counted.since[target.name] = since  # karmada#7431: Unknown keeps the timer, it does not reset it
            continue
        restoring = restoring_until(binding, target.name, settings) if since is None else None
        if restoring is not None and now < restoring:
            counted.delays.append(restoring - now)  # karmada#6233: a copy still restoring its state is not counted yet
            continue
        since = since or now
        counted.since[target.name] = since
        deadline = since + toleration
        if now >= deadline:
            counted.due.append((target, deadline))
        else:
            counted.delays.append(deadline - now)
    return counted


def _held_back(due: list[tuple[b.TargetCluster, datetime]], rule: Hold, now: datetime) -> _Evictions:
    """No due target is evicted while the failover budget or its backoff holds failovers back
    (`failover.reconcile.failover_budget`, karmada#4480): a Warning for each, and a look again when the hold ends."""
    return _Evictions(
        events=[
            Event(WARNING, EVENT_HELD_BACK, clip_message(held_back_message(target.name, rule))) for target, _ in due
        ],
        delays=[rule.until - now],
    )


def _evict_due(
    binding: Mapping[str, Any],
    application: Mapping[str, Any],
    due: list[tuple[b.TargetCluster, datetime]],
    toleration: timedelta,
    clusters: Mapping[str, Mapping[str, Any]] | None,
    settings: DecisionSettings,
    now: datetime,
) -> _Evictions:
    """An eviction task for each due target, except where no other cluster can take the workload (kept on its last
    cluster: `failover.reconcile.last_cluster`, karmada#7455) and where the state to preserve is not found yet (the
    eviction waits for it: `_preserved_state`)."""
    acted = _Evictions()
    tasks = b.eviction_tasks(binding)
    clusters_before = [target.name for target in b.target_clusters(binding)]
    seconds = int(toleration.total_seconds())
    for target, deadline in due:
        reasons = why_not_takers(binding, clusters, {*(task["fromCluster"] for task in acted.new_tasks), target.name})
        if reasons is not None:
            acted.kept.append(target.name)
            acted.events.append(Event(WARNING, EVENT_KEPT, clip_message(kept_message(target.name, reasons, seconds))))
            acted.delays.append(RECHECK)
            continue
        outcome = _preserved_state(binding, application, tasks, target.name, deadline, settings, now)
        acted.events.extend(outcome.events)
        if outcome.state is None:
            acted.delays.append(outcome.wait)
            continue
        task = _eviction_task(
            application, target, outcome.state, clusters_before, _is_cluster_binding(binding), settings, now
        )
        acted.new_tasks.append(task)
        acted.events.append(
            Event(
                NORMAL,
                EVENT_FAILED_OVER,
                clip_message(
                    f"workload was Unhealthy on {target.name} for {seconds}s"
                    f" (tolerationSeconds); evicted it with purgeMode {task['purgeMode']}"
                ),
            )
        )
    return acted


def toleration_seconds(application: Mapping[str, Any]) -> int:
    conditions = application.get("decisionConditions")
    value = conditions.get("tolerationSeconds") if isinstance(conditions, dict) else None
    if not is_int(value):
        return DEFAULT_TOLERATION_SECONDS
    return max(value, 0)


def _purge_mode(application: Mapping[str, Any]) -> PurgeMode:
    try:
        return PurgeMode(application.get("purgeMode"))
    except (ValueError, TypeError):  # absent, unknown or not even a string: Karmada's default
        return DEFAULT_PURGE_MODE


def _forget_timers(old_raw: Any, events: tuple[Event, ...]) -> FailoverDecision:
    patch = {"metadata": {"annotations": {UNHEALTHY_SINCE_ANNOTATION: None}}} if old_raw is not None else None
    return FailoverDecision(patch=patch, events=events)


def _preserved_state(
    binding: Mapping[str, Any],
    application: Mapping[str, Any],
    tasks: list[dict[str, Any]],
    cluster: str,
    deadline: datetime,
    settings: DecisionSettings,
    now: datetime,
) -> _StateOutcome:
    """The preservedLabelState for evicting `cluster`, or None with how long to wait for it."""
    rules = preservation_rules(binding, APPLICATION)
    if not rules:
        return _StateOutcome(state={}, events=())
    inherited = inherited_state(tasks, cluster)
    if inherited is not None:
        origin, kept = inherited
        why = f"kept the state preserved when leaving {origin}: the copy on {cluster} never became healthy"
        return _StateOutcome(state=kept, events=(Event(NORMAL, EVENT_STATE_INHERITED, clip_message(why)),))
    carried = lineage(binding, cluster)
    if carried is not None:
        origin, kept = carried
        why = f"kept the state carried from {origin}: the copy on {cluster} has completed no checkpoint of its own yet"
        return _StateOutcome(state=kept, events=(Event(NORMAL, EVENT_STATE_INHERITED, clip_message(why)),))

    reflected = (b.aggregated_status(binding).get(cluster) or {}).get("status")
    state: dict[str, str] = {}
    missing: list[str] = []
    events: list[Event] = []
    for rule in rules:
        result = evaluate_rule(rule, reflected)
        if result.missing:
            missing.append(rule.alias)
        elif result.problem:
            # Never written as-is: injected as a label it would make the member apply fail.
            events.append(
                Event(
                    WARNING,
                    EVENT_STATE_INVALID,
                    clip_message(f"statePreservation on the status of {cluster}: {result.problem}; not preserved"),
                )
            )
        elif result.value is not None:
            state[rule.alias] = result.value
    recorded = recorded_state(binding, cluster, set(missing))
    if recorded:
        # The copy stopped reporting the value (a crashed job has no jobStatus); its last healthy report has it.
        state.update(recorded)
        missing = [alias for alias in missing if alias not in recorded]
    if missing:
        give_up = deadline + settings.state_wait
        names = ", ".join(missing)
        if now < give_up:
            events.append(
                Event(
                    WARNING,
                    EVENT_STATE_NOT_FOUND,
                    clip_message(
                        f"statePreservation found nothing for {names} in the status of {cluster}; eviction waits until"
                        f" {format_time(give_up)}, then goes ahead without it"
                    ),
                )
            )
            return _StateOutcome(state=None, events=tuple(events), wait=give_up - now)
        events.append(
            Event(
                WARNING,
                EVENT_STATE_INCOMPLETE,
                clip_message(
                    f"statePreservation found nothing for {names} in the status of {cluster} within"
                    f" {int(settings.state_wait.total_seconds())}s; evicted without it"
                ),
            )
        )
    return _StateOutcome(state=state, events=tuple(events))


def _eviction_task(
    application: Mapping[str, Any],
    target: b.TargetCluster,
    state: Mapping[str, str],
    clusters_before: list[str],
    is_cluster_binding: bool,
    settings: DecisionSettings,
    now: datetime,
) -> dict[str, Any]:
    mode = _purge_mode(application)
    task: dict[str, Any] = {
        "fromCluster": target.name,
        "purgeMode": settings.spell(mode),
        "reason": REASON_APPLICATION_FAILURE,
        "message": f"application on {target.name} was Unhealthy for longer than tolerationSeconds",
        "producer": PRODUCER_CRB_APPLICATION_FAILOVER if is_cluster_binding else PRODUCER_RB_APPLICATION_FAILOVER,
    }
    if target.replicas > 0:
        task["replicas"] = target.replicas
    if mode.is_gracefully:
        grace = application.get("gracePeriodSeconds")
        valid = is_int(grace) and grace > 0
        task["gracePeriodSeconds"] = grace if valid else DEFAULT_GRACE_PERIOD_SECONDS
    elif mode.canonical is PurgeMode.NEVER:
        task["suppressDeletion"] = True
    if state:
        task["preservedLabelState"] = dict(state)
    task["clustersBeforeFailover"] = list(clusters_before)
    # Stamped here rather than on the graceful eviction pass, so the grace period starts at the eviction.
    task["creationTimestamp"] = format_time(now)
    return task


def _patch(
    binding: Mapping[str, Any],
    old_timers_raw: Any,
    timers: Mapping[str, datetime],
    evicted: tuple[str, ...],
    new_tasks: list[dict[str, Any]],
) -> dict[str, Any] | None:
    patch: dict[str, Any] = {}
    annotations: dict[str, Any] = {}
    new_raw = write_time_annotation(timers)
    if new_raw != old_timers_raw:
        annotations[UNHEALTHY_SINCE_ANNOTATION] = new_raw  # None deletes it
    if evicted:
        spec = b.spec(binding)
        clusters, tasks = spec.get("clusters"), spec.get("gracefulEvictionTasks")
        clusters = clusters if isinstance(clusters, list) else []
        tasks = tasks if isinstance(tasks, list) else []
        patch["spec"] = {
            "clusters": [entry for entry in clusters if not (isinstance(entry, dict) and entry.get("name") in evicted)],
            "gracefulEvictionTasks": [*tasks, *new_tasks],
        }
    if annotations:
        patch["metadata"] = {"annotations": annotations}
    return patch or None
