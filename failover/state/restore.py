"""The newest restorable state of a migrated Flink job, and the fallbacks when its preserved job id has none.

Candidates are the completed checkpoints and the job's own savepoints, compared by completion time (when their
`_metadata` was written): a savepoint taken when the old copy was deleted (`kubernetes.operator.job.savepoint-on-
deletion`, `ApplicationReconciler.cleanupInternal`) is newer than the last checkpoint and wins over it.

Where to look comes from the workload (`failover/state/flink_config.py`): its own checkpoint and savepoint directories,
each checked to lie inside an allowed root (`failover/state/state_roots.py`), else the configured root and layouts.

Since operator 1.10 (FLINK-35831) every savepoint or stateless deployment runs under a new job id, written to
`status.jobStatus.jobId` before the job is submitted (`ApplicationReconciler.setJobIdIfNecessary`): the id Karmada
preserved may belong to a run that never completed a checkpoint. Then, in this order of preference by time:
- `upgrade-savepoint-path`: the state the failed run itself started from (`status.jobStatus.upgradeSavepointPath`),
  when it lies inside an allowed root and is complete;
- `previous-job-id`: the newest state of an earlier job id of the same workload, when one was recorded.
The result names the fallback that found it; the caller puts it in the audit annotation and the log.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from failover.state.checkpoints import (
    Candidate,
    CheckpointStore,
    Layout,
    LayoutError,
    LookupResult,
    Outcome,
    StorageError,
    newest_checkpoint,
    newest_savepoint,
    restorable_time,
    root_exists,
)
from failover.state.jobid import JobId
from failover.state.state_roots import DirectoryRefused, StateLocation, locate

CHECKPOINT = "checkpoint"
SAVEPOINT = "savepoint"
UPGRADE_SAVEPOINT_PATH = "upgrade-savepoint-path"
PREVIOUS_JOB_ID = "previous-job-id"
OTHER_LABEL = "other-trigger-label"


@dataclass(frozen=True)
class RestoreQuery:
    """Everything a lookup depends on; hashable, so it is also the lookup cache's key."""

    namespace: str
    job_ids: tuple[JobId, ...]  # from the trigger labels, in the profile's label order
    previous_job_ids: tuple[JobId, ...] = ()
    checkpoint_dir: str | None = None  # the workload's own, as it spelled it; None: the configured root
    savepoint_dir: str | None = None
    per_job_checkpoints: bool = True  # create-subdir; False only with a checkpoint_dir of the workload's own
    upgrade_savepoint_path: str | None = None


class Found(NamedTuple):
    written: float
    preferred: bool  # on equal times a savepoint wins: it is self-contained, a checkpoint may share files
    path: str
    source: str
    job_id: str


def find_restore_point(
    roots: Sequence[CheckpointStore],
    layouts: Sequence[Layout],
    savepoint_layouts: Sequence[Layout],
    query: RestoreQuery,
) -> LookupResult:
    """The newest restorable state for `query`, or why there is none. `roots[0]` is the configured root."""
    try:
        checkpoint_base = (
            locate(query.checkpoint_dir, roots)
            if query.checkpoint_dir
            else StateLocation(roots[0], "", roots[0].url_root)
        )
        savepoint_base = locate(query.savepoint_dir, roots) if query.savepoint_dir else None
    except DirectoryRefused as error:
        return LookupResult(Outcome.REFUSED_DIRECTORY, reason=str(error))
    search = _Search(roots[0], layouts, savepoint_layouts, query, checkpoint_base, savepoint_base)
    notes: list[str] = []
    fallbacks: list[Found | None] = []
    try:
        best = search.newest(query.job_ids)
        fallback = "" if best is None or best.job_id in ("", query.job_ids[0].value) else OTHER_LABEL
        if best is None:
            fallbacks.append(search.newest(query.previous_job_ids))
            if query.upgrade_savepoint_path:
                fallbacks.append(_start_path(query.upgrade_savepoint_path, roots, notes))
            best = max((found for found in fallbacks if found is not None), default=None)
            fallback = (
                ""
                if best is None
                else (PREVIOUS_JOB_ID if best.source != UPGRADE_SAVEPOINT_PATH else UPGRADE_SAVEPOINT_PATH)
            )
        if best is not None:
            compared = dict.fromkeys([*search.seen, *(found for found in fallbacks if found is not None)])
            candidates = tuple(Candidate(found.path, found.source, found.written, found.job_id) for found in compared)
            return LookupResult(
                Outcome.FOUND, best.path, best.source, job_id=best.job_id, fallback=fallback, candidates=candidates
            )
        if not root_exists(roots[0]):
            raise StorageError(f"checkpoint root does not exist: {roots[0].url_root}")
    except StorageError as error:
        return LookupResult(Outcome.STORAGE_ERROR, reason=str(error))
    except LayoutError as error:
        return LookupResult(Outcome.NOT_FOUND, reason=str(error))
    searched = search.first_place(query.job_ids[0])
    reason = "; ".join([f"no completed checkpoint or savepoint of the job in {searched}", *notes])
    return LookupResult(Outcome.NOT_FOUND, reason=reason)


