"""The member relay's side of the storage fence: which of its cluster's objects a fence record names, what the fence
watcher does about them (suspend; stop a JobManager the operator leaves running; acknowledge once the operator reports
the job stopped and no JobManager of it runs), and what the member's `/mutate` keeps so Karmada's drift correction
cannot start a fenced copy again (docs/design.md, "The storage fence"; the files: failover/fence/fence_files.py). The
watcher acts on records alone: no record, nothing is ever suspended, whatever happens to the control plane.

Stopped means no JobManager (failover/state/jobmanager.py): the operator's SUSPENDED is a claim, and after a savepoint
suspend it may leave the JobManager up to run the job again (FLINK-41262). Once the operator reports the copy
suspended, its savepoint is taken: the watcher then deletes the JobManager Deployment it left, as the operator itself
does for a stateless or last-state suspend (and its fix for FLINK-41262 does for this one), and acknowledges only
once no JobManager pod of the copy runs. Withholding the acknowledgement alone would leave the job able to run again
for a day beside its new copy once the timer fenced it; stopping it closes that. A FlinkSessionJob runs in a session
cluster other jobs share, whose JobManager is not the copy's to stop: the operator's word is all there is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from failover.core import work as w
from failover.core.api import FLINK_DEPLOYMENTS, FLINK_SESSION_JOBS, group_kind_of
from failover.core.work import MemberCopy
from failover.fence.fence_files import ABSENT, SUSPENDED, AckedCopy, FenceAck, FenceRecord
from failover.state.flink_config import is_state_path
from failover.state.jobmanager import JobManager

OPERATOR_SUSPENDED = "SUSPENDED"  # status.lifecycleState once the operator has stopped it (operator 1.16 CRD)
# The kinds the storage fence suspends, declared once: the Flink operator resources whose spec.job.state suspends a
# job (operator 1.16 CRDs); `spec.job.state: suspended` stops the job, with a savepoint where upgradeMode allows. The
# member relay reads and patches them (controllers/member/member_fence.py), its `/mutate` keeps them suspended
# (relay/serve.py).
SUSPENDABLE = (FLINK_DEPLOYMENTS, FLINK_SESSION_JOBS)


def suspendable(copy: MemberCopy) -> bool:
    """A suspension can stop this copy: a Flink job the operator runs."""
    return group_kind_of(copy.api_version, copy.kind) in {resource.group_kind for resource in SUSPENDABLE}


def has_jobmanager(copy: MemberCopy) -> bool:
    """The copy runs a JobManager of its own: a FlinkDeployment (an application or session cluster)."""
    return group_kind_of(copy.api_version, copy.kind) == FLINK_DEPLOYMENTS.group_kind


def names_copy(record: FenceRecord, member_object: Mapping[str, Any]) -> bool:
    """`member_object` is a copy the fenced Work put on this cluster: one of the record's objects, applied by that
    very Work (its permanent id and name, stamped by the execution controller). A copy the workload is back on
    carries a new Work's permanent id and is never named."""
    if not isinstance(member_object, dict) or not isinstance(member_object.get("metadata"), dict):
        return False
    copy = w.copy_of(member_object, record.cluster, record.work)
    return copy in record.copies and w.applied_by(member_object, copy, record.fence_id)


def job_state(member_object: Mapping[str, Any]) -> str | None:
    spec = member_object.get("spec")
    job = spec.get("job") if isinstance(spec, Mapping) else None
    if not isinstance(job, Mapping):
        return None
    state = job.get("state")
    return state if isinstance(state, str) else "running"  # the operator's default


def operator_suspended(member_object: Mapping[str, Any]) -> bool:
    """The Flink operator reports the job stopped by the suspension (`status.lifecycleState` SUSPENDED)."""
    status = member_object.get("status")
    return isinstance(status, Mapping) and status.get("lifecycleState") == OPERATOR_SUSPENDED


def suspension_savepoint(member_object: Mapping[str, Any]) -> str | None:
    """Where the operator put the savepoint the suspension took: `jobStatus.upgradeSavepointPath`, else the last
    savepoint's location (operator 1.16 CRD fields)."""
    status = member_object.get("status")
    job = status.get("jobStatus") if isinstance(status, Mapping) else None
    if not isinstance(job, Mapping):
        return None
    path = job.get("upgradeSavepointPath")
    if is_state_path(path):  # not the operator's last-state sentinel
        return str(path)
    info = job.get("savepointInfo")
    last = info.get("lastSavepoint") if isinstance(info, Mapping) else None
    location = last.get("location") if isinstance(last, Mapping) else None
    return str(location) if is_state_path(location) else None


