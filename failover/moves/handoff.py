"""A planned move by savepoint handoff: before the relay moves a workload off a cluster that is reachable, for a reason
that is not the copy's failure (a failback, a drain, a rebalance, a drill), it stops the old copy with a savepoint,
and only once the member relay says the copy stopped (no JobManager runs) writes the Directly eviction that lets
Karmada create the new copy, which restores from that savepoint: nothing lost, nothing processed twice
(docs/design.md, "Planned moves").

The stop goes through the storage fence (failover/fence/): the leader writes a fence record for the old copy's Work,
the member relay suspends the copy (the Flink operator stops it with a savepoint where its upgradeMode takes one),
stops the JobManager the operator leaves, and acknowledges with the savepoint's path. The savepoint is the newest
restorable state of the job, so the restore lookup gives it to the new copy.

The handoff is kept on the binding in `HANDOFF_ANNOTATION` (one JSON object), so a restarted relay carries it on. What
begins it (a Cluster's drain or failback, a WorkloadRebalancer, the `drill` command) writes the annotation; the
binding's own pipeline advances it (`decide_handoff`, the `handoff` step of
controllers/reconcilers/binding_reconciler.py), each phase written on the binding's resourceVersion:

- `stopping`: the record is written (again, if the storage lost it) and the acknowledgement awaited;
- `restoring`: the eviction is written, with `way` SAVEPOINT (the acknowledgement named a savepoint) or
  CHECKPOINT_FALLBACK and `why` (the copy stopped without one, the member relay stopped answering, or no
  acknowledgement came within `DecisionSettings.handoff_timeout`: the move then goes on as a failover would, from the
  newest completed checkpoint);
- `done`: Karmada has taken the workload off the old cluster; the record is removed.

Once stopping has begun the move always completes: a copy left suspended on a cluster the workload stays on would be a
job down until someone noticed. Application failover (the copy is failing) never hands off: a failing job cannot be
trusted to take a savepoint.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from failover.core import binding as b
from failover.core import work as w
from failover.core.annotations import format_time, parse_time, read_json_annotation
from failover.core.api import (
    PLANNED_MOVE_REASONS,
    PRODUCER_DRAIN,
    PRODUCER_DRILL,
    PRODUCER_FAILBACK,
    PRODUCER_REBALANCE,
    REASON_DRAIN,
    REASON_DRILL,
    REASON_FAILBACK,
    REASON_REBALANCE,
    PurgeMode,
)
from failover.core.decision import NORMAL, BindingPatch, Event, clip_message
from failover.core.loop_settings import DecisionSettings
from failover.core.names import is_dns_label, object_key
from failover.fence.control_plane import DEFAULT_POLL, StoredFence
from failover.fence.fence_files import FenceRecord, is_fence_id
from failover.fence.member_relay import suspendable
from failover.state.last_state import recorded_state, reported_state
from failover.state.restoration import lineage

HANDOFF_ANNOTATION = "failover-relay.io/handoff"
# The moves whose target the scheduler picks: their handoff is carried on by the cluster they leave.
SCHEDULER_PICKS = (REASON_DRAIN, REASON_DRILL)
STOPPING, RESTORING, DONE = "stopping", "restoring", "done"
SAVEPOINT, CHECKPOINT_FALLBACK = "savepoint", "checkpoint-fallback"
# How often a move being restored looks whether Karmada has taken the workload off the old cluster: the binding's own
# changes wake it too, so this only bounds a missed event.
RESTORING_POLL = timedelta(seconds=5)
EVENT_HANDOFF = "PlannedMoveHandoff"
NO_SAVEPOINT = "the copy stopped without a savepoint (its upgradeMode takes none)"


@dataclass(frozen=True)
class Handoff:
    """One planned move of a binding's workload, as `HANDOFF_ANNOTATION` keeps it."""

    reason: str  # what moves it: failback
    source: str  # the cluster it leaves
    target: str  # the cluster it is meant to reach; "" for a drain or a drill (the scheduler picks it)
    work: str  # the old copy's Work (its name; namespace karmada-es-<source>); "" for a move that never handed off
    fence_id: str  # that Work's permanent id: the fence record's name; "" likewise
    started_at: datetime
    phase: str = STOPPING
    way: str | None = None  # SAVEPOINT or CHECKPOINT_FALLBACK, once the eviction is written
    why: str | None = None  # why the fallback
    savepoint: str | None = None  # the savepoint the old copy stopped with
    stopped_at: datetime | None = None  # when the member relay acknowledged the stop
    evicted_at: datetime | None = None
    done_at: datetime | None = None

    def annotation(self) -> str:
        fields: dict[str, Any] = {
            "reason": self.reason,
            "from": self.source,
            "to": self.target,
            "work": self.work,
            "fenceId": self.fence_id,
            "startedAt": format_time(self.started_at),
            "phase": self.phase,
        }
        optional = {
            "way": self.way,
            "why": self.why,
            "savepoint": self.savepoint,
            "stoppedAt": self.stopped_at and format_time(self.stopped_at),
            "evictedAt": self.evicted_at and format_time(self.evicted_at),
            "doneAt": self.done_at and format_time(self.done_at),
        }
        fields.update({key: value for key, value in optional.items() if value is not None})
        return json.dumps(fields, sort_keys=True, separators=(",", ":"))