def carried_path_belongs(path: str, roots: Sequence[CheckpointStore], query: RestoreQuery) -> bool:
    """Whether a restore path carried forward from the old object may be kept: inside an allowed root (links
    included) and the state of this workload's job (one of its job ids, its recorded start path, or its own flat
    checkpoint directory)."""
    try:
        location = locate(path, roots)
    except DirectoryRefused:
        return False
    if not location.store.contains(location.fs_path):
        return False
    if path.rstrip("/") == (query.upgrade_savepoint_path or "").rstrip("/"):
        return True
    segments = location.relative.split("/")
    for job_id in (*query.job_ids, *query.previous_job_ids):
        if job_id.value in segments or any(
            segment.startswith(f"savepoint-{job_id.value[:6]}-") for segment in segments[-2:]
        ):
            return True
    if not query.per_job_checkpoints and query.checkpoint_dir:
        own = query.checkpoint_dir.rstrip("/") + "/"
        return path.startswith(own) and "/" not in path[len(own) :].removesuffix("/_metadata")
    return False


class _Search:
    def __init__(
        self,
        root: CheckpointStore,
        layouts: Sequence[Layout],
        savepoint_layouts: Sequence[Layout],
        query: RestoreQuery,
        checkpoint_base: StateLocation,
        savepoint_base: StateLocation | None,
    ) -> None:
        self.root = root
        self.layouts = layouts
        self.savepoint_layouts = savepoint_layouts
        self.query = query
        self.checkpoint_base = checkpoint_base
        self.savepoint_base = savepoint_base
        self._flat: list[Found] | None = None  # a flat directory is searched once, whatever the job id
        self.seen: list[Found] = []  # every state compared, in the order found

    def newest(self, job_ids: Sequence[JobId]) -> Found | None:
        found = [state for job_id in job_ids for state in self._states(job_id)]
        self.seen.extend(found)
        return max(found, default=None)

    def first_place(self, job_id: JobId) -> str:
        base = self.checkpoint_base
        if not self.query.per_job_checkpoints or not self.layouts:
            return base.url or "/"
        return base.url + self.layouts[0].relative(self.query.namespace, job_id)

    def _states(self, job_id: JobId) -> list[Found]:
        states = []
        base = self.checkpoint_base
        if self.query.per_job_checkpoints:
            for layout in self.layouts:
                relative = layout.relative(self.query.namespace, job_id)
                newest = newest_checkpoint(base.store, base.fs_path + relative)
                if newest:
                    states.append(
                        Found(newest[1], False, f"{base.url}{relative}/{newest[0]}", CHECKPOINT, job_id.value)
                    )
        else:
            if self._flat is None:
                newest = newest_checkpoint(base.store, base.fs_path, per_job=False)
                self._flat = [Found(newest[1], False, f"{base.url}/{newest[0]}", CHECKPOINT, "")] if newest else []
            states.extend(self._flat)
        for location in self._savepoint_places(job_id):
            newest = newest_savepoint(location.store, location.fs_path, job_id)
            if newest:
                states.append(Found(newest[1], True, f"{location.url}/{newest[0]}", SAVEPOINT, job_id.value))
        return states

    def _savepoint_places(self, job_id: JobId) -> list[StateLocation]:
        if self.savepoint_base is not None:
            return [self.savepoint_base]
        places = []
        for layout in self.savepoint_layouts:
            relative = layout.relative(self.query.namespace, job_id)
            places.append(StateLocation(self.root, relative, self.root.url_root + relative))
        return places


def _start_path(path: str, roots: Sequence[CheckpointStore], notes: list[str]) -> Found | None:
    """The failed run's own start path, when it is a complete state inside an allowed root."""
    try:
        location = locate(path, roots)
    except DirectoryRefused as error:
        notes.append(f"{UPGRADE_SAVEPOINT_PATH} not used: {error}")
        return None
    written = restorable_time(location.store, location.fs_path)
    if written is None:
        notes.append(f"{UPGRADE_SAVEPOINT_PATH} not used: no complete state at {location.url}")
        return None
    return Found(written, True, location.url, UPGRADE_SAVEPOINT_PATH, "")
