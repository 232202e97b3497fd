"""The old copy of a Directly-purged workload: fence an unreachable cluster, finish a stuck deletion, remove the
copy a fenced cluster still runs when it returns, and wake Karmada's binding controller once the old copy is gone.

Since v1.15 Karmada's binding controller creates the new Work of a Directly-purged workload only after the old Work
is deleted (`pkg/controllers/binding/binding_controller.go` `checkDirectPurgeOrphanWorks`, re-checked every 5 s,
`requeueIntervalForDirectlyPurge`), and the execution controller keeps the old Work (finalizer
`karmada.io/execution-controller`) until the copy is deleted from the member cluster, which never happens while the
cluster is unreachable (`pkg/controllers/execution/execution_controller.go` `handleWorkDelete`). The job would wait
for the graceful eviction timeout and then start empty. The decisions here, per binding:

- **Fence.** A Work of the binding on the cluster of a Directly task that Karmada is deleting, still held by the
  execution controller's finalizer, on a cluster that has not been Ready for `DecisionSettings.fence_after` (and, if
  `fence_needs_no_execute_taint`, carries a NoExecute taint): record its member copies in `FENCED_ANNOTATION` on
  the binding, then release the Work (remove that finalizer), so the binding controller goes on and creates the new
  copy. Karmada does the same when a cluster is removed (`pkg/controllers/cluster/cluster_controller.go`
  `removeExecutionSpace` strips the finalizer). `fence_after` None never fences: the new copy then waits until the
  member answers again or the task times out.
- **Finish a stuck deletion.** The execution controller retries a failed delete with exponential backoff and nothing
  re-queues it when the cluster turns Ready again (`GenerationChangedPredicate`): the old copy ran beside the new one
  for about 3 minutes. A Work deleting for `stuck_deletion_after` on a cluster that is Ready is finished here the way
  the execution controller would: delete the member copies (through Karmada's cluster proxy), then the finalizer.
- **Delete the old copy as soon as the member answers.** Until it is fenced, and for a fenced cluster's recorded
  copies after, the old copy is deleted through the cluster proxy as soon as the member's apiserver answers again
  (tried every `probe_interval`), without waiting for Karmada to call the cluster Ready (its
  `--cluster-success-threshold` adds 30 s). A recorded copy is left alone when the workload is back on that
  cluster (targeted, or a live Work there): Karmada owns it again, and the record is dropped. The adapter deletes
  only an object whose `work.karmada.io/name` / `work.karmada.io/namespace` annotations name the fenced Work
  (`is_fenced_copy`), with its uid as precondition.
- **A Pull cluster** (`spec.syncMode: Pull`) is never asked through the proxy, which cannot reach it: its Work is
  handed to its agent instead of released (`failover/reconcile/pull_clusters.py`), and its recorded copies are
  forgotten once that Work is gone, i.e. once the returning agent has deleted them.
- **Wake.** When the last Work on a Directly task's cluster is gone and a target has no Work yet, the task's
  `message` gets a note: a spec change, so the binding controller (which reacts only to generation changes)
  creates the new Work at once instead of at its next 5 s re-check.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from failover.core import binding as b
from failover.core.annotations import format_time, parse_time, read_json_annotation
from failover.core.api import EXECUTION_NAMESPACE_PREFIX, PurgeMode
from failover.reconcile.decision import (
    MAX_MESSAGE_LENGTH,
    NORMAL,
    WARNING,
    DecisionSettings,
    Event,
    clip_message,
    earliest,
)
from failover.reconcile.pull_clusters import binding_id_labels, handed_to_agent, is_pull

EXECUTION_FINALIZER = "karmada.io/execution-controller"  # pkg/util/constants.go ExecutionControllerFinalizer
WORK_NAME_ANNOTATION = "work.karmada.io/name"  # pkg/apis/work/v1alpha2/well_known_constants.go
WORK_NAMESPACE_ANNOTATION = "work.karmada.io/namespace"
FENCED_ANNOTATION = "failover-relay.io/fenced-copies"
NO_EXECUTE = "NoExecute"

EVENT_WAITING = "WaitingForUnreachableCluster"
EVENT_FENCED = "ClusterFenced"
EVENT_STUCK_DELETION = "OldCopyDeletionFinished"
EVENT_FENCED_COPY = "FencedCopyRemoved"


@dataclass(frozen=True)
class MemberCopy:
    """One object a Work put on a member cluster."""

    cluster: str
    api_version: str
    kind: str
    namespace: str
    name: str
    work: str  # the Work's name (its namespace is karmada-es-<cluster>)

    def as_record(self) -> dict[str, str]:
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "work": self.work,
        }


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
    # Labels removed in the same patch: a Pull cluster's Work handed to its agent (pull_clusters.py), which keeps
    # its finalizer.
    unlabel: tuple[str, ...] = ()


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


def work_cluster(work: Mapping[str, Any]) -> str | None:
    namespace = b.metadata(work).get("namespace")
    if not isinstance(namespace, str) or not namespace.startswith(EXECUTION_NAMESPACE_PREFIX):
        return None
    return namespace[len(EXECUTION_NAMESPACE_PREFIX) :] or None


def member_copies(work: Mapping[str, Any]) -> tuple[MemberCopy, ...]:
    """The objects a Work puts on its cluster, from its manifests' identities."""
    cluster = work_cluster(work)
    name = b.metadata(work).get("name")
    workload = b.spec(work).get("workload")
    manifests = workload.get("manifests") if isinstance(workload, dict) else None
    copies = []
    for manifest in manifests if isinstance(manifests, list) and cluster and isinstance(name, str) else ():
        meta = b.metadata(manifest)
        api_version, kind = (
            (manifest.get("apiVersion"), manifest.get("kind")) if isinstance(manifest, dict) else (None, None)
        )
        obj_name, namespace = meta.get("name"), meta.get("namespace") or ""
        if all(isinstance(v, str) and v for v in (api_version, kind, obj_name)) and isinstance(namespace, str):
            copies.append(MemberCopy(str(cluster), str(api_version), str(kind), namespace, str(obj_name), str(name)))
    return tuple(copies)


