"""`failover-relay drill`: one workload moved on purpose off the cluster it runs on, to where the scheduler would put it
in a failover, and back, each way by the planned-move handoff (failover/moves/handoff.py) — or, where no member
relay can stop the copy with a savepoint, from the newest completed checkpoint as a failover would. A drill proves the
path a failover takes (the eviction, the scheduler's choice, the restore lookup, the new copy starting from its
state) on one workload, when its team chooses, without breaking anything else.

The command writes the start of each leg (`start_leg`: the handoff annotation, or the fallback's annotation with its
eviction) through the write service, on the binding's resourceVersion; the binding's own pipeline in the relay
carries the handoff on (`handoff.decide_handoff`). `leg_view` says where a leg stands, for the command to follow and
report.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from failover.core import binding as b
from failover.core.annotations import format_time
from failover.core.api import REASON_DRILL
from failover.core.cluster import is_ready
from failover.core.decision import BindingPatch
from failover.core.loop_settings import DecisionSettings
from failover.moves.handoff import (
    DONE,
    HANDOFF_ANNOTATION,
    Handoff,
    move_eviction,
    moved_without_handoff,
    planned_move_in_flight,
    read_handoff,
    start_handoff,
)
from failover.state.restoration import lineage

HEALTHY = "Healthy"


@dataclass(frozen=True)
class LegStart:
    """The binding patch that starts a leg (on the resourceVersion it was decided on), and the handoff it writes."""

    change: BindingPatch
    handoff: Handoff


def start_leg(
    binding: Mapping[str, Any],
    clusters: Mapping[str, Mapping[str, Any]],
    works: Iterable[Mapping[str, Any]],
    watched: bool | None,
    settings: DecisionSettings,
    now: datetime,
) -> LegStart | str:
    """The start of a drill leg off the one cluster the workload runs on, or why there is none (one line).

    Only a workload that could fail over now is moved: on one cluster, Ready, Healthy there, with no other move of it
    under way. `watched`: a member relay watches that cluster with the storage fence on (None: the fence is off or
    its storage unreadable), as `start_handoff` takes it."""
    if b.is_deleting(binding):
        return "the workload is being deleted"
    targets = b.target_clusters(binding)
    if len(targets) != 1:
        return f"the workload runs on {len(targets)} clusters: a drill moves a workload that runs on one"
    source = targets[0].name
    if planned_move_in_flight(binding) or b.eviction_tasks(binding):
        return "another move of the workload is under way (an eviction task or a handoff): wait for it to end"
    if lineage(binding, source) is not None:
        return (
            f"the copy on {source} has not completed a checkpoint since its restore: a move from a checkpoint now "
            "would carry the state its own move brought, not its own"
        )
    if not is_ready(clusters.get(source)):
        return f"{source} is not Ready: a drill moves only a workload a failover has not already taken"
    if b.health_of(b.aggregated_status(binding).get(source)) != HEALTHY:
        return f"the workload is not Healthy on {source}: a drill starts from a running job"
    started = start_handoff(binding, works, source, "", REASON_DRILL, watched, now)
    if isinstance(started, Handoff):
        return LegStart(
            b.patch_on(binding, {"metadata": {"annotations": {HANDOFF_ANNOTATION: started.annotation()}}}), started
        )
    fallback = moved_without_handoff(REASON_DRILL, source, "", started, now)
    patch = {
        "metadata": {"annotations": {HANDOFF_ANNOTATION: fallback.annotation()}},
        "spec": move_eviction(binding, source, REASON_DRILL, settings, now),
    }
    return LegStart(b.patch_on(binding, patch), fallback)


@dataclass(frozen=True)
class LegView:
    """Where a drill leg stands: its handoff as the binding keeps it, where the workload is placed now, whether it
    runs Healthy there, whether the leg's eviction task is gone (the scheduler may then place it there again), and
    whether the new copy is still restoring (no checkpoint of its own yet: the next leg waits for one)."""

    handoff: Handoff | None
    placed_on: tuple[str, ...]
    healthy: bool
    task_gone: bool
    restoring: bool = False

    @property
    def settled(self) -> bool:
        """The next leg may start: the scheduler may go back, and the copy has a state of its own to hand over."""
        return self.task_gone and not self.restoring

    @property
    def landed(self) -> str | None:
        """The cluster the leg ended on, once the handoff is done and the new copy runs Healthy there."""
        if self.handoff is None or self.handoff.phase != DONE or len(self.placed_on) != 1 or not self.healthy:
            return None
        return self.placed_on[0] if self.placed_on[0] != self.handoff.source else None


def leg_view(binding: Mapping[str, Any], started: Handoff) -> LegView:
    """The leg `started` began, as the binding shows it now (a later handoff of another leg is not this one's)."""
    handoff = read_handoff(binding)
    # The annotation keeps the start to the second (format_time), the command's own copy to the microsecond.
    if handoff is not None and (format_time(handoff.started_at), handoff.source) != (
        format_time(started.started_at),
        started.source,
    ):
        handoff = None
    placed = tuple(target.name for target in b.target_clusters(binding))
    health = b.aggregated_status(binding)
    healthy = bool(placed) and all(b.health_of(health.get(cluster)) == HEALTHY for cluster in placed)
    task_gone = not any(task.get("fromCluster") == started.source for task in b.eviction_tasks(binding))
    restoring = any(lineage(binding, cluster) is not None for cluster in placed)
    return LegView(handoff, placed, healthy, task_gone, restoring)
