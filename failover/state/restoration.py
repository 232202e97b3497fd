"""When a moved copy is restored: once its new job has completed a checkpoint of its own, not once it first runs.

A Flink job restored from a checkpoint runs before it has a state of its own: in NO_CLAIM (Flink's default) its first
checkpoint is a full one, ForSt re-uploads its files, and recovering large in-flight state can take hours before any
checkpoint completes (FLIP-547). Until then its new job id has nothing to restore from. Karmada's eviction task, which
carries the state the move preserved, ends as soon as the new copy is Healthy (or at its grace period), and with it
that state. So when a task of a failover that carried state ends, the loop records each target the move brought in
`RESTORING_ANNOTATION` on the binding, with the state it carried, until the new copy is restored:

    {"member2": {"since": "2026-11-28T12:00:00Z", "from": "member1",
                 "carried": {"application.karmada.io/failover-jobid": "9a27..."}}}

While a copy is restoring,
- a second failover away from it carries the state its move carried (the lineage: `lineage`), not the new job's id;
- its last healthy report is not recorded as the workload's last good state (failover/state/last_state.py);
- an Unhealthy report from it is taken as the restore going on for `restore_grace` after the move
  (failover/reconcile/failover_budget.py `restoring_until`), unless it reports a terminal failure
  (`terminally_failed`): the grace protects a copy that restores, not one that has failed.

It is restored (`decide_restored`) when the checkpoint storage holds a completed checkpoint of the job it runs now,
written after the move (the loop reads the storage: controllers/reconcilers/restore_watch.py), or, where the loop cannot
read the storage (no `savepoint.checkpointRoot`), as soon as it is Healthy: the rule of before, said at start-up.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from failover.core import binding as b
from failover.core.annotations import format_time, parse_time, read_json_annotation
from failover.core.decision import NORMAL, Event, clip_message
from failover.core.labels import label_key_problems, label_value_problems

RESTORING_ANNOTATION = "failover-relay.io/restoring"
EVENT_RESTORED = "CopyRestored"
# Flink's terminal failure as the operator reports it (JobStatus.state, ResourceLifecycleState).
FAILED = "FAILED"


@dataclass(frozen=True)
class Restoring:
    """A copy a move brought to `cluster` at `since`, from `from_cluster`, carrying `carried`, not restored yet."""

    cluster: str
    since: datetime
    from_cluster: str
    carried: Mapping[str, str]

    def as_json(self) -> dict[str, Any]:
        return {"since": format_time(self.since), "from": self.from_cluster, "carried": dict(self.carried)}


def restoring(binding: Mapping[str, Any]) -> dict[str, Restoring]:
    """RESTORING_ANNOTATION by cluster; an entry that does not read (anyone can edit it) is left out."""
    found = {}
    for cluster, entry in read_json_annotation(b.annotations(binding).get(RESTORING_ANNOTATION)).items():
        if not isinstance(cluster, str) or not isinstance(entry, dict):
            continue
        since, source, carried = parse_time(entry.get("since")), entry.get("from"), entry.get("carried")
        if since is None or not isinstance(source, str) or not isinstance(carried, dict):
            continue
        labels = {k: v for k, v in carried.items() if isinstance(k, str) and isinstance(v, str)}
        if labels and all(not label_key_problems(k) and not label_value_problems(v) for k, v in labels.items()):
            found[cluster] = Restoring(cluster, since, source, labels)
    return found


def moved_in(binding: Mapping[str, Any], task: Mapping[str, Any]) -> list[Restoring]:
    """The copies the move of `task` (a failover's task, ending now) brought, with the state it carried: each target
    that is not the cluster it left nor one the workload ran on before it. None when the task carried no state."""
    carried = task.get("preservedLabelState")
    since = parse_time(task.get("creationTimestamp"))
    if not b.is_failover_task(task) or not isinstance(carried, dict) or not carried or since is None:
        return []
    labels = {k: v for k, v in carried.items() if isinstance(k, str) and isinstance(v, str)}
    before = task.get("clustersBeforeFailover")
    before = before if isinstance(before, list) else []
    return [
        Restoring(target.name, since, str(task["fromCluster"]), labels)
        for target in b.target_clusters(binding)
        if target.name != task["fromCluster"] and target.name not in before
    ]


def moving_or_restoring(binding: Mapping[str, Any]) -> dict[str, Restoring]:
    """`restoring`, and the copies the failover tasks still in flight are bringing, with the state they carry: a
    copy is judged (failover/state/empty_start.py) from its first report, not only once its move's task ended."""
    found = restoring(binding)
    for task in b.eviction_tasks(binding):
        for record in moved_in(binding, task):
            found.setdefault(record.cluster, record)
    return found


def restoring_value(records: Iterable[Restoring]) -> str | None:
    """RESTORING_ANNOTATION holding `records` (None: removed)."""
    entries = {record.cluster: record.as_json() for record in sorted(records, key=lambda record: record.cluster)}
    return json.dumps(entries, separators=(",", ":"), sort_keys=True) if entries else None


def lineage(binding: Mapping[str, Any], cluster: str) -> tuple[str, dict[str, str]] | None:
    """(the cluster it came from, the state its move carried) for a copy on `cluster` that is still restoring: what a
    failover away from it must carry, since its own job has nothing to restore from yet."""
    record = restoring(binding).get(cluster)
    return None if record is None else (record.from_cluster, dict(record.carried))


def terminally_failed(item: Mapping[str, Any] | None) -> bool:
    """The copy reports a failure it will not recover from by itself (`jobStatus.state` or `lifecycleState` FAILED,
    e.g. "Recovery is suppressed by NoRestartBackoffTimeStrategy"): no longer restoring."""
    reflected = (item or {}).get("status")
    if not isinstance(reflected, dict):
        return False
    job = reflected.get("jobStatus")
    return reflected.get("lifecycleState") == FAILED or (isinstance(job, dict) and job.get("state") == FAILED)


@dataclass(frozen=True)
class RestoredDecision:
    """`patch` drops the restored copies from RESTORING_ANNOTATION (and the records of clusters no longer targets);
    `restored`: (cluster, how long after its move)."""

    patch: Mapping[str, Any] | None = None
    restored: tuple[tuple[str, timedelta], ...] = ()
    events: tuple[Event, ...] = ()


def decide_restored(
    binding: Mapping[str, Any],
    checkpointed: Mapping[str, datetime],
    storage_readable: bool,
    now: datetime,
) -> RestoredDecision:
    """Which restoring copies are restored now. `checkpointed`: by cluster, when the newest completed checkpoint of the
    job the copy runs now was written, as the storage holds it; a copy is restored by one written after its move.
    Without `storage_readable` a copy is restored once it is Healthy. A record whose cluster is no longer a target
    goes too: that copy is gone (a further move records its own)."""
    if not isinstance(binding, dict) or b.is_deleting(binding):
        return RestoredDecision()
    records = restoring(binding)
    raw = b.annotations(binding).get(RESTORING_ANNOTATION)
    if not records:
        return RestoredDecision() if raw is None else RestoredDecision(_patch(None))
    targets = {target.name for target in b.target_clusters(binding)}
    health = b.aggregated_status(binding)
    kept, restored, events = [], [], []
    for cluster, record in sorted(records.items()):
        if cluster not in targets:
            continue
        done = (
            checkpointed[cluster] >= record.since
            if cluster in checkpointed
            else not storage_readable and b.health_of(health.get(cluster)) == b.HEALTHY
        )
        if not done:
            kept.append(record)
            continue
        restored.append((cluster, now - record.since))
        evidence = "its job completed a checkpoint" if storage_readable else "it is Healthy (no checkpoint storage)"
        events.append(
            Event(
                NORMAL,
                EVENT_RESTORED,
                clip_message(
                    f"the copy on {cluster} is restored: {evidence}, {int((now - record.since).total_seconds())}s"
                    f" after the move from {record.from_cluster}; a failover away from it now carries its own state"
                ),
            )
        )
    value = restoring_value(kept)
    if value == raw:
        return RestoredDecision()
    return RestoredDecision(_patch(value), tuple(restored), tuple(events))


def _patch(value: str | None) -> Mapping[str, Any]:
    return {"metadata": {"annotations": {RESTORING_ANNOTATION: value}}}