def moved_without_handoff(reason: str, source: str, target: str, why: str, now: datetime) -> Handoff:
    """A planned move whose eviction is written at once, from the newest completed checkpoint, and why."""
    return Handoff(reason, source, target, "", "", now, RESTORING, CHECKPOINT_FALLBACK, why, evicted_at=now)


def read_handoff(binding: Mapping[str, Any]) -> Handoff | None:
    """The binding's handoff, or None when it has none or the annotation does not read (anyone can edit it; one that
    does not read is not acted on)."""
    data = read_json_annotation(b.annotations(binding).get(HANDOFF_ANNOTATION))
    started = parse_time(data.get("startedAt"))
    text = {key: data.get(key) for key in ("reason", "from", "phase")}
    work, fence_id, target = data.get("work"), data.get("fenceId"), data.get("to")
    if started is None or not all(isinstance(value, str) and value for value in text.values()):
        return None
    # A drain or a drill names no target: the scheduler picks it.
    if not isinstance(target, str) or not (target or text["reason"] in SCHEDULER_PICKS):
        return None
    if text["phase"] not in (STOPPING, RESTORING, DONE) or not is_dns_label(text["from"]):
        return None
    # A move that never handed off (the fallback from the start) names no Work; a stopping one must.
    if not isinstance(work, str) or not isinstance(fence_id, str):
        return None
    if text["phase"] == STOPPING and not (work and is_fence_id(fence_id)):
        return None
    optional = {key: data.get(key) if isinstance(data.get(key), str) else None for key in ("way", "why", "savepoint")}
    return Handoff(
        reason=str(text["reason"]),
        source=str(text["from"]),
        target=target,
        work=work,
        fence_id=fence_id,
        started_at=started,
        phase=str(text["phase"]),
        way=optional["way"],
        why=optional["why"],
        savepoint=optional["savepoint"],
        stopped_at=parse_time(data.get("stoppedAt")),
        evicted_at=parse_time(data.get("evictedAt")),
        done_at=parse_time(data.get("doneAt")),
    )


def start_handoff(
    binding: Mapping[str, Any],
    works: Iterable[Mapping[str, Any]],
    source: str,
    target: str,
    reason: str,
    watched: bool | None,
    now: datetime,
) -> Handoff | str:
    """The handoff that moves `binding`'s workload off `source` (Ready, where it runs) towards `target`, or why there
    is none and the move goes as today's, from the newest completed checkpoint. `watched`: a member relay watches
    `source` (its heartbeat is fresh) with the storage fence on; None: the storage fence is off, or its storage could
    not be read."""
    if watched is None:
        return f"the storage fence is off or its storage could not be read, so nothing can stop the copy on {source}"
    if not watched:
        return f"no member relay watches {source} (the storage fence's watcher stops the old copy with a savepoint)"
    live = [
        work for work in works if isinstance(work, dict) and w.work_cluster(work) == source and not b.is_deleting(work)
    ]
    if len(live) != 1:
        return f"the workload has {len(live)} Works on {source}, not one"
    work = live[0]
    fence_id, copies = w.permanent_id(work), w.member_copies(work)
    if not is_fence_id(fence_id) or not is_dns_label(source):
        return f"the Work on {source} has no permanent id to name its fence record"
    if not copies or not all(suspendable(copy) for copy in copies):
        return "the workload is not a Flink job the operator can stop with a savepoint"
    return Handoff(reason, source, target, str(b.metadata(work).get("name")), str(fence_id), now)