def fenced_copies(binding: Mapping[str, Any]) -> dict[str, list[MemberCopy]]:
    """FENCED_ANNOTATION by cluster; malformed entries are left out."""
    copies: dict[str, list[MemberCopy]] = {}
    for cluster, entries in read_json_annotation(b.annotations(binding).get(FENCED_ANNOTATION)).items():
        for entry in entries if isinstance(cluster, str) and isinstance(entries, list) else ():
            values = [
                entry.get(key) if isinstance(entry, dict) else None
                for key in ("apiVersion", "kind", "namespace", "name", "work")
            ]
            fields = [value for value in values if isinstance(value, str)]
            if len(fields) == len(values) and all(fields[i] for i in (0, 1, 3, 4)):
                copies.setdefault(cluster, []).append(MemberCopy(cluster, *fields))
    return copies


def forget_fenced(binding: Mapping[str, Any], done: Iterable[MemberCopy]) -> Mapping[str, Any] | None:
    """The merge patch that drops `done` from FENCED_ANNOTATION; None when none of them is recorded."""
    current = fenced_copies(binding)
    gone = set(done)
    kept = {cluster: [copy for copy in copies if copy not in gone] for cluster, copies in current.items()}
    if kept == current:
        return None
    return {"metadata": {"annotations": {FENCED_ANNOTATION: _write_fenced(kept)}}}


def is_fenced_copy(member_object: Mapping[str, Any], copy: MemberCopy) -> bool:
    """The object on the member cluster is the one the fenced Work put there (Karmada stamps every applied object
    with its Work's name and namespace), not one someone else created since."""
    notes = b.annotations(member_object)
    return (
        notes.get(WORK_NAME_ANNOTATION) == copy.work
        and notes.get(WORK_NAMESPACE_ANNOTATION) == f"{EXECUTION_NAMESPACE_PREFIX}{copy.cluster}"
    )


