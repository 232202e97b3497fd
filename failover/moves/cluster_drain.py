"""Drain: move every stateful workload off a cluster on purpose, the way a node is drained, each by savepoint handoff
(failover/moves/handoff.py; docs/design.md, "Planned moves").

A cluster is drained while it carries the taint `DRAIN_TAINT_KEY` with effect NoSchedule (`failover-relay drain
CLUSTER` writes it, `undrain` removes it). NoSchedule is what `karmadactl cordon` writes
(`cluster.karmada.io/unschedulable`): Karmada's scheduler places nothing new there, and its taint manager, which acts
on NoExecute alone, evicts nothing. The relay moves the workloads itself, so each can hand over by savepoint:

- the workloads are the bindings that target the cluster, under a policy that preserves state, with a single-cluster
  placement (the new copy replaces the old; a spread workload is not moved: `drain_plan` says why);
- at most `DecisionSettings.failback_max_in_flight` planned moves are under way at once, over every binding (failbacks
  and drains together), in the order of the bindings' namespace and name; the rest wait for a later pass, so a cluster
  of hundreds of jobs restarts them a few at a time;
- the taint is the whole state: a relay restarted mid-drain finds the taint and the handoff annotations, and goes on.

When the taint goes, the cluster counts as recovered for failback (failover/moves/failback.py), and the
workloads that opted in to failback come home, by savepoint handoff too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from failover.core import binding as b
from failover.core import cluster as c
from failover.core.annotations import format_time, parse_time
from failover.core.api import DRAIN_TAINT_KEY, REASON_DRAIN
from failover.core.decision import NORMAL, Event, clip_message
from failover.core.loop_settings import DecisionSettings
from failover.core.names import object_key
from failover.core.placement import placement_is_single_cluster
from failover.fence.control_plane import DEFAULT_POLL
from failover.moves.handoff import (
    HANDOFF_ANNOTATION,
    Handoff,
    MovesBegun,
    handoff_in_flight,
    move_eviction,
    moved_without_handoff,
    planned_move_in_flight,
    start_handoff,
)
from failover.state.last_state import preservation_rules

EVENT_DRAIN = "DrainMove"
# How often a drain held back by the moves in flight (or waiting for another move of one of its workloads) looks
# again. A move ends in its binding's pipeline, which does not queue the Cluster: the drain looks as often as a handoff
# looks at its fence record, so the next move begins within about as long as the last one took to be seen ending.
DRAIN_RETRY = DEFAULT_POLL
# What `drain_plan` says of each workload on the cluster.
HANDOFF, CHECKPOINT, IN_FLIGHT, STAYS = "savepoint handoff", "from the newest checkpoint", "moving", "stays"


def drain_taint(now: datetime) -> dict[str, str]:
    """The taint `failover-relay drain` adds to the Cluster."""
    return {"key": DRAIN_TAINT_KEY, "effect": c.NO_SCHEDULE, "timeAdded": format_time(now)}


def is_drained(cluster: Mapping[str, Any] | None) -> bool:
    """The cluster carries the drain taint."""
    return any(_is_drain_taint(taint) for taint in c.taints(cluster))


def _is_drain_taint(taint: Mapping[str, Any]) -> bool:
    return taint.get("key") == DRAIN_TAINT_KEY and taint.get("effect") == c.NO_SCHEDULE


def drained_since(cluster: Mapping[str, Any] | None) -> datetime | None:
    """When the drain taint was added (its `timeAdded`); None when the cluster is not drained or the time is unknown."""
    for taint in c.taints(cluster):
        if _is_drain_taint(taint):
            return parse_time(taint.get("timeAdded"))
    return None


def without_drain_taint(cluster: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The Cluster's taints with the drain taint taken out (`undrain`)."""
    return [dict(taint) for taint in c.taints(cluster) if not _is_drain_taint(taint)]


@dataclass(frozen=True)
class DrainItem:
    """One workload on a cluster being drained: how it moves (HANDOFF, CHECKPOINT with why, IN_FLIGHT) or why it
    STAYS."""

    binding: Mapping[str, Any]
    how: str
    why: str = ""
    handoff: Handoff | None = None

    @property
    def name(self) -> str:
        ref = b.object_ref(self.binding)
        return object_key(ref.namespace, ref.name)