@dataclass(frozen=True)
class HandoffStep:
    """What to do now for one handoff: write `record` (when the storage has none), write the move's eviction
    (`evict`), remove the record (`forget`: the old copy is gone), and keep `handoff` as the binding's annotation
    (None: unchanged). `requeue_after`: when to look again."""

    handoff: Handoff | None = None
    record: FenceRecord | None = None
    evict: bool = False
    forget: bool = False
    requeue_after: timedelta | None = None


def advance_handoff(
    binding: Mapping[str, Any],
    handoff: Handoff,
    works: Iterable[Mapping[str, Any]],
    stored: StoredFence | None,
    settings: DecisionSettings,
    now: datetime,
    watched: bool | None = None,
) -> HandoffStep:
    """The next step of `handoff` on `binding`. `stored`: what the storage holds for its record (None: it could not
    be read); `watched`: whether a member relay still watches the source cluster (its heartbeat is fresh; None:
    unknown). A relay gone ends the wait at once: nothing would acknowledge before the timeout."""
    if handoff.phase == DONE:
        return HandoffStep()
    on_source = any(target.name == handoff.source for target in b.target_clusters(binding))
    if handoff.phase == RESTORING:
        evicting = any(task.get("fromCluster") == handoff.source for task in b.eviction_tasks(binding))
        if on_source or evicting:
            return HandoffStep(requeue_after=RESTORING_POLL)
        return HandoffStep(handoff=replace(handoff, phase=DONE, done_at=now), forget=True)
    if not on_source or b.is_deleting(binding):
        # Moved (or deleted) otherwise meanwhile: Karmada deletes the copy the record names in any case.
        left = "the workload left the cluster otherwise before the savepoint came"
        return HandoffStep(
            handoff=replace(handoff, phase=DONE, way=CHECKPOINT_FALLBACK, why=left, done_at=now), forget=True
        )
    deadline = handoff.started_at + settings.handoff_timeout
    ack = stored.ack if stored is not None else None
    if ack is not None:
        way, why = (SAVEPOINT, None) if ack.savepoint else (CHECKPOINT_FALLBACK, NO_SAVEPOINT)
        evicted = replace(
            handoff, phase=RESTORING, way=way, why=why, savepoint=ack.savepoint, stopped_at=ack.acknowledged_at
        )
        return HandoffStep(handoff=replace(evicted, evicted_at=now), evict=True, requeue_after=RESTORING_POLL)
    if watched is False:
        gone = f"the member relay of {handoff.source} stopped answering (no fresh heartbeat) before the savepoint"
        return HandoffStep(
            handoff=replace(handoff, phase=RESTORING, way=CHECKPOINT_FALLBACK, why=gone, evicted_at=now),
            evict=True,
            requeue_after=RESTORING_POLL,
        )
    if now >= deadline:
        late = f"no savepoint within {int(settings.handoff_timeout.total_seconds())} s" + (
            " (the checkpoint storage could not be read)" if stored is None else ""
        )
        return HandoffStep(
            handoff=replace(handoff, phase=RESTORING, way=CHECKPOINT_FALLBACK, why=late, evicted_at=now),
            evict=True,
            requeue_after=RESTORING_POLL,
        )
    record = None
    if stored is not None and not stored.record:
        record = handoff_record(binding, handoff, works, now)
    return HandoffStep(record=record, requeue_after=min(DEFAULT_POLL, deadline - now))


def handoff_record(
    binding: Mapping[str, Any], handoff: Handoff, works: Iterable[Mapping[str, Any]], now: datetime
) -> FenceRecord | None:
    """The fence record that has the member relay stop the old copy: its Work's objects (None when that Work is gone:
    the copy goes with it)."""
    for work in works:
        if isinstance(work, dict) and w.permanent_id(work) == handoff.fence_id:
            ref = b.object_ref(binding)
            label = f"{ref.kind} {object_key(ref.namespace, ref.name)}"
            return FenceRecord(handoff.fence_id, handoff.source, handoff.work, label, w.member_copies(work), now)
    return None


def handoff_in_flight(binding: Mapping[str, Any]) -> bool:
    """A handoff of this binding is stopping its old copy or restoring the new one."""
    handoff = read_handoff(binding)
    return handoff is not None and handoff.phase != DONE


