"""A short failover history on the binding, and the runs of the job it has seen: what `failover-relay status` shows
and what the restore fallbacks (failover/state/restore.py) read after a restart.

Karmada keeps no history of a workload's moves (its failover-history proposal, karmada-io/karmada#5251, is open): an
eviction task disappears once the new copy is healthy. The loop records, in `HISTORY_ANNOTATION` on the binding:

    {"moves": [{"at": "2026-11-23T23:40:02Z", "kind": "failover", "from": "member1", "to": ["member2"],
                "reason": "ApplicationFailure", "jobId": "9a27...", "restore": "file:///state/ns/9a27.../chk-41"}],
     "runs": [{"jobId": "9a27...", "cluster": "member1", "seen": "...", "upgradeSavepointPath": "..."}]}

- a move per eviction task (application failover, the taint manager's cluster failover, a failback) once the task is
  stamped with its creationTimestamp, which identifies it: a retry, a restart or a second replica that sees the same
  task finds the move recorded and adds nothing; a move per stale copy deleted from a dead cluster that returned
  (`returned_cluster_patch`). `to` is filled once the scheduler has placed the workload, `restore` once the new copy's
  Work carries its restore path (the Work mutator put it there).
- a run per Flink job id Karmada reflected from any copy (`status.jobStatus.jobId`, whatever its health: a rotated id
  is written to the status before the job runs, operator 1.10+ FLINK-35831), with the path it started from
  (`status.jobStatus.upgradeSavepointPath`). `restore_hints` turns them into the annotations the savepoint decision
  reads on the new copy (failover/state/savepoint.py): the earlier job ids, and the failed run's start path.

Bounded: at most MAX_MOVES moves and MAX_RUNS runs, values clipped, and the oldest moves dropped until the JSON fits
MAX_BYTES. Karmada keeps annotations it did not write: the detector merges the binding's annotations on every update
(`pkg/detector/detector.go` `ApplyPolicy`, `util.DedupeAndMergeAnnotations`), the scheduler and the binding
controller patch spec and status only (tests/karmada/test_status.py proves it on real Karmada).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from failover.core import binding as b
from failover.core.annotations import format_time, parse_time, read_json_annotation
from failover.core.api import REASON_APPLICATION_FAILURE, REASON_FAILBACK
from failover.core.work import manifests
from failover.state.flink_config import is_state_path
from failover.state.jobid import job_id_problem
from failover.state.last_state import recorded_state
from failover.state.profiles import TRIGGER_LABELS
from failover.state.savepoint import PREVIOUS_JOB_IDS_ANNOTATION, UPGRADE_SAVEPOINT_PATH_ANNOTATION

HISTORY_ANNOTATION = "failover-relay.io/history"
MAX_MOVES = 10
MAX_RUNS = 8
MAX_BYTES = 8192
MAX_PATH = 512
MAX_TEXT = 120

FAILOVER = "failover"
CLUSTER_FAILOVER = "cluster-failover"
FAILBACK = "failback"
EVICTION = "eviction"
DEAD_CLUSTER_RETURN = "dead-cluster-return"

# Where the Flink operator reports the job id and the state a run started from (JobStatus in the CRD).
JOB_STATUS = "jobStatus"


@dataclass(frozen=True)
class Move:
    at: datetime
    kind: str
    from_cluster: str
    to: tuple[str, ...] = ()
    reason: str = ""
    job_id: str = ""
    restore: str = ""

    def key(self) -> tuple[str, str, str]:
        return format_time(self.at), self.kind, self.from_cluster

    def as_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"at": format_time(self.at), "kind": self.kind, "from": self.from_cluster}
        for name, value in (
            ("to", list(self.to)),
            ("reason", self.reason),
            ("jobId", self.job_id),
            ("restore", self.restore),
        ):
            if value:
                entry[name] = value
        return entry


@dataclass(frozen=True)
class Run:
    job_id: str
    cluster: str
    seen: datetime
    upgrade_savepoint_path: str = ""

    def as_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"jobId": self.job_id, "cluster": self.cluster, "seen": format_time(self.seen)}
        if self.upgrade_savepoint_path:
            entry["upgradeSavepointPath"] = self.upgrade_savepoint_path
        return entry


@dataclass(frozen=True)
class History:
    moves: tuple[Move, ...] = ()  # oldest first
    runs: tuple[Run, ...] = ()  # newest first


def read_history(binding: Mapping[str, Any]) -> History:
    """HISTORY_ANNOTATION as written by this module; entries that do not read are left out (anyone can edit it)."""
    data = read_json_annotation(b.annotations(binding).get(HISTORY_ANNOTATION))
    moves = []
    moves_data = data.get("moves")
    for entry in moves_data if isinstance(moves_data, list) else ():
        if not isinstance(entry, dict):
            continue
        at, kind, source = parse_time(entry.get("at")), entry.get("kind"), entry.get("from")
        if at is None or not isinstance(kind, str) or not isinstance(source, str):
            continue
        to = entry.get("to")
        moves.append(
            Move(
                at,
                kind[:MAX_TEXT],
                source[:MAX_TEXT],
                tuple(c for c in to if isinstance(c, str)) if isinstance(to, list) else (),
                _text(entry.get("reason")),
                _job_id(entry.get("jobId")),
                _text(entry.get("restore"), MAX_PATH),
            )
        )
    runs: list[Run] = []
    runs_data = data.get("runs")
    for entry in runs_data if isinstance(runs_data, list) else ():
        if not isinstance(entry, dict):
            continue
        job_id, seen = _job_id(entry.get("jobId")), parse_time(entry.get("seen"))
        if job_id and seen is not None and all(run.job_id != job_id for run in runs):
            runs.append(
                Run(job_id, _text(entry.get("cluster")), seen, _text(entry.get("upgradeSavepointPath"), MAX_PATH))
            )
    return History(tuple(sorted(moves, key=lambda move: move.at)), tuple(runs))


def decide_history(
    binding: Mapping[str, Any], works: Iterable[Mapping[str, Any]], now: datetime, returned: Iterable[str] = ()
) -> Mapping[str, Any] | None:
    """The merge patch that brings HISTORY_ANNOTATION up to date, None when it already is.

    `works` are the binding's Works (the new copy's restore path is read from them); `returned` are the dead clusters
    whose stale copy was just deleted (a move of their own).
    """
    if not isinstance(binding, dict) or b.is_deleting(binding):
        return None
    old = read_history(binding)
    moves = {move.key(): move for move in old.moves}
    for task in b.eviction_tasks(binding):
        at = parse_time(task.get("creationTimestamp"))
        if at is None:
            continue  # the graceful eviction pass stamps it; the stamp is the move's identity
        move = Move(
            at,
            _kind(task),
            task["fromCluster"][:MAX_TEXT],
            reason=_text(task.get("reason")),
            job_id=_preserved_job_id(binding, task),
        )
        moves.setdefault(move.key(), move)
    for cluster in returned:
        move = Move(now, DEAD_CLUSTER_RETURN, cluster[:MAX_TEXT], reason="stale copy deleted")
        moves.setdefault(move.key(), move)
    ordered = sorted(moves.values(), key=lambda move: move.at)[-MAX_MOVES:]
    if ordered and ordered[-1].kind != DEAD_CLUSTER_RETURN:
        ordered[-1] = _completed(ordered[-1], binding, works)
    history = History(tuple(ordered), _runs(binding, old.runs, now))
    value = write_history(history)
    raw = b.annotations(binding).get(HISTORY_ANNOTATION)
    if value == raw:
        return None
    return {"metadata": {"annotations": {HISTORY_ANNOTATION: value}}}


def returned_cluster_patch(
    binding: Mapping[str, Any], clusters: Iterable[str], now: datetime
) -> Mapping[str, Any] | None:
    """The history patch recording that the stale copies on `clusters` were deleted when those clusters returned."""
    return decide_history(binding, (), now, returned=clusters)


def write_history(history: History) -> str | None:
    """Compact JSON within MAX_BYTES (oldest moves dropped first); None when there is nothing to keep."""
    moves, runs = list(history.moves), list(history.runs[:MAX_RUNS])
    while True:
        if not moves and not runs:
            return None
        value = json.dumps(
            {"moves": [move.as_json() for move in moves], "runs": [run.as_json() for run in runs]},
            separators=(",", ":"),
        )
        if len(value.encode()) <= MAX_BYTES:
            return value
        if moves:
            moves.pop(0)
        else:
            runs.pop()


def restore_hints(binding: Mapping[str, Any], preserved: Mapping[str, str]) -> dict[str, str]:
    """The annotations the savepoint decision reads on a new copy that carries the `preserved` labels: the job ids
    of earlier runs of the workload (newest first, the preserved ids left out) and the failed run's start path."""
    preserved_ids = [value for label in TRIGGER_LABELS if (value := preserved.get(label)) and not job_id_problem(value)]
    if not preserved_ids:
        return {}
    runs = read_history(binding).runs
    hints = {}
    previous = [run.job_id for run in runs if run.job_id not in preserved_ids]
    if previous:
        hints[PREVIOUS_JOB_IDS_ANNOTATION] = ",".join(previous)
    failed = next((run for run in runs if run.job_id == preserved_ids[0]), None)
    if failed is not None and failed.upgrade_savepoint_path:
        hints[UPGRADE_SAVEPOINT_PATH_ANNOTATION] = failed.upgrade_savepoint_path
    return hints


