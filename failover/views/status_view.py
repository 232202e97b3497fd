"""What `failover-relay status` shows for one workload, computed from what the cluster and the storage hold.

A plain function of the binding (as Karmada and the loop left it), the Clusters, the restore lookup's answer and
`now`: where the workload runs, each target's health as Karmada reflects it (`status.aggregatedStatus`), since when
it is Unhealthy and when the loop will evict it (`failover-relay.io/unhealthy-since` + tolerationSeconds), until when a
new copy is left to restore (`failover.reconcile.failover_budget.restoring_until`, with the relay's settings), whether
a due eviction is held because no other cluster can take the workload (`failover.reconcile.last_cluster`), the eviction
tasks in flight with their preserved state and purge mode, the state a new copy would be given now, and the last
moves of the failover history (failover/state/history.py). `restore_subject` says which object the restore lookup must
be asked about; relay/commands/status.py fetches (relay/commands/restore_lookup.py looks the state up),
relay/commands/status_tables.py prints the tables; none of them changes anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from failover.core import binding as b
from failover.core.annotations import format_time, parse_time, read_time_annotation
from failover.core.cluster import is_pull, reachability
from failover.core.loop_settings import DecisionSettings
from failover.core.names import object_key
from failover.fence.control_plane import without_relay
from failover.fence.fence_files import FenceAck, FenceRecord, Heartbeat
from failover.fence.fenced_copies import fenced_copies
from failover.moves.handoff import handoff_view
from failover.reconcile.application_failover import UNHEALTHY_SINCE_ANNOTATION, toleration_seconds
from failover.reconcile.failover_budget import restoring_until
from failover.reconcile.last_cluster import why_not_takers
from failover.state import restoration
from failover.state.checkpoints import LookupResult
from failover.state.empty_start import START_WITHOUT_STATE_ANNOTATION, StateLoss, state_losses
from failover.state.history import JOB_STATUS, read_history, reflected_run, restore_hints
from failover.state.jobid import job_id_problem
from failover.state.last_state import preservation_rules, recorded_states
from failover.state.preserved_state import UNSTAMPED, task_state, with_labels

# The moves a person wants at a glance; the annotation keeps more.
SHOWN_MOVES = 5


@dataclass(frozen=True)
class RestoreSubject:
    """The object a new copy would be created as now (the template with the state it would carry), and where that
    state comes from."""

    obj: Mapping[str, Any]
    job_id: str
    source: str  # "eviction task from member1", "running on member2", "last healthy report on member1"


def is_stateful(binding: Mapping[str, Any]) -> bool:
    """Under a failover policy that preserves state (application or cluster statePreservation rules)."""
    return bool(preservation_rules(binding))


def workload_name(binding: Mapping[str, Any]) -> str:
    resource = b.spec(binding).get("resource")
    resource = resource if isinstance(resource, dict) else {}
    namespace, name = resource.get("namespace"), resource.get("name")
    return f"{namespace}/{name}" if namespace else str(name)


def restore_subject(
    binding: Mapping[str, Any], template: Mapping[str, Any] | None, job_id_label: str
) -> RestoreSubject | None:
    """The template as the relay would see the new copy if it were created now, or None when no job id is known.

    The job id is the one a failover would preserve: the newest eviction task's state (a failover in flight), else
    the job a target reports now, else the last healthy report of any copy. The restore hints of the history are
    set as the Work mutator sets them.
    """
    if not isinstance(template, dict):
        return None
    labels, source = {}, ""
    tasks = [
        (parse_time(task.get("creationTimestamp")), index, task)
        for index, task in enumerate(b.eviction_tasks(binding))
        if task_state(binding, task)
    ]
    if tasks:
        newest = max(tasks, key=lambda entry: (entry[0] or UNSTAMPED, entry[1]))[2]
        labels, source = dict(task_state(binding, newest)), f"eviction task from {newest['fromCluster']}"
    else:
        for cluster, item in sorted(b.aggregated_status(binding).items()):
            job_id = reflected_run(item)[0]
            if job_id and cluster in {target.name for target in b.target_clusters(binding)}:
                labels, source = {job_id_label: job_id}, f"running on {cluster}"
                break
        else:
            records = recorded_states(binding)
            if records:
                cluster, state = max(records.items(), key=lambda entry: entry[1].at)
                labels, source = dict(state.labels), f"last healthy report on {cluster}"
    job_id = labels.get(job_id_label) or next((v for v in labels.values() if not job_id_problem(v)), "")
    if not job_id:
        return None
    labels.setdefault(job_id_label, job_id)
    obj = with_labels(with_labels(template, labels), restore_hints(binding, labels), "annotations")
    return RestoreSubject(obj, job_id, source)


def workload_view(
    binding: Mapping[str, Any],
    clusters: Mapping[str, Mapping[str, Any]],
    now: datetime,
    subject: RestoreSubject | None = None,
    restore: LookupResult | None = None,
    storage: str = "",
    restore_problem: str = "",
    decisions: DecisionSettings | None = None,
    fence_records: Mapping[str, Sequence[tuple[FenceRecord, FenceAck | None]]] | None = None,
    member_relays: Mapping[str, Heartbeat] | None = None,
) -> dict[str, Any]:
    """Everything the status command shows for one workload, as plain JSON-able data. `decisions` are the relay's
    settings (its restore grace); None takes the defaults. `fence_records`: the storage fence's records (and their
    acknowledgements) by cluster, as the checkpoint storage holds them (failover/fence/fence_files.py)."""
    decisions = decisions or DecisionSettings()
    resource = b.spec(binding).get("resource")
    resource = resource if isinstance(resource, dict) else {}
    application = b.application_failover(binding) or {}
    toleration = toleration_seconds(application) if application else None
    moves = [move.as_json() for move in read_history(binding).moves[-SHOWN_MOVES:]]
    return {
        "workload": workload_name(binding),
        "kind": resource.get("kind"),
        "binding": b.object_ref(binding).name,
        "placement": [target.name for target in b.target_clusters(binding)],
        "tolerationSeconds": toleration,
        "purgeMode": application.get("purgeMode"),
        "targets": _targets(binding, clusters, toleration, decisions, now),
        "evictions": [_eviction(binding, task) for task in b.eviction_tasks(binding)],
        "fences": _fences(binding, clusters, decisions, now, fence_records or {}, member_relays),
        # The last planned move (failback) and its savepoint handoff (failover/moves/handoff.py).
        "plannedMove": handoff_view(binding),
        "restore": _restore(subject, restore, storage, restore_problem),
        "history": list(reversed(moves)),
        "at": format_time(now),
    }


def _targets(
    binding: Mapping[str, Any],
    clusters: Mapping[str, Mapping[str, Any]],
    toleration: int | None,
    decisions: DecisionSettings,
    now: datetime,
) -> list[dict[str, Any]]:
    """Each target as the loop sees it: its health (`status.aggregatedStatus`), since when it is Unhealthy and when
    application failover evicts it (`failover-relay.io/unhealthy-since` + tolerationSeconds, None without
    application failover), until when a new copy is left to restore (`failover.reconcile.failover_budget`), whether a
    due eviction is held because no other cluster can take the workload (`failover.reconcile.last_cluster`), and the
    state it runs with."""
    since = read_time_annotation(b.annotations(binding).get(UNHEALTHY_SINCE_ANNOTATION))
    health = b.aggregated_status(binding)
    moved_in = restoration.restoring(binding)
    losses = state_losses(binding)
    targets = []
    for target in b.target_clusters(binding):
        item = health.get(target.name)
        unhealthy_since = since.get(target.name)
        eviction = (
            unhealthy_since + timedelta(seconds=toleration)
            if unhealthy_since is not None and toleration is not None
            else None
        )
        reflected = (item or {}).get("status")
        job_status = reflected.get(JOB_STATUS) if isinstance(reflected, dict) else None
        restoring = restoring_until(binding, target.name, decisions) if toleration is not None else None
        if restoring is not None and (now >= restoring or b.health_of(item) == b.HEALTHY):
            restoring = None
        kept = eviction is not None and now >= eviction and why_not_takers(binding, clusters, {target.name}) is not None
        targets.append(
            {
                "cluster": target.name,
                "clusterReady": reachability(clusters.get(target.name)).ready,
                "health": b.health_of(item),
                "jobId": reflected_run(item)[0] or None,
                "jobState": job_status.get("state") if isinstance(job_status, dict) else None,
                "unhealthySince": _time(unhealthy_since),
                "evictionAt": _time(eviction),
                "evictionIn": _seconds_until(eviction, now),
                "restoringUntil": _time(restoring),
                "keptOnLastCluster": kept,
                # Moved here and no checkpoint of its own yet: a failover carries the state its move carried.
                "awaitingCheckpoint": _awaiting(moved_in.get(target.name)),
                # Runs without the state its move carried, or is parked for it (failover/state/empty_start.py).
                "withoutState": _loss(losses.get(target.name)),
            }
        )
    return targets


def _eviction(binding: Mapping[str, Any], task: Mapping[str, Any]) -> dict[str, Any]:
    """An eviction task in flight: from where, why, how the old copy goes, and the state the new copy is given."""
    return {
        "fromCluster": task["fromCluster"],
        "reason": task.get("reason"),
        "purgeMode": task.get("purgeMode"),
        "preservedState": task_state(binding, task) or None,
        "created": task.get("creationTimestamp"),
        "producer": task.get("producer"),
    }


def _loss(loss: StateLoss | None) -> dict[str, Any] | None:
    if loss is None:
        return None
    return {**loss.as_json(), "accept": f"{START_WITHOUT_STATE_ANNOTATION}={loss.job_id}"}


def _fences(
    binding: Mapping[str, Any],
    clusters: Mapping[str, Mapping[str, Any]],
    decisions: DecisionSettings,
    now: datetime,
    records: Mapping[str, Sequence[tuple[FenceRecord, FenceAck | None]]],
    relays: Mapping[str, Heartbeat] | None = None,
) -> list[dict[str, Any]]:
    """The fence state per cluster (failover/fence/old_copy.py): `fenced` (the old copy recorded, deleted when the
    member answers, or on a Pull cluster (`pull`, only there) by its agent when it reconnects) or `waiting` (a
    Directly eviction from a cluster that is not Ready, fenced at `fenceAt`); with the storage fence
    (failover/fence/control_plane.py) a waiting cluster is `fencing` once the record is written (`recordWrittenAt`)
    and `acknowledged` once its member relay reported the old copy stopped (`acknowledgedAt`, `savepoint`), which
    fences it at once. `memberRelay` (where the storage was read): whether a member relay watches the cluster."""
    fenced = fenced_copies(binding)
    fences: list[dict[str, Any]] = [
        {
            "cluster": cluster,
            "state": "fenced",
            **({"pull": True} if is_pull(clusters.get(cluster)) else {}),
            "copies": [f"{copy.kind} {copy.namespace}/{copy.name}".replace(" /", " ") for copy in copies],
        }
        for cluster, copies in sorted(fenced.items())
    ]
    for task in b.eviction_tasks(binding):
        cluster = task["fromCluster"]
        if cluster in fenced or not b.is_directly(task):
            continue
        reach = reachability(clusters.get(cluster))
        ready, since = reach.ready, reach.since
        if ready:
            continue
        fence_at = since + decisions.fence_after if since is not None and decisions.fences else None
        entry: dict[str, Any] = {
            "cluster": cluster,
            "state": "waiting",
            **({"pull": True} if is_pull(clusters.get(cluster)) else {}),
            "since": _time(since),
            "fenceAt": _time(fence_at),
            "copies": [],
        }
        ref = b.object_ref(binding)
        label = f"{ref.kind} {object_key(ref.namespace, ref.name)}"  # as storage_fence.wanted_records writes it
        for record, ack in records.get(cluster, ()):
            if record.binding == label:
                entry["state"] = "acknowledged" if ack else "fencing"
                entry["recordWrittenAt"] = _time(record.written_at)
                entry["acknowledgedAt"] = _time(ack.acknowledged_at) if ack else None
                entry["savepoint"] = ack.savepoint if ack else None
        fences.append(entry)
    if relays is not None:
        unwatched = set(without_relay({fence["cluster"] for fence in fences}, relays, now))
        for fence in fences:
            fence["memberRelay"] = fence["cluster"] not in unwatched
    return fences


def _restore(subject: RestoreSubject | None, result: LookupResult | None, storage: str, problem: str) -> dict[str, Any]:
    if subject is None:
        return {"outcome": None, "reason": problem or "no job id known for this workload"}
    view: dict[str, Any] = {"jobId": subject.job_id, "jobIdFrom": subject.source}
    if result is None:
        return {**view, "outcome": None, "reason": problem or "no lookup"}
    view.update(
        outcome=result.outcome.value,
        path=result.path,
        source=result.source or None,
        fallback=result.fallback or None,
        reason=result.reason or None,
        storage=storage if result.path else None,
    )
    return view


def _awaiting(record: restoration.Restoring | None) -> dict[str, Any] | None:
    if record is None:
        return None
    return {"since": _time(record.since), "from": record.from_cluster, "carried": dict(record.carried)}


def _time(moment: datetime | None) -> str | None:
    return format_time(moment) if moment is not None else None


def _seconds_until(moment: datetime | None, now: datetime) -> int | None:
    return max(int((moment - now).total_seconds()), 0) if moment is not None else None
