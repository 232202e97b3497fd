"""`failover-relay inject FILE`: what the mutating webhook would do to one object, offline.

The object goes through the same mutator the server uses (label check, lookup under the deadline, patch), so an
operator sees the exact patch, warnings or denial. Exit codes: 0 admitted (patched or not), 1 denied, 2 bad input.
"""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import jsonpatch
import yaml

from failover.core.api import group_kind_of
from failover.core.verdict import ALLOWED, Verdict
from failover.state.checkpoints import LookupResult, Outcome
from failover.state.flink_config import NO_CLAIM
from failover.state.jobid import job_id_problem
from failover.state.restore import OTHER_LABEL, PREVIOUS_JOB_ID, UPGRADE_SAVEPOINT_PATH
from failover.state.savepoint import claim_mode
from relay.commands.documents import STDIN, STDIN_NAME, Unreadable, documents_in, read_stream, read_text
from relay.settings import SavepointSettings, SettingsError, open_injection
from webhook.mutators import Injection, SavepointMutator, lookup_pool
from webhook.review import AdmissionRequest

# How long `inject` follows a lookup past its deadline. botocore and s3fs retry a refused or unresolved endpoint for
# about 10 s before they raise.
OVERRUN_SECONDS = 30.0


def run_inject(
    path: Path,
    settings: SavepointSettings,
    job_id: str | None,
    show_patch: bool,
    namespace: str | None,
    out: TextIO,
    err: TextIO,
) -> int:
    obj = _read_object(path, err)
    if obj is None:
        return 2
    if not settings.checkpoint_root:
        print("failover-relay: inject needs --checkpoint-root (or savepoint.checkpointRoot in --config)", file=err)
        return 2
    if job_id is not None and job_id_problem(job_id):
        print(f"failover-relay: --job-id: {job_id_problem(job_id)}", file=err)
        return 2
    try:
        profiles, store, allowed_roots = open_injection(settings)
    except SettingsError as error:
        print(f"failover-relay: {error}", file=err)
        return 2
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        print(f"failover-relay: {path}: apiVersion and kind must be strings", file=err)
        return 2
    profile = profiles.get(group_kind_of(api_version, kind))
    if profile is None:
        kinds = ", ".join(sorted(map(str, profiles)))
        print(f"failover-relay: {path}: no injection profile for {kind} ({api_version}); profiles: {kinds}", file=err)
        return 2
    if job_id is not None:
        metadata = obj.setdefault("metadata", {})
        if not isinstance(metadata, dict):
            print(f"failover-relay: {path}: metadata must be a mapping", file=err)
            return 2
        labels = metadata.get("labels")
        metadata["labels"] = {**(labels if isinstance(labels, dict) else {}), profile.label: job_id}
    metadata = obj.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    request = AdmissionRequest(
        api_version="admission.k8s.io/v1",
        uid="inject",
        group=profile.group,
        version=api_version.rpartition("/")[2],
        kind=kind,
        operation="CREATE",
        namespace=namespace or str(metadata.get("namespace") or "default"),
        name=str(metadata.get("name") or ""),
        object=obj,
        old_object=None,
        dry_run=True,
    )
    pool = lookup_pool()
    mutator = SavepointMutator(
        profile,
        store,
        executor=pool,
        deadline=settings.lookup_deadline_seconds,
        failure_mode=settings.failure_mode,
        allowed_roots=allowed_roots,
    )
    if request.version != profile.version:  # as the mutator: another version of the kind is left alone
        return _report(obj, ALLOWED, show_patch, out, err)
    try:
        # `decide` is what the mutator's __call__ runs, returning the lookup's result too: what it compared and why.
        decided, overrun = asyncio.run(_decide(mutator, request))
    finally:
        pool.shutdown()
    if decided is None:  # not for injection (no job-id label): admitted unchanged
        return _report(obj, ALLOWED, show_patch, out, err)
    _explain(decided.result, claim_mode(profile, obj), err)
    code = _report(obj, decided.verdict, show_patch, out, err)
    for late in overrun:
        print(f"after the deadline the lookup ended {late.outcome.value}: {late.reason or late.path}", file=err)
    return code


