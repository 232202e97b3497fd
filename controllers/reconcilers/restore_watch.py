"""The checkpoint storage, read for the copies that are restoring: when the job each runs now last completed a
checkpoint (the decision that makes it restored: failover/state/restoration.py `decide_restored`), and why a copy
deployed without a restore path had none (failover/state/empty_start.py). Blocking reads on a
thread, as the savepoint lookup does; the copy's checkpoint directory comes from its FlinkDeployment's own
`flinkConfiguration` as its Work holds it, else the configured root and layouts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import structlog

from failover.core import binding as b
from failover.core.work import live_manifests
from failover.state.checkpoints import CheckpointStore, LookupResult
from failover.state.empty_start import NO_PATH
from failover.state.flink_config import read_state_config, stateless_restart_reasons
from failover.state.history import reflected_run
from failover.state.jobid import JobId
from failover.state.profiles import InjectionProfile
from failover.state.restoration import restoring
from failover.state.restore import RestoreQuery, find_restore_point

log = structlog.get_logger("failover_relay.restore_watch")

CHECKPOINT = "checkpoint"  # a LookupResult's source for a completed checkpoint (failover/state/restore.py)


class RestoreWatch:
    def __init__(self, profile: InjectionProfile, roots: Sequence[CheckpointStore]) -> None:
        self.profile, self.roots = profile, tuple(roots)  # the FlinkDeployment profile; the checkpoint root first

    async def checkpointed(self, binding: Mapping[str, Any], works: Iterable[Mapping[str, Any]]) -> dict[str, datetime]:
        """By cluster, for each restoring copy whose job id and Work are known: when the newest completed checkpoint
        of the job it runs now was written. A copy whose storage cannot be read now is left out (read again later)."""
        found = {}
        health = b.aggregated_status(binding)
        works = list(works)
        for cluster in restoring(binding):
            job_id = reflected_run(health.get(cluster))[0]
            manifest = _flink_manifest(works, cluster)
            if not job_id or manifest is None:
                continue
            try:
                result = await self._find(manifest, job_id)
            except Exception as error:  # noqa: BLE001  any fsspec backend error: looked at again at the next poll
                log.warning("restore_watch_failed", member_cluster=cluster, error=type(error).__name__)
                continue
            written = next((c.written for c in result.candidates if c.path == result.path), None)
            if result.found and result.source == CHECKPOINT and written is not None:
                found[cluster] = datetime.fromtimestamp(written, UTC)
        return found

    async def explain(self, works: Iterable[Mapping[str, Any]], cluster: str, job_id: str) -> str:
        """Why the copy on `cluster`, deployed without a restore path, had no state of job `job_id` to start from, as
        its configuration and the storage say now (failover/state/empty_start.py)."""
        manifest = _flink_manifest(works, cluster)
        if manifest is None:
            return NO_PATH
        reasons = stateless_restart_reasons(read_state_config(b.spec(manifest).get("flinkConfiguration")))
        if reasons:
            return f"its configuration keeps no state: {'; '.join(reasons)}"
        try:
            result = await self._find(manifest, job_id)
        except Exception as error:  # noqa: BLE001  any fsspec backend error
            return f"{NO_PATH}; the checkpoint storage cannot be read now ({type(error).__name__})"
        if result.found:
            return (
                f"deployed without the state the storage holds ({result.path}): the savepoint webhook was not called,"
                " timed out or failed open"
            )
        return f"no restorable state: {result.reason or result.outcome.value}"

    async def _find(self, manifest: Mapping[str, Any], job_id: str) -> LookupResult:
        """The newest restorable state of `job_id`, looked up where `manifest`'s own configuration keeps it."""
        state = read_state_config(b.spec(manifest).get("flinkConfiguration"))
        query = RestoreQuery(
            namespace=str(b.metadata(manifest).get("namespace") or ""),
            job_ids=(JobId(job_id),),
            checkpoint_dir=state.checkpoint_dir,
            savepoint_dir=state.savepoint_dir,
            per_job_checkpoints=not (state.checkpoint_dir and not state.create_subdir),
        )
        return await asyncio.to_thread(
            find_restore_point, self.roots, self.profile.layouts, self.profile.savepoint_layouts, query
        )


def _flink_manifest(works: Iterable[Mapping[str, Any]], cluster: str) -> Mapping[str, Any] | None:
    """The FlinkDeployment the binding's live Work for `cluster` puts there."""
    return next(
        (manifest for manifest in live_manifests(works, cluster) if manifest.get("kind") == "FlinkDeployment"), None
    )
