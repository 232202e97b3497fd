"""Cluster failover with state, without Karmada's alpha gate: fill the eviction tasks the taint manager writes.

Karmada's taint manager (`pkg/controllers/cluster/taint_manager.go` `syncBindingEviction`) evicts a workload from a
cluster with an untolerated NoExecute taint, but computes `preservedLabelState` from
`failover.cluster.statePreservation` only under the alpha gate `StatefulFailoverInjection`, off by default
(`pkg/features/features.go`): without the gate a cluster failover carries no state. This decision fills it into such
a task, with the rules of `spec.failover.cluster` (Karmada copies them from the policy into the binding), from, in
this order:

1. an earlier task's state when the evicted copy was the replacement of that earlier failover and never became
   healthy (karmada#6232, as for application failover);
2. the evicted copy's last healthy report (`failover.state.last_state`): with a dead cluster that is all there is;
3. the evicted copy's reflected status, when it renders every rule.

A task without `clustersBeforeFailover` gets `[fromCluster]`, as the application failover controller writes it, so
the state is never injected back into the cluster it was read from. The Work webhook also falls back to the last
healthy report for a task that is still unfilled (`failover.state.preserved_state`), which closes the window between the
taint manager's write and ours.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from failover.core import binding as b
from failover.core.decision import NORMAL, WARNING, Event, clip_message
from failover.state.last_state import CLUSTER, Rule, evaluate_rule, preservation_rules, recorded_state
from failover.state.preserved_state import inherited_state
from failover.state.restoration import lineage

EVENT_STATE_FILLED = "PreservedStateFilled"
EVENT_STATE_NOT_FOUND = "PreservedStateNotFound"


@dataclass(frozen=True)
class StateFill:
    """`patch` replaces spec.gracefulEvictionTasks (apply it with the resourceVersion it was decided on)."""

    patch: Mapping[str, Any] | None = None
    filled: tuple[str, ...] = ()
    events: tuple[Event, ...] = ()


def decide_cluster_failover_state(binding: Mapping[str, Any]) -> StateFill:
    """Fill preservedLabelState into the taint manager's tasks that lack it."""
    if not isinstance(binding, dict) or b.is_deleting(binding):
        return StateFill()
    rules = preservation_rules(binding, CLUSTER)
    raw_tasks = b.spec(binding).get("gracefulEvictionTasks")
    if not rules or not isinstance(raw_tasks, list):
        return StateFill()
    new_tasks: list[Any] = []
    filled: list[str] = []
    events: list[Event] = []
    for task in raw_tasks:
        if not (
            isinstance(task, dict)
            and isinstance(task.get("fromCluster"), str)
            and b.is_cluster_failover_task(task)
            and not task.get("preservedLabelState")
        ):
            new_tasks.append(task)
            continue
        cluster = task["fromCluster"]
        state, source = cluster_state(binding, cluster, rules)
        if not state:
            events.append(Event(WARNING, EVENT_STATE_NOT_FOUND, clip_message(no_state_message(cluster, rules))))
            new_tasks.append(task)
            continue
        updated = {**task, "preservedLabelState": state}
        if not isinstance(task.get("clustersBeforeFailover"), list):
            updated["clustersBeforeFailover"] = [cluster]
        new_tasks.append(updated)
        filled.append(cluster)
        events.append(
            Event(
                NORMAL,
                EVENT_STATE_FILLED,
                clip_message(f"cluster failover from {cluster}: preserved {', '.join(sorted(state))} from {source}"),
            )
        )
    if not filled:
        return StateFill(events=tuple(events))
    return StateFill(patch={"spec": {"gracefulEvictionTasks": new_tasks}}, filled=tuple(filled), events=tuple(events))


def no_state_message(cluster: str, rules: list[Rule]) -> str:
    aliases = ", ".join(sorted({rule.alias for rule in rules}))
    return (
        f"cluster failover from {cluster}: no healthy report of {aliases} was ever recorded for its copy, and its"
        f" reflected status has none; the new copy starts without state"
    )


def cluster_state(binding: Mapping[str, Any], cluster: str, rules: list[Rule]) -> tuple[dict[str, str], str]:
    """The state a cluster failover from `cluster` carries under the cluster `rules`, and where it was read (the
    sources in the module docstring, in order); empty when none has every alias."""
    aliases = {rule.alias for rule in rules}
    inherited = inherited_state(b.eviction_tasks(binding), cluster)
    if inherited is not None:
        origin, state = inherited
        kept = {k: v for k, v in state.items() if k in aliases}
        if kept:
            return kept, f"the failover from {origin} (the copy on {cluster} never became healthy)"
    carried = lineage(binding, cluster)
    if carried is not None:
        origin, state = carried
        kept = {k: v for k, v in state.items() if k in aliases}
        if kept:
            return kept, f"the move from {origin} (the copy on {cluster} has no checkpoint of its own yet)"
    recorded = recorded_state(binding, cluster, aliases)
    if recorded.keys() == aliases:
        return recorded, f"the last healthy report of the copy on {cluster}"
    reflected = (b.aggregated_status(binding).get(cluster) or {}).get("status")
    results = [evaluate_rule(rule, reflected) for rule in rules]
    if all(result.value is not None for result in results):
        return {result.rule.alias: str(result.value) for result in results}, f"the reflected status of {cluster}"
    return recorded, f"the last healthy report of the copy on {cluster}"