async def _decide(mutator: SavepointMutator, request: AdmissionRequest) -> tuple[Injection | None, list[LookupResult]]:
    """The webhook's decision, and on a timeout what the lookup ended with (within OVERRUN_SECONDS more): the
    webhook answers at the deadline, but the operator running `inject` wants the cause."""
    assert request.object is not None
    decided = await mutator.decide(request.object, request.operation, None, request.namespace)
    if decided is None or decided.result.outcome is not Outcome.TIMEOUT:
        return decided, []
    try:
        async with asyncio.timeout(OVERRUN_SECONDS):
            return decided, await mutator.overrun()
    except TimeoutError:
        return decided, []


def _explain(result: LookupResult, mode: str | None, err: TextIO) -> None:
    """On stderr (stdout stays the object or the patch): the state chosen and why, the others compared, and the claim
    mode the new job restores it in."""
    if not result.found:
        return
    chosen = next((c for c in result.candidates if c.path == result.path), None)
    when = f", completed {_time(chosen.written)}" if chosen else ""
    print(f"chosen: {result.source} {result.path}{when}: {_why(result)}", file=err)
    for candidate in result.candidates:
        if candidate is not chosen:
            print(f"compared: {candidate.kind} {candidate.path}, completed {_time(candidate.written)}", file=err)
    if mode is not None:
        print(f"restored in claim mode {mode} (flinkConfiguration; Flink's default is {NO_CLAIM})", file=err)


def _why(result: LookupResult) -> str:
    job = f"job {result.job_id}" if result.job_id else "the workload's checkpoint directory"
    if result.fallback == PREVIOUS_JOB_ID:
        return f"fallback {PREVIOUS_JOB_ID}: the preserved job id has no restorable state; the newest of {job}"
    if result.fallback == UPGRADE_SAVEPOINT_PATH:
        return (
            f"fallback {UPGRADE_SAVEPOINT_PATH}: the preserved job id has no restorable state; the failed run's start"
        )
    if result.fallback == OTHER_LABEL:
        return f"the newest restorable state, of {job} named by another trigger label"
    return f"the newest restorable state of {job}"


def _time(written: float) -> str:
    return datetime.fromtimestamp(written, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _report(obj: dict[str, Any], verdict: Verdict, show_patch: bool, out: TextIO, err: TextIO) -> int:
    for warning in verdict.warnings:
        print(f"warning: {warning}", file=err)
    if not verdict.allowed:
        print(f"denied: {verdict.message}", file=err)
        return 1
    if show_patch:
        print(json.dumps(list(verdict.patch), indent=2), file=out)
    else:
        yaml.safe_dump(jsonpatch.apply_patch(obj, list(verdict.patch)), out, sort_keys=False)
    if not verdict.patch:
        print("unchanged: " + (verdict.audit.get("savepoint-outcome") or "no job-id label"), file=err)
    return 0


def _read_object(path: Path, err: TextIO) -> dict[str, Any] | None:
    # relay/commands/documents.py bounds the file (size, UTF-8, depth, alias expansion) as `check` does: one line,
    # exit 2.
    # `-` is the standard input, as for `check` and kubectl's `-f -`.
    text = read_stream(sys.stdin.buffer, STDIN_NAME) if path == STDIN else read_text(path)
    where = STDIN_NAME if path == STDIN else str(path)
    found = [text] if isinstance(text, Unreadable) else list(documents_in(text, where))
    problem = next((item for item in found if isinstance(item, Unreadable)), None)
    if problem is not None:
        print(f"failover-relay: {problem}", file=err)
        return None
    objects = [item for item in found if not isinstance(item, Unreadable)]  # all of them, as nothing was unreadable
    if len(objects) != 1:
        print(f"failover-relay: {where} must hold exactly one object", file=err)
        return None
    return dict(objects[0])
