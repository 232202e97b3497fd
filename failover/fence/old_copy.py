"""The old copy of a Directly-purged workload: fence an unreachable cluster, finish a stuck deletion, remove the
copy a fenced cluster still runs when it returns, and wake Karmada's binding controller once the old copy is gone.

A held Work (failover/fence/waiting.py) on a cluster that is unreachable is never released by Karmada: the job would
wait for the graceful eviction timeout and then start empty. The decisions here, per binding:

- **Fence.** A held Work on a cluster that has not been Ready for `DecisionSettings.fence_after` (and, with
  `fencing: noExecuteTaint`, carries a NoExecute taint), or whose copies the member relay acknowledged suspended
  through the storage fence (failover/fence/control_plane.py): record its member copies on the binding
  (failover/fence/fenced_copies.py), then release the Work (remove the execution controller's finalizer), so the
  binding controller goes on and creates the new copy. Karmada does the same when a cluster is removed
  (`pkg/controllers/cluster/cluster_controller.go` `removeExecutionSpace` strips the finalizer). With `fencing: off`
  nothing is fenced: the new copy then waits until the member answers again or the task times out.
- **Finish a stuck deletion.** The execution controller retries a failed delete with exponential backoff and nothing
  re-queues it when the cluster turns Ready again (`GenerationChangedPredicate`): the old copy ran beside the new one
  for about 3 minutes. A Work deleting for `stuck_deletion_after` on a cluster that is Ready is finished here the way
  the execution controller would: delete the member copies (through Karmada's cluster proxy), then the finalizer.
- **Delete the old copy as soon as the member answers.** Until it is fenced, and for a fenced cluster's recorded
  copies after, the old copy is deleted through the cluster proxy as soon as the member's apiserver answers again
  (tried every `probe_interval`), without waiting for Karmada to call the cluster Ready (its
  `--cluster-success-threshold` adds 30 s). A recorded copy is left alone when the workload is back on that
  cluster (targeted, or a live Work there): Karmada owns it again, and the record is dropped. The adapter deletes
  only an object its Work applied (`failover.core.work.applied_by`), with its uid as precondition.
- **A Pull cluster** (`spec.syncMode: Pull`) is never asked through the proxy. Its apiserver is reached by its agent,
  not by the control plane: the agent registers the Cluster with the API endpoint it is told
  (`cmd/agent/app/agent.go` `generateClusterInControllerPlane`), typically one the control plane cannot reach, so the
  proxy answers 500 there. The agent's own execution controller deletes a member object when its Work is deleted,
  once it sees its cluster Ready, and only then removes the Work's finalizer; a Work that is gone leaves the object
  behind for good (`pkg/controllers/status/work_status_controller.go` `syncWorkStatus`; karmada#5406). So a fenced
  Work there is handed to the agent instead of released: it keeps its finalizer and its deletion, and loses the
  binding's permanent-id labels, the only thing by which the binding controller counts it as the binding's orphan
  Work (`failover.core.work.BINDING_ID_LABELS`). The binding controller then creates the new copy; the returning
  agent deletes the stale copy first and removes the finalizer. Its recorded copies are forgotten once that Work is
  gone.
- **Wake.** When the last Work on a Directly task's cluster is gone and a target has no Work yet, the task's
  `message` gets a note: a spec change, so the binding controller (which reacts only to generation changes)
  creates the new Work at once instead of at its next 5 s re-check (`requeueIntervalForDirectlyPurge`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from failover.core import binding as b
from failover.core import cluster as c
from failover.core import work as w
from failover.core.annotations import format_time, parse_time
from failover.core.decision import (
    MAX_MESSAGE_LENGTH,
    NORMAL,
    WARNING,
    Event,
    clip_message,
    earliest,
    whole_seconds,
)
from failover.core.loop_settings import DecisionSettings
from failover.core.work import MemberCopy
from failover.fence.fenced_copies import fenced_copies, fenced_patch
from failover.fence.waiting import HeldWork, fence_time, held_works

EVENT_WAITING = "WaitingForUnreachableCluster"
EVENT_FENCED = "ClusterFenced"
EVENT_STUCK_DELETION = "OldCopyDeletionFinished"
EVENT_FENCED_COPY = "FencedCopyRemoved"


@dataclass(frozen=True)
class WorkRelease:
    """Remove the execution finalizer of one Work, after deleting `delete_first` from the member cluster."""

    cluster: str
    namespace: str
    name: str
    resource_version: str
    finalizers: tuple[str, ...]  # what remains
    delete_first: tuple[MemberCopy, ...] = ()
    # The cluster is not Ready: try the member through the proxy, and expect no answer (no warning when none comes).
    probe: bool = False
    # Labels removed in the same patch: a Pull cluster's Work handed to its agent, which keeps its finalizer.
    unlabel: tuple[str, ...] = ()

    @property
    def why(self) -> str:
        """How the Work goes: handed (to a Pull cluster's agent), fenced (its cluster unreachable, its copies
        recorded) or deleted (its copies deleted through the proxy first)."""
        return "handed" if self.unlabel else "deleted" if self.delete_first else "fenced"


@dataclass(frozen=True)
class FenceDecision:
    """`binding_patch` (metadata.annotations and/or spec.gracefulEvictionTasks) is applied first with the binding's
    resourceVersion, then each `release`, then each `cleanup` (delete through the cluster proxy, then
    `forget_fenced`). `deleted_by_agent`: fenced copies on a Pull cluster whose handed Work is gone, so its agent
    deleted them (`binding_patch` already forgets them; their storage fence records can go too). `requeue_after`:
    when a fence or a stuck-deletion deadline runs out."""

    binding_patch: Mapping[str, Any] | None = None
    releases: tuple[WorkRelease, ...] = ()
    cleanups: tuple[MemberCopy, ...] = ()
    deleted_by_agent: tuple[MemberCopy, ...] = ()
    woken: tuple[str, ...] = ()
    events: tuple[Event, ...] = ()
    requeue_after: timedelta | None = None


@dataclass
class _Decided:
    """What the decision gathers while it walks the held Works and the fenced copies."""

    fenced: dict[str, list[MemberCopy]]
    releases: list[WorkRelease]
    events: list[Event]
    delays: list[timedelta | None]


def decide_fencing(
    binding: Mapping[str, Any],
    works: Iterable[Mapping[str, Any]],
    clusters: Mapping[str, Mapping[str, Any]],
    settings: DecisionSettings,
    now: datetime,
    acknowledged: Collection[tuple[str, str]] = (),
) -> FenceDecision:
    """Decide for one binding over its Works (all of them, across execution namespaces) and the Clusters.
    `acknowledged`: (cluster, Work name) of old Works whose copies the member relay reported suspended through the
    storage fence: fenced at once, without waiting for `fence_after`."""
    if not isinstance(binding, dict) or b.is_deleting(binding):
        return FenceDecision()
    works = [work for work in works if isinstance(work, dict) and w.work_cluster(work)]
    fenced = fenced_copies(binding)
    decided = _Decided({cluster: list(copies) for cluster, copies in fenced.items()}, [], [], [])
    for held in held_works(binding, works, clusters):
        if held.pull and w.handed_to_agent(held.work):
            continue  # the agent deletes its copy when it is back
        if held.reach.ready:
            if not held.pull:  # a Pull cluster's agent is there and deletes the copy itself
                _finish_stuck_deletion(held, settings, now, decided)
            continue
        at = fence_time(held.reach, settings, now)
        acked = (held.cluster, _name(held.work)) in acknowledged
        if at is not None and (acked or now >= at):
            _fence(held, acked, now, decided)
        else:
            _wait(held, at, settings, now, decided)

    cleanups, deleted_by_agent = _returned(binding, works, clusters, fenced, settings, decided)
    patch: dict[str, Any] = {}
    if {k: v for k, v in decided.fenced.items() if v} != fenced:
        patch.update(fenced_patch(decided.fenced))
    raw_tasks = b.spec(binding).get("gracefulEvictionTasks")
    raw_tasks = raw_tasks if isinstance(raw_tasks, list) else []
    targets = {target.name for target in b.target_clusters(binding)}
    woken = _wake(binding, works, targets, clusters)
    if woken:
        patch["spec"] = {
            "gracefulEvictionTasks": [
                {**task, "message": _with_note(task)}
                if isinstance(task, dict) and task.get("fromCluster") in woken
                else task
                for task in raw_tasks
            ]
        }
    return FenceDecision(
        binding_patch=patch or None,
        releases=tuple(decided.releases),
        cleanups=tuple(cleanups),
        deleted_by_agent=tuple(deleted_by_agent),
        woken=tuple(woken),
        events=tuple(decided.events),
        requeue_after=earliest(*decided.delays),
    )


def _name(work: Mapping[str, Any]) -> str:
    return str(b.metadata(work).get("name"))


def _release(held: HeldWork) -> WorkRelease:
    """The release of a held Work: every finalizer but the execution controller's."""
    meta = b.metadata(held.work)
    return WorkRelease(
        held.cluster,
        str(meta.get("namespace")),
        str(meta.get("name")),
        str(meta.get("resourceVersion") or ""),
        tuple(name for name in w.finalizers(held.work) if name != w.EXECUTION_FINALIZER),
    )