def planned_move_in_flight(binding: Mapping[str, Any]) -> bool:
    """A planned move (failback, drain, rebalance, drill) of this binding is under way: stopping its old copy, or its
    eviction task not over. `failbackMaxInFlight` counts these, over every binding."""
    return handoff_in_flight(binding) or any(
        task.get("reason") in PLANNED_MOVE_REASONS for task in b.eviction_tasks(binding)
    )


def handoff_view(binding: Mapping[str, Any]) -> dict[str, Any] | None:
    """The binding's planned move as `status` shows it: where it goes, its phase in words, which way it went."""
    handoff = read_handoff(binding)
    if handoff is None:
        return None
    if handoff.phase == STOPPING:
        phase = "stopping with savepoint"
    elif handoff.phase == RESTORING:
        phase = "savepoint taken, new copy restoring" if handoff.way == SAVEPOINT else "new copy restoring"
    else:
        phase = "done"
    return {
        "reason": handoff.reason,
        "from": handoff.source,
        "to": handoff.target,
        "phase": handoff.phase,
        "phaseText": phase,
        "handoff": handoff.way,
        "why": handoff.why,
        "savepoint": handoff.savepoint,
        "startedAt": format_time(handoff.started_at),
        "stoppedAt": handoff.stopped_at and format_time(handoff.stopped_at),
        "evictedAt": handoff.evicted_at and format_time(handoff.evicted_at),
        "doneAt": handoff.done_at and format_time(handoff.done_at),
    }


@dataclass(frozen=True)
class MovesBegun:
    """What a Cluster's pass (a drain, a failback) writes to begin planned moves: binding patches (the handoff
    annotation; for a move without a handoff, its eviction too), each on the version of the binding it was decided on;
    Events; when to look again."""

    binding_patches: tuple[BindingPatch, ...] = ()
    events: tuple[Event, ...] = ()
    requeue_after: timedelta | None = None


@dataclass(frozen=True)
class HandoffDecision:
    """What the binding pipeline's `handoff` step writes for the binding's handoff in flight: the binding's merge
    patch (the annotation of its next phase; with the eviction when the old copy has stopped), written on the version
    it was decided on; the fence record to write (the storage has none); the records to remove ((cluster, Work) of an
    old copy gone); the move whose eviction `patch` writes (for the metrics); Events; when to look again."""

    patch: dict[str, Any] | None = None
    record: FenceRecord | None = None
    forget: tuple[tuple[str, str], ...] = ()
    move: Handoff | None = None
    events: tuple[Event, ...] = ()
    requeue_after: timedelta | None = None


def decide_handoff(
    binding: Mapping[str, Any],
    works: Iterable[Mapping[str, Any]],
    stored: Mapping[tuple[str, str], StoredFence | None],
    settings: DecisionSettings,
    now: datetime,
    watched: frozenset[str] | None = None,
) -> HandoffDecision:
    """The next step of `binding`'s handoff in flight, whatever its clusters' state now: once an old copy is stopping,
    its move always completes. The handoff is advanced where it is kept, by the binding's own pipeline (as
    cert-manager advances a Certificate's phases from the Certificate). `stored`: what the storage holds for the
    record of a stopping handoff, by (source cluster, fence id); a key absent or None: it could not be read.
    `watched`: the clusters a member relay watches (None: unknown)."""
    handoff = read_handoff(binding)
    if handoff is None or handoff.phase == DONE:
        return HandoffDecision()
    step = advance_handoff(
        binding,
        handoff,
        works,
        stored.get((handoff.source, handoff.fence_id)),
        settings,
        now,
        None if watched is None else handoff.source in watched,
    )
    forget = ((handoff.source, handoff.work),) if step.forget and handoff.fence_id else ()
    if step.handoff is None:
        return HandoffDecision(record=step.record, forget=forget, requeue_after=step.requeue_after)
    patch: dict[str, Any] = {"metadata": {"annotations": {HANDOFF_ANNOTATION: step.handoff.annotation()}}}
    if not step.evict:
        return HandoffDecision(patch, step.record, forget, requeue_after=step.requeue_after)
    own = step.handoff.way == SAVEPOINT
    patch["spec"] = move_eviction(binding, handoff.source, handoff.reason, settings, now, own_savepoint=own)
    event = Event(NORMAL, EVENT_HANDOFF, handoff_message(step.handoff), b.object_ref(binding))
    return HandoffDecision(patch, step.record, forget, step.handoff, (event,), step.requeue_after)