def _kind(task: Mapping[str, Any]) -> str:
    if task.get("reason") == REASON_FAILBACK:
        return FAILBACK
    if b.is_cluster_failover_task(task):
        return CLUSTER_FAILOVER
    if task.get("reason") == REASON_APPLICATION_FAILURE:
        return FAILOVER
    return EVICTION


def _preserved_job_id(binding: Mapping[str, Any], task: Mapping[str, Any]) -> str:
    """The job id the task preserved (its preservedLabelState, else, for a failover, the evicted copy's last healthy
    report)."""
    state = task.get("preservedLabelState")
    if not isinstance(state, dict) or not state:
        state = recorded_state(binding, task["fromCluster"]) if b.is_failover_task(task) else {}
    # job_id_problem() is None only for a string.
    return cast(str, next((value for label in TRIGGER_LABELS if not job_id_problem(value := state.get(label))), ""))


def _completed(move: Move, binding: Mapping[str, Any], works: Iterable[Mapping[str, Any]]) -> Move:
    """The newest move with where it went (once scheduled) and the restore path its new copy was given."""
    to = move.to
    if not to:
        to = tuple(sorted(t.name for t in b.target_clusters(binding) if t.name != move.from_cluster))
    restore = move.restore
    if to and not restore:
        for work in works:
            namespace = b.metadata(work).get("namespace")
            if isinstance(namespace, str) and namespace.removeprefix("karmada-es-") in to:
                restore = restore or next(iter(restore_paths(work)), "")
    return Move(move.at, move.kind, move.from_cluster, to, move.reason, move.job_id, restore[:MAX_PATH])