def _down_for(held: HeldWork, now: datetime) -> str:
    return str(whole_seconds(now - held.reach.since)) if held.reach.since else "an unknown time"


def _finish_stuck_deletion(held: HeldWork, settings: DecisionSettings, now: datetime, decided: _Decided) -> None:
    """A held Work on a Ready cluster: deleted through the proxy once it has been deleting `stuck_deletion_after`."""
    deleting = parse_time(b.metadata(held.work).get("deletionTimestamp"))
    if deleting is None:
        return
    finish_at = deleting + settings.stuck_deletion_after
    if now < finish_at:
        decided.delays.append(finish_at - now)
        return
    release = replace(_release(held), delete_first=w.member_copies(held.work))
    decided.releases.append(release)
    decided.events.append(
        Event(
            NORMAL,
            EVENT_STUCK_DELETION,
            clip_message(
                f"the old copy on {held.cluster} was still being deleted {whole_seconds(now - deleting)}s"
                f" after the eviction and {held.cluster} is Ready: deleting it and releasing Work {release.name}"
            ),
        )
    )


def _fence(held: HeldWork, acked: bool, now: datetime, decided: _Decided) -> None:
    """Record the held Work's copies on the binding and release it (or hand it to a Pull cluster's agent)."""
    recorded = decided.fenced.setdefault(held.cluster, [])
    recorded += [copy for copy in w.member_copies(held.work) if copy not in recorded]
    release = _release(held)
    if held.pull:
        handed = replace(release, finalizers=tuple(w.finalizers(held.work)), unlabel=w.binding_id_labels(held.work))
        decided.releases.append(handed)
        message = (
            f"{held.cluster} not Ready for {_down_for(held, now)}s: handed Work {release.name} to the agent of the"
            f" Pull cluster {held.cluster} so the workload starts elsewhere; the agent deletes its copy there when it"
            " reconnects"
        )
    else:
        decided.releases.append(release)
        suspended = ", its copy suspended (acknowledged through the storage fence)" if acked else ""
        message = (
            f"{held.cluster} not Ready for {_down_for(held, now)}s{suspended}: released Work {release.name} so the"
            f" workload starts elsewhere; its copy there is deleted as soon as {held.cluster} answers again"
        )
    decided.events.append(Event(WARNING, EVENT_FENCED, clip_message(message)))