def drain_plan(
    cluster: str,
    bindings: Iterable[Mapping[str, Any]],
    works_of: Callable[[Mapping[str, Any]], Iterable[Mapping[str, Any]]],
    watched: frozenset[str] | None,
    now: datetime,
) -> list[DrainItem]:
    """What a drain of `cluster` does with each stateful workload that runs there, in the order it moves them."""
    items = []
    for binding in sorted(
        (binding for binding in bindings if isinstance(binding, dict)),
        key=lambda binding: (b.object_ref(binding).namespace, b.object_ref(binding).name),
    ):
        targets = [target.name for target in b.target_clusters(binding)]
        if cluster not in targets or b.is_deleting(binding) or not preservation_rules(binding):
            continue
        if handoff_in_flight(binding) or any(task["fromCluster"] == cluster for task in b.eviction_tasks(binding)):
            items.append(DrainItem(binding, IN_FLIGHT))
            continue
        if len(targets) != 1 or not placement_is_single_cluster(b.spec(binding).get("placement")):
            why = "its replicas are spread over clusters: a WorkloadRebalancer or a NoExecute taint moves it"
            items.append(DrainItem(binding, STAYS, why))
            continue
        is_watched = None if watched is None else cluster in watched
        started = start_handoff(binding, works_of(binding), cluster, "", REASON_DRAIN, is_watched, now)
        if isinstance(started, Handoff):
            items.append(DrainItem(binding, HANDOFF, handoff=started))
        else:
            items.append(DrainItem(binding, CHECKPOINT, started))
    return items


def decide_drain(
    cluster: Mapping[str, Any],
    bindings: Iterable[Mapping[str, Any]],
    works_of: Callable[[Mapping[str, Any]], Iterable[Mapping[str, Any]]],
    watched: frozenset[str] | None,
    settings: DecisionSettings,
    now: datetime,
) -> MovesBegun:
    """Begin the next moves of a drained `cluster`: a handoff annotation for each workload a member relay can hand
    over (the binding's pipeline carries it on: `handoff.decide_handoff`), else its eviction at once, as many as the
    moves in flight allow."""
    name = b.metadata(cluster).get("name")
    if not isinstance(name, str) or not is_drained(cluster):
        return MovesBegun()
    bindings = [binding for binding in bindings if isinstance(binding, dict)]
    room = settings.failback_max_in_flight - sum(1 for binding in bindings if planned_move_in_flight(binding))
    patches, events = [], []
    held_back = begun = 0
    for item in drain_plan(name, bindings, works_of, watched, now):
        if item.how == IN_FLIGHT:
            held_back += 1  # another move of it (a failback, a drill) is under way: one move at a time
            continue
        if item.how not in (HANDOFF, CHECKPOINT):
            continue
        if room <= 0:
            held_back += 1
            continue
        room -= 1
        binding = item.binding
        patch: dict[str, Any] = {"metadata": {}}
        if item.handoff is not None:
            patch["metadata"]["annotations"] = {HANDOFF_ANNOTATION: item.handoff.annotation()}
            message = f"cluster {name} is drained: stopping the copy there with a savepoint, then it moves"
            begun += 1
        else:
            fallback = moved_without_handoff(REASON_DRAIN, name, "", item.why, now)
            patch["metadata"]["annotations"] = {HANDOFF_ANNOTATION: fallback.annotation()}
            patch["spec"] = move_eviction(binding, name, REASON_DRAIN, settings, now)
            message = (
                f"cluster {name} is drained: evicted the workload, which restores from the newest completed"
                f" checkpoint, not a savepoint: {item.why}"
            )
        patches.append(b.patch_on(binding, patch))
        events.append(Event(NORMAL, EVENT_DRAIN, clip_message(message), b.object_ref(binding)))
    delays = [DEFAULT_POLL] if begun else []
    if held_back:
        delays.append(DRAIN_RETRY)
    return MovesBegun(
        binding_patches=tuple(patches),
        events=tuple(events),
        requeue_after=min(delays, default=None),
    )