def restore_paths(work: Mapping[str, Any]) -> list[str]:
    """The restore paths the manifests of a Work carry (`spec.job.initialSavepointPath`, the Flink kinds')."""
    paths = []
    for manifest in manifests(work):
        job = b.spec(manifest).get("job") if isinstance(manifest, dict) else None
        path = job.get("initialSavepointPath") if isinstance(job, dict) else None
        if isinstance(path, str) and path:
            paths.append(path)
    return paths


def _runs(binding: Mapping[str, Any], old: tuple[Run, ...], now: datetime) -> tuple[Run, ...]:
    runs = list(old)
    targets = {target.name for target in b.target_clusters(binding)}
    for cluster, item in sorted(b.aggregated_status(binding).items()):
        job_id, path = reflected_run(item)
        if cluster not in targets or not job_id:
            continue
        known = next((index for index, run in enumerate(runs) if run.job_id == job_id), None)
        if known is None:
            runs.insert(0, Run(job_id, cluster[:MAX_TEXT], now, path))
        elif path and runs[known].upgrade_savepoint_path != path:
            runs[known] = Run(job_id, runs[known].cluster, runs[known].seen, path)
    return tuple(runs[:MAX_RUNS])


def reflected_run(item: Mapping[str, Any] | None) -> tuple[str, str]:
    """(job id, upgradeSavepointPath) of one copy's reflected Flink status (aggregatedStatus item); "" for what is
    absent or not a Flink JobID."""
    reflected = (item or {}).get("status")
    job_status = reflected.get(JOB_STATUS) if isinstance(reflected, dict) else None
    if not isinstance(job_status, dict):
        return "", ""
    path = job_status.get("upgradeSavepointPath")
    return _job_id(job_status.get("jobId")), _text(path, MAX_PATH) if is_state_path(path) else ""


def _job_id(value: Any) -> str:
    return value if isinstance(value, str) and job_id_problem(value) is None else ""


def _text(value: Any, limit: int = MAX_TEXT) -> str:
    return value[:limit] if isinstance(value, str) else ""