def _wait(
    held: HeldWork, fence_at: datetime | None, settings: DecisionSettings, now: datetime, decided: _Decided
) -> None:
    """Until the fence: if the member answers through the proxy after all, its copy is deleted and the Work released
    at once, as the execution controller would once the cluster is Ready again. A Pull member's agent does that
    itself when it is back."""
    if held.pull:
        decided.delays.append(None if fence_at is None else fence_at - now)
    else:
        decided.releases.append(replace(_release(held), delete_first=w.member_copies(held.work), probe=True))
        decided.delays.append(
            settings.probe_interval if fence_at is None else min(fence_at - now, settings.probe_interval)
        )
    if not settings.fences:
        why = "fencing is off, so only the member answering again or the task's grace period ends the wait"
    elif fence_at is None:
        why = "it is fenced only once it carries a NoExecute taint"
    else:
        why = f"fenced at {format_time(fence_at)}"
    since = format_time(held.reach.since) if held.reach.since else "an unknown time"
    decided.events.append(
        Event(
            WARNING,
            EVENT_WAITING,
            clip_message(
                f"the new copy waits until the old one on {held.cluster} is deleted; {held.cluster} is not Ready"
                f" since {since}; {why}"
            ),
        )
    )


def _returned(
    binding: Mapping[str, Any],
    works: list[Mapping[str, Any]],
    clusters: Mapping[str, Mapping[str, Any]],
    fenced: Mapping[str, list[MemberCopy]],
    settings: DecisionSettings,
    decided: _Decided,
) -> tuple[list[MemberCopy], list[MemberCopy]]:
    """(the recorded copies to delete through the proxy, those a Pull cluster's agent has deleted): a recorded copy
    is forgotten when the workload is back on its cluster, and deleted once the member answers otherwise."""
    cleanups: list[MemberCopy] = []
    deleted_by_agent: list[MemberCopy] = []
    targets = {target.name for target in b.target_clusters(binding)}
    for cluster, held in fenced.items():
        pull = c.is_pull(clusters.get(cluster))
        if not pull and not c.is_ready(clusters.get(cluster)):
            decided.delays.append(settings.probe_interval)  # tried through the proxy until the member answers
        back = cluster in targets or any(w.work_cluster(work) == cluster and not b.is_deleting(work) for work in works)
        kept = decided.fenced.get(cluster, [])
        if back:  # Karmada put the workload there again and owns that copy
            decided.fenced[cluster] = [copy for copy in kept if copy not in held]
        elif pull:  # the agent removes the Work's finalizer only after deleting the copy: no Work, no copy
            left = {b.metadata(work).get("name") for work in works if w.work_cluster(work) == cluster}
            decided.fenced[cluster] = [copy for copy in kept if copy not in held or copy.work in left]
            deleted_by_agent.extend(copy for copy in held if copy.work not in left)
        else:
            cleanups.extend(held)
    return cleanups, deleted_by_agent