@dataclass(frozen=True)
class MemberFenceDecision:
    """What a member relay does about one record: suspend these copies, stop the JobManagers the operator left
    running for these, or write this acknowledgement, or wait for the operator or a JobManager to go."""

    suspend: tuple[MemberCopy, ...] = ()
    acknowledge: FenceAck | None = None
    waiting_for_operator: tuple[MemberCopy, ...] = ()
    stop_jobmanager: tuple[MemberCopy, ...] = ()
    waiting_for_jobmanager: tuple[MemberCopy, ...] = ()


def decide_member_fence(
    record: FenceRecord,
    copies: Mapping[MemberCopy, Mapping[str, Any] | None],
    jobmanagers: Mapping[MemberCopy, JobManager],
    acknowledged: bool,
    now: datetime,
) -> MemberFenceDecision:
    """One record against the member's objects (`copies`: each of the record's copies as read from the member, None
    when absent; `jobmanagers`: the JobManager of each FlinkDeployment copy present, as read). Acknowledged once: with
    an acknowledgement stored, no second one is written, but a named copy found running again (drift correction
    while the webhook was not called) is suspended again, and a JobManager wanted again is stopped again. A copy not
    named by the record (another Work's) is not touched and counts as absent. A record naming an object no suspension
    can stop (not a Flink job) is never acknowledged: the timer fences it. A FlinkDeployment whose JobManager was not
    read is not known to be stopped."""
    named = {ref: obj for ref in record.copies if (obj := copies.get(ref)) is not None and names_copy(record, obj)}
    stop = tuple(
        ref
        for ref, obj in named.items()
        if has_jobmanager(ref) and operator_suspended(obj) and (jm := jobmanagers.get(ref)) is not None and jm.wanted
    )
    if acknowledged:
        again = tuple(ref for ref, obj in named.items() if suspendable(ref) and job_state(obj) not in (None, SUSPENDED))
        return MemberFenceDecision(suspend=again, stop_jobmanager=stop)
    suspend, waiting, acked, jobmanager_running = [], [], [], []
    savepoint = None
    for ref in record.copies:
        obj = named.get(ref)
        if not suspendable(ref):
            waiting.append(ref)
            continue
        if obj is None:
            acked.append(AckedCopy(ref, ABSENT))
            continue
        uid = str((obj.get("metadata") or {}).get("uid") or "")
        if job_state(obj) is None:
            waiting.append(ref)  # nothing here can stop it: the control plane's timer decides
        elif job_state(obj) != SUSPENDED:
            suspend.append(ref)
        elif not operator_suspended(obj):
            waiting.append(ref)
        elif has_jobmanager(ref) and ((jm := jobmanagers.get(ref)) is None or jm.runs):
            jobmanager_running.append(ref)
        else:
            acked.append(AckedCopy(ref, SUSPENDED, uid[:64]))
            savepoint = savepoint or suspension_savepoint(obj)
    if suspend or waiting or jobmanager_running:
        return MemberFenceDecision(
            suspend=tuple(suspend),
            waiting_for_operator=tuple(waiting),
            stop_jobmanager=stop,
            waiting_for_jobmanager=tuple(jobmanager_running),
        )
    return MemberFenceDecision(acknowledge=FenceAck(record.fence_id, record.cluster, tuple(acked), now, savepoint))


def suspension_patch(member_object: Mapping[str, Any], records: Iterable[FenceRecord]) -> list[dict[str, Any]]:
    """The JSONPatch the member's `/mutate` applies so a fenced copy stays suspended through Karmada's drift
    correction (the execution controller re-applies the Work's manifest once the member is reachable, karmada#7552;
    in Pull mode the agent does): `spec.job.state: suspended` on a copy a record names, nothing on any other."""
    state = job_state(member_object)
    if state is None or state == SUSPENDED or not any(names_copy(record, member_object) for record in records):
        return []
    spec_job = member_object["spec"]["job"]
    return [{"op": "replace" if "state" in spec_job else "add", "path": "/spec/job/state", "value": SUSPENDED}]