def cluster_reachability(cluster: Mapping[str, Any] | None) -> tuple[bool, datetime | None, bool]:
    """(Ready, since when the Ready condition has its status, has a NoExecute taint). A cluster without a Ready
    condition is not Ready, since an unknown time."""
    conditions = b.status(cluster).get("conditions")
    ready, since = False, None
    for condition in conditions if isinstance(conditions, list) else ():
        if isinstance(condition, dict) and condition.get("type") == "Ready":
            ready = condition.get("status") == "True"
            since = parse_time(condition.get("lastTransitionTime"))
    taints = b.spec(cluster).get("taints")
    tainted = any(
        isinstance(taint, dict) and taint.get("effect") == NO_EXECUTE
        for taint in (taints if isinstance(taints, list) else ())
    )
    return ready, since, tainted


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
    storage fence (failover/reconcile/storage_fence.py): fenced at once, without waiting for `fence_after`."""
    if not isinstance(binding, dict) or b.is_deleting(binding):
        return FenceDecision()
    works = [work for work in works if isinstance(work, dict) and work_cluster(work)]
    raw_tasks = b.spec(binding).get("gracefulEvictionTasks")
    raw_tasks = raw_tasks if isinstance(raw_tasks, list) else []
    directly = [task for task in b.eviction_tasks(binding) if _is_directly(task)]
    fenced = fenced_copies(binding)
    new_fenced = {cluster: list(copies) for cluster, copies in fenced.items()}
    releases: list[WorkRelease] = []
    events: list[Event] = []
    delays: list[timedelta | None] = []

    for task in directly:
        cluster_name = task["fromCluster"]
        ready, since, tainted = cluster_reachability(clusters.get(cluster_name))
        pull = is_pull(clusters.get(cluster_name))
        for work in works:
            meta = b.metadata(work)
            finalizers = meta.get("finalizers")
            finalizers = finalizers if isinstance(finalizers, list) else []
            deleting = parse_time(meta.get("deletionTimestamp"))
            if work_cluster(work) != cluster_name or deleting is None or EXECUTION_FINALIZER not in finalizers:
                continue
            if pull and handed_to_agent(work, EXECUTION_FINALIZER):
                continue  # the agent deletes its copy when it is back
            release = WorkRelease(
                cluster_name,
                str(meta.get("namespace")),
                str(meta.get("name")),
                str(meta.get("resourceVersion") or ""),
                tuple(f for f in finalizers if f != EXECUTION_FINALIZER),
            )
            copies = member_copies(work)
            if ready and pull:
                continue  # the agent is there and deletes the copy itself; the proxy cannot reach the member
            if ready:
                finish_at = deleting + settings.stuck_deletion_after
                if now >= finish_at:
                    releases.append(replace(release, delete_first=copies))
                    events.append(
                        Event(
                            NORMAL,
                            EVENT_STUCK_DELETION,
                            clip_message(
                                f"the old copy on {cluster_name} was still being deleted {_seconds(now - deleting)}s"
                                f" after the eviction and {cluster_name} is Ready: deleting it and releasing Work"
                                f" {release.name}"
                            ),
                        )
                    )
                else:
                    delays.append(finish_at - now)
                continue
            fence_at = None if settings.fence_after is None else (since or now) + settings.fence_after
            may_fence = fence_at is not None and (tainted or not settings.fence_needs_no_execute_taint)
            acked = (cluster_name, release.name) in acknowledged
            if may_fence and fence_at is not None and (acked or now >= fence_at):
                for copy in copies:
                    if copy not in new_fenced.setdefault(cluster_name, []):
                        new_fenced[cluster_name].append(copy)
                if pull:
                    releases.append(replace(release, finalizers=tuple(finalizers), unlabel=binding_id_labels(work)))
                    down = _seconds(now - since) if since else "an unknown time"
                    events.append(
                        Event(
                            WARNING,
                            EVENT_FENCED,
                            clip_message(
                                f"{cluster_name} not Ready for {down}s: handed Work {release.name} to the agent of"
                                f" the Pull cluster {cluster_name} so the workload starts elsewhere; the agent deletes"
                                " its copy there when it reconnects"
                            ),
                        )
                    )
                    continue
                releases.append(release)
                events.append(
                    Event(
                        WARNING,
                        EVENT_FENCED,
                        clip_message(
                            f"{cluster_name} not Ready for {_seconds(now - since) if since else 'an unknown time'}s"
                            f"{', its copy suspended (acknowledged through the storage fence)' if acked else ''}:"
                            f" released Work {release.name} so the workload starts elsewhere; its copy there is deleted"
                            " as soon as"
                            f" {cluster_name} answers again"
                        ),
                    )
                )
                continue
            # Until then: if the member answers through the proxy after all, its copy is deleted and the Work
            # released at once, as the execution controller would once the cluster is Ready again. A Pull member's
            # agent does that itself when it is back.
            if pull:
                delays.append(fence_at - now if may_fence and fence_at is not None else None)
            else:
                releases.append(replace(release, delete_first=copies, probe=True))
                delays.append(
                    settings.probe_interval
                    if fence_at is None or not may_fence
                    else min(fence_at - now, settings.probe_interval)
                )
            if settings.fence_after is None:
                why = "fencing is off, so only the member answering again or the task's grace period ends the wait"
            elif not may_fence:
                why = "it is fenced only once it carries a NoExecute taint"
            else:
                why = f"fenced at {format_time(fence_at)}" if fence_at else ""
            events.append(
                Event(
                    WARNING,
                    EVENT_WAITING,
                    clip_message(
                        f"the new copy waits until the old one on {cluster_name} is deleted; {cluster_name} is not"
                        f" Ready since {format_time(since) if since else 'an unknown time'}; {why}"
                    ),
                )
            )

    cleanups: list[MemberCopy] = []
    deleted_by_agent: list[MemberCopy] = []
    targets = {target.name for target in b.target_clusters(binding)}
    for cluster_name, held in fenced.items():
        pull = is_pull(clusters.get(cluster_name))
        if not pull and not cluster_reachability(clusters.get(cluster_name))[0]:
            delays.append(settings.probe_interval)  # tried through the proxy until the member answers
        back = cluster_name in targets or any(
            work_cluster(work) == cluster_name and not b.is_deleting(work) for work in works
        )
        if back:  # Karmada put the workload there again and owns that copy
            new_fenced[cluster_name] = [c for c in new_fenced.get(cluster_name, []) if c not in held]
        elif pull:  # the agent removes the Work's finalizer only after deleting the copy: no Work, no copy
            left = {b.metadata(work).get("name") for work in works if work_cluster(work) == cluster_name}
            new_fenced[cluster_name] = [c for c in new_fenced.get(cluster_name, []) if c not in held or c.work in left]
            deleted_by_agent.extend(c for c in held if c.work not in left)
        else:
            cleanups.extend(held)

    patch: dict[str, Any] = {}
    if {k: v for k, v in new_fenced.items() if v} != fenced:
        patch["metadata"] = {"annotations": {FENCED_ANNOTATION: _write_fenced(new_fenced)}}
    woken = _wake(raw_tasks, directly, works, targets, clusters)
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
        releases=tuple(releases),
        cleanups=tuple(cleanups),
        deleted_by_agent=tuple(deleted_by_agent),
        woken=tuple(woken),
        events=tuple(events),
        requeue_after=earliest(*delays),
    )


def _wake(
    raw_tasks: list[Any],
    directly: list[dict[str, Any]],
    works: list[Mapping[str, Any]],
    targets: set[str],
    clusters: Mapping[str, Mapping[str, Any]],
) -> list[str]:
    """The Directly tasks whose cluster has no Work of the binding left (a Work handed to a Pull cluster's agent is
    no longer the binding's for Karmada) while a target still lacks one."""
    with_work = {
        cluster
        for work in works
        if (cluster := work_cluster(work))
        and not (is_pull(clusters.get(cluster)) and handed_to_agent(work, EXECUTION_FINALIZER))
    }
    if not targets or targets <= with_work:
        return []
    return [
        task["fromCluster"]
        for task in directly
        if task["fromCluster"] not in with_work and _note(task["fromCluster"]) not in str(task.get("message"))
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


def _is_directly(task: Mapping[str, Any]) -> bool:
    try:
        return PurgeMode(task.get("purgeMode")).is_directly
    except ValueError:
        return False


def _seconds(delta: timedelta) -> int:
    return int(delta.total_seconds())


def _write_fenced(copies: Mapping[str, list[MemberCopy]]) -> str | None:
    kept = {cluster: [copy.as_record() for copy in entries] for cluster, entries in sorted(copies.items()) if entries}
    return json.dumps(kept, separators=(",", ":"), sort_keys=True) if kept else None
