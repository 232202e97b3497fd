"""No ping-pong: a per-workload failover budget with backoff, and a restore grace after every move.

Karmada fails a workload over as often as its health says so (karmada#4480: a job that cannot run anywhere
moves between clusters forever, restarting each time), and counts a copy that is still restoring its state as
Unhealthy at once (karmada#6233). Per binding:

- the application failovers we made are kept in `FAILOVERS_ANNOTATION` (a JSON list of RFC 3339 times, only those
  within `DecisionSettings.failover_budget_window`); at most `failover_budget` of them per window;
- after the n-th failover in the window the next waits at least `failover_backoff * 2**(n-1)`;
- a copy that is restoring gets a fair chance (`restoring_until`): for `restore_grace` after the move that brought
  the workload to its cluster (an eviction task, ours or the taint manager's, that did not have that cluster among
  its `clustersBeforeFailover`), while that task is still there or, once it has ended, until the copy's job has
  completed a checkpoint of its own (failover/state/restoration.py), an Unhealthy report does not start the toleration
  timer. A restored copy that fails is counted at once, and so is one that reports a terminal failure; a copy that
  never restores is counted after the grace.

A failover that a rule holds back is reported with a Warning `FailoverHeldBack` naming the rule and the time it
is allowed again, and looked at again then.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from failover.core import binding as b
from failover.core.annotations import format_time, parse_time
from failover.core.loop_settings import DecisionSettings
from failover.state.restoration import restoring, terminally_failed

FAILOVERS_ANNOTATION = "failover-relay.io/failovers"
EVENT_HELD_BACK = "FailoverHeldBack"


@dataclass(frozen=True)
class Hold:
    """Why failovers are held back now, and until when."""

    until: datetime
    why: str


def failover_history(binding: Mapping[str, Any], settings: DecisionSettings, now: datetime) -> list[datetime]:
    """Our failovers of this binding within the budget window, oldest first; unreadable entries are dropped."""
    raw = b.annotations(binding).get(FAILOVERS_ANNOTATION)
    try:
        entries = json.loads(raw) if isinstance(raw, str) else []
    except ValueError:
        entries = []
    times = [
        moment for entry in (entries if isinstance(entries, list) else ()) if (moment := parse_time(entry)) is not None
    ]
    return sorted(moment for moment in times if now - moment < settings.failover_budget_window)


def write_history(history: list[datetime]) -> str | None:
    return json.dumps([format_time(moment) for moment in sorted(history)], separators=(",", ":")) if history else None


def hold(history: list[datetime], settings: DecisionSettings, now: datetime) -> Hold | None:
    """The rule that holds a failover back now, if any."""
    if len(history) >= settings.failover_budget:
        window = int(settings.failover_budget_window.total_seconds())
        return Hold(
            history[0] + settings.failover_budget_window,
            f"failover budget spent: {len(history)} failovers in the last {window}s (failoverBudget)",
        )
    if history and settings.failover_backoff > timedelta(0):
        wait = settings.failover_backoff * (2 ** (len(history) - 1))
        if now < history[-1] + wait:
            return Hold(
                history[-1] + wait,
                f"backoff: {int(wait.total_seconds())}s after the last failover"
                " (failoverBackoffSeconds, doubling per failover in the window)",
            )
    return None


def restoring_until(binding: Mapping[str, Any], cluster: str, settings: DecisionSettings) -> datetime | None:
    """Until when an Unhealthy report from `cluster` is taken as its copy still restoring; None when it is not a new
    copy (no pending move brought the workload there) or there is no grace.

    Karmada's interpreter calls a FlinkDeployment Unhealthy until its job is RUNNING (the built-in FlinkDeployment
    health Lua: CREATED / INITIALIZING / RECONCILING without an allow-listed error is not healthy), so a copy
    restoring its state looks exactly like a failed one (karmada#6233). A `suppressDeletion` task is kept whatever the
    new copy's health (`failover.reconcile.graceful_eviction`), so it is no evidence that the copy is still restoring.
    """
    if settings.restore_grace <= timedelta(0) or terminally_failed(b.aggregated_status(binding).get(cluster)):
        return None
    moves = [
        moment
        for task in b.eviction_tasks(binding)
        if task.get("suppressDeletion") is not True
        and task["fromCluster"] != cluster
        and cluster not in b.as_list(task.get("clustersBeforeFailover"))
        and (moment := parse_time(task.get("creationTimestamp"))) is not None
    ]
    record = restoring(binding).get(cluster)
    if record is not None:
        moves.append(record.since)
    return max(moves) + settings.restore_grace if moves else None


def held_back_message(cluster: str, rule: Hold) -> str:
    return f"failover from {cluster} held back until {format_time(rule.until)}: {rule.why}"