def evicted_by(patch: Mapping[str, Any], written: Mapping[str, Any]) -> Handoff | None:
    """The planned move whose eviction `patch` wrote, read from the binding as written (`written`): what the metrics
    count once the write landed. None for a patch that only begins a handoff, or forgets an eviction record."""
    handoff = read_handoff(written)
    if "spec" not in patch or handoff is None or handoff.evicted_at is None:
        return None
    return handoff


def handoff_message(handoff: Handoff) -> str:
    """The Event of a handoff's eviction: which way the move went, and why."""
    where = handoff.target or "the cluster the scheduler picks"
    if handoff.way == CHECKPOINT_FALLBACK:
        return clip_message(
            f"{handoff.reason.lower()}: moving from {handoff.source} to {where} from the newest completed checkpoint,"
            f" not a savepoint: {handoff.why}"
        )
    waited = (handoff.stopped_at - handoff.started_at).total_seconds() if handoff.stopped_at else 0.0
    return clip_message(
        f"{handoff.reason.lower()}: the copy on {handoff.source} stopped with savepoint {handoff.savepoint}"
        f" ({waited:.0f} s after the stop began); moving to {where}, which restores from it"
    )


# What each planned move's eviction task says: its message, and its producer.
_EVICTIONS = {
    REASON_FAILBACK: (
        "failback: the workload moves back to a recovered cluster; purged from {} first",
        PRODUCER_FAILBACK,
    ),
    REASON_DRAIN: ("drain: the workload moves off a drained cluster; purged from {} first", PRODUCER_DRAIN),
    REASON_REBALANCE: (
        "rebalance: the scheduler places the workload afresh, off {}; purged from there first",
        PRODUCER_REBALANCE,
    ),
    REASON_DRILL: (
        "drill: failover-relay drill moves the workload off {} on purpose, and back; purged from there first",
        PRODUCER_DRILL,
    ),
}


def move_eviction(
    binding: Mapping[str, Any],
    current: str,
    reason: str,
    settings: DecisionSettings,
    now: datetime,
    own_savepoint: bool = False,
) -> dict[str, Any]:
    """spec of the Directly eviction that moves the workload off `current` for a planned move (`reason`: failback,
    drain, rebalance or drill), carrying its state as a failover does: the old copy is deleted before the new one is
    created. `own_savepoint`: the copy stopped with a savepoint of its own job, which the new copy must restore."""
    spec = b.spec(binding)
    clusters, tasks = spec.get("clusters"), spec.get("gracefulEvictionTasks")
    clusters = clusters if isinstance(clusters, list) else []
    tasks = tasks if isinstance(tasks, list) else []
    replicas = next((target.replicas for target in b.target_clusters(binding) if target.name == current), 0)
    message, producer = _EVICTIONS.get(reason, _EVICTIONS[REASON_FAILBACK])
    task: dict[str, Any] = {
        "fromCluster": current,
        "purgeMode": settings.spell(PurgeMode.DIRECTLY),
        "reason": reason,
        "message": message.format(current),
        "producer": producer,
        "clustersBeforeFailover": [current],
        "creationTimestamp": format_time(now),
    }
    if replicas > 0:
        task["replicas"] = replicas
    # A copy still restoring has no state of its own yet: the move that brought it carries on. Unless it stopped
    # with a savepoint: then its own job has the newest state, and the restore finds that savepoint by its job id,
    # which only the copy's own report names (its last healthy record is not kept while it restores).
    carried = lineage(binding, current)
    own = reported_state(binding, current) if own_savepoint else {}
    state = own or (carried[1] if carried is not None else recorded_state(binding, current))
    if state:
        task["preservedLabelState"] = state
    result: dict[str, Any] = {
        "clusters": [entry for entry in clusters if not (isinstance(entry, dict) and entry.get("name") == current)],
        "gracefulEvictionTasks": [*tasks, task],
    }
    # A failback, a rebalance or a drill with ordered affinities restarts the scheduler from the first term
    # (docs/design.md, "Failback"): a drill's way out then goes where a failover would (the first term with a
    # cluster the task does not keep it off), and its way back home. A drain leaves the scheduler to go on to the
    # next term, as after the taint manager's eviction.
    placement = spec.get("placement")
    restart = reason in (REASON_FAILBACK, REASON_REBALANCE, REASON_DRILL)
    if restart and isinstance(placement, dict) and placement.get("clusterAffinities"):
        result["rescheduleTriggeredAt"] = format_time(now)
    return result
