"""The last good preserved state of each copy, kept on the binding so it outlives every eviction task.

Karmada keeps a workload's preserved state only inside a graceful eviction task: the application failover controller
reads it from the evicted copy's reflected status at the moment of eviction, the taint manager only under its alpha
gate `StatefulFailoverInjection` (`pkg/controllers/cluster/taint_manager.go` `syncBindingEviction`), and the state is
gone with the task. A copy on a cluster that died cannot be read any more, and a task can end before the new copy
exists (the Directly wait on an unreachable cluster, karmada#7455's empty target list, a failback, which writes
no task at all). So the loop records, for every cluster whose copy is Healthy and reports every rule's value, those
values in `LAST_STATE_ANNOTATION` on the binding:

    {"member1": {"labels": {"application.karmada.io/failover-jobid": "9a27..."}, "at": "2026-11-23T17:46:29Z"}}

`at` is when these values were first seen together, so the newest record is the newest job. The rules are the
union of `failover.application.statePreservation` and `failover.cluster.statePreservation` (Karmada copies both from
the policy into the binding's `spec.failover`).

A record is dropped once it cannot be needed: its cluster is neither a target nor evicted by a task, and every
target has a record of its own (the state has reached a copy that runs it healthily), or at once when a task of
another producer (`failover.core.binding.is_failover_task`) evicts it: that move carries no state.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from failover.core import binding as b
from failover.core.annotations import format_time, parse_time, read_json_annotation
from failover.core.jsonpath import JSONPathNotFound, JSONPathSyntaxError, parse_template
from failover.core.labels import label_key_problems, label_value_problems
from failover.state.restoration import restoring

LAST_STATE_ANNOTATION = "failover-relay.io/last-state"
APPLICATION = "application"
CLUSTER = "cluster"


@dataclass(frozen=True)
class Rule:
    alias: str
    json_path: str


@dataclass(frozen=True)
class RuleResult:
    """One rule over one reflected status: `value` when it rendered to a valid label value, else `missing` (the
    path found nothing) or `problem` (why the rule or its value cannot be used)."""

    rule: Rule
    value: str | None = None
    missing: bool = False
    problem: str = ""


@dataclass(frozen=True)
class RecordedState:
    labels: Mapping[str, str]
    at: datetime


def preservation_rules(binding: Mapping[str, Any], which: str | None = None) -> list[Rule]:
    """The statePreservation rules of `spec.failover.<which>` (both kinds when `which` is None), in order, without
    entries that are not a string pair; an alias named twice keeps its first rule."""
    failover = b.spec(binding).get("failover")
    failover = failover if isinstance(failover, dict) else {}
    rules: dict[str, Rule] = {}
    for kind in (APPLICATION, CLUSTER) if which is None else (which,):
        behaviour = failover.get(kind)
        preservation = behaviour.get("statePreservation") if isinstance(behaviour, dict) else None
        entries = preservation.get("rules") if isinstance(preservation, dict) else None
        for entry in entries if isinstance(entries, list) else ():
            if not isinstance(entry, dict):
                continue
            alias, path = entry.get("aliasLabelName"), entry.get("jsonPath")
            if isinstance(alias, str) and isinstance(path, str):
                rules.setdefault(alias, Rule(alias, path))
    return list(rules.values())


def evaluate_rule(rule: Rule, reflected: Any) -> RuleResult:
    """Render `rule` over one copy's reflected status. Never raises: a value read from a member cluster is
    untrusted, and one that is not a valid label value is never preserved (as a label it would break the apply)."""
    key_problems = label_key_problems(rule.alias)
    if key_problems:
        return RuleResult(rule, problem=f"aliasLabelName {rule.alias[:80]!r} {key_problems[0]}")
    try:
        if not isinstance(reflected, dict) or not reflected:
            raise JSONPathNotFound("no reflected status")
        value = parse_template(rule.json_path).render(reflected)
    except JSONPathNotFound:
        return RuleResult(rule, missing=True)
    except JSONPathSyntaxError as error:
        return RuleResult(rule, problem=f"jsonPath for {rule.alias} does not parse ({error})")
    except Exception as error:  # noqa: BLE001  JSONPathError, RecursionError on deep data...: never stop the loop
        return RuleResult(rule, problem=f"jsonPath for {rule.alias} failed ({type(error).__name__})")
    if value == "":
        return RuleResult(rule, missing=True)  # a filter that matches nothing renders "" (client-go): no state
    value_problems = label_value_problems(value)
    if value_problems:
        return RuleResult(rule, problem=f"value for {rule.alias} is not a valid label value ({value_problems[0]})")
    return RuleResult(rule, value=value)


def recorded_states(binding: Mapping[str, Any]) -> dict[str, RecordedState]:
    """LAST_STATE_ANNOTATION by cluster; entries that do not read as label maps with a time are left out."""
    states = {}
    for cluster, entry in read_json_annotation(b.annotations(binding).get(LAST_STATE_ANNOTATION)).items():
        if not isinstance(cluster, str) or not isinstance(entry, dict):
            continue
        labels, at = entry.get("labels"), parse_time(entry.get("at"))
        if at is None or not isinstance(labels, dict) or not labels:
            continue
        if all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
            states[cluster] = RecordedState(dict(labels), at)
    return states


def recorded_state(binding: Mapping[str, Any], cluster: str, aliases: set[str] | None = None) -> dict[str, str]:
    """The recorded labels of `cluster`, limited to `aliases` when given; {} when there is no record."""
    state = recorded_states(binding).get(cluster)
    if state is None:
        return {}
    return {k: v for k, v in state.labels.items() if aliases is None or k in aliases}


def reported_state(binding: Mapping[str, Any], cluster: str, rules: list[Rule] | None = None) -> dict[str, str]:
    """The labels the statePreservation rules render from the copy on `cluster` as it reports itself now (its
    reflected status); {} unless every rule renders a valid value."""
    rules = preservation_rules(binding) if rules is None else rules
    if not rules:
        return {}
    item = b.aggregated_status(binding).get(cluster)
    results = [evaluate_rule(rule, (item or {}).get("status")) for rule in rules]
    if any(result.value is None for result in results):
        return {}
    return {result.rule.alias: result.value for result in results if result.value is not None}


def decide_last_state(binding: Mapping[str, Any], now: datetime) -> Mapping[str, Any] | None:
    """The merge patch that brings LAST_STATE_ANNOTATION up to date, None when it already is.

    A target whose copy is Healthy and renders every rule to a valid value is (re)recorded; `at` moves only when
    the values change, so an unchanged healthy copy costs no write.
    """
    if not isinstance(binding, dict) or b.is_deleting(binding):
        return None
    rules = preservation_rules(binding)
    old = recorded_states(binding)
    raw = b.annotations(binding).get(LAST_STATE_ANNOTATION)
    if not rules:
        return None if raw is None else _patch(None)
    new = dict(old)
    health = b.aggregated_status(binding)
    targets = [target.name for target in b.target_clusters(binding)]
    moving_in = restoring(binding)
    for cluster in targets:
        if b.health_of(health.get(cluster)) != b.HEALTHY or cluster in moving_in:
            continue  # a restoring copy's job has no state of its own yet: the one its move carried is the last good
        labels = reported_state(binding, cluster, rules)
        if not labels:
            continue
        if cluster not in old or dict(old[cluster].labels) != labels:
            new[cluster] = RecordedState(labels, now)
    evicting = {task["fromCluster"] for task in b.eviction_tasks(binding)}
    if targets and all(cluster in new for cluster in targets):
        new = {cluster: state for cluster, state in new.items() if cluster in targets or cluster in evicting}
    # A copy evicted by a task we do not own (binding preemption) moves without its state: its record must not
    # reach the next copy once the task is gone (`moved_state`).
    passing = b.passing_through(binding)
    new = {cluster: state for cluster, state in new.items() if cluster not in passing}
    value = _write(new)
    if value == raw or (value is None and raw is None):
        return None
    return _patch(value)


def _write(states: Mapping[str, RecordedState]) -> str | None:
    if not states:
        return None
    return json.dumps(
        {
            cluster: {"labels": dict(sorted(state.labels.items())), "at": format_time(state.at)}
            for cluster, state in sorted(states.items())
        },
        separators=(",", ":"),
    )


def _patch(value: str | None) -> Mapping[str, Any]:
    return {"metadata": {"annotations": {LAST_STATE_ANNOTATION: value}}}