def _wake(
    binding: Mapping[str, Any],
    works: list[Mapping[str, Any]],
    targets: set[str],
    clusters: Mapping[str, Mapping[str, Any]],
) -> list[str]:
    """The Directly tasks whose cluster has no Work of the binding left (a Work handed to a Pull cluster's agent is
    no longer the binding's for Karmada) while a target still lacks one."""
    with_work = {
        cluster
        for work in works
        if (cluster := w.work_cluster(work)) and not (c.is_pull(clusters.get(cluster)) and w.handed_to_agent(work))
    }
    if not targets or targets <= with_work:
        return []
    return [
        task["fromCluster"]
        for task in b.eviction_tasks(binding)
        if b.is_directly(task)
        and task["fromCluster"] not in with_work
        and _note(task["fromCluster"]) not in str(task.get("message"))
    ]


def _note(cluster: str) -> str:
    return f"[failover-relay: the old copy on {cluster} is gone]"


def _with_note(task: Mapping[str, Any]) -> str:
    """The task's message with the note at its end, within the CRD's 1024 characters."""
    message = task.get("message")
    note = _note(str(task["fromCluster"]))
    if not isinstance(message, str) or not message:
        return note
    return f"{message[: MAX_MESSAGE_LENGTH - len(note) - 2]} {note}"
