"""The member relay's side of the storage fence (failover/fence/member_relay.py): which objects a record names, what the
watcher suspends and acknowledges, what the webhook keeps suspended, and which savepoint path the acknowledgement
reports (never the operator's last-state sentinel)."""

from __future__ import annotations

import copy as copying
from typing import Any

from failover.core.work import MemberCopy
from failover.fence.fence_files import (
    AckedCopy,
    FenceAck,
    FenceRecord,
)
from failover.fence.member_relay import decide_member_fence, names_copy, suspension_patch, suspension_savepoint
from failover.state.jobmanager import JobManager
from tests.failover.binding_builders import at

FENCE_ID = "0b7e3f5c-3c1e-4c55-9d2b-6a4c1e2f9a10"
NEW_ID = "9f0e2d1c-0000-4000-8000-000000000001"
REF = MemberCopy("member1", "flink.apache.org/v1beta1", "FlinkDeployment", "jobs", "orders", "orders-7c9d")
GONE = {REF: JobManager(None)}  # the copy's JobManager, as read once the operator tore it down
RECORD = FenceRecord(FENCE_ID, "member1", "orders-7c9d", "ResourceBinding jobs/orders-flinkdeployment", (REF,), at(0))


def member_copy(
    state: str | None = "running", permanent_id: str = FENCE_ID, lifecycle: str = "STABLE", savepoint: str = ""
) -> dict[str, Any]:
    job: dict[str, Any] = {"jarURI": "local:///job.jar"}
    if state is not None:
        job["state"] = state
    status: dict[str, Any] = {"lifecycleState": lifecycle, "jobStatus": {"state": "RUNNING"}}
    if savepoint:
        status["jobStatus"]["upgradeSavepointPath"] = savepoint
    return {
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkDeployment",
        "metadata": {
            "name": "orders",
            "namespace": "jobs",
            "uid": "u-1",
            "labels": {"work.karmada.io/permanent-id": permanent_id},
            "annotations": {"work.karmada.io/name": "orders-7c9d", "work.karmada.io/namespace": "karmada-es-member1"},
        },
        "spec": {"job": job},
        "status": status,
    }


def test_a_record_names_only_the_copy_its_own_work_applied() -> None:
    assert names_copy(RECORD, member_copy())
    # The workload came back to this cluster: a new Work, a new permanent id on the copy.
    assert not names_copy(RECORD, member_copy(permanent_id=NEW_ID))
    other = member_copy()
    other["metadata"]["name"] = "payments"
    assert not names_copy(RECORD, other)
    foreign = member_copy()
    foreign["metadata"]["annotations"]["work.karmada.io/namespace"] = "karmada-es-member2"
    assert not names_copy(RECORD, foreign)
    assert not names_copy(RECORD, {"metadata": None})


def test_the_member_suspends_then_waits_for_the_operator_then_acknowledges_once() -> None:
    first = decide_member_fence(RECORD, {REF: member_copy()}, GONE, acknowledged=False, now=at(1))
    assert first.suspend == (REF,) and first.acknowledge is None
    # Suspended in the spec, the operator has not stopped the job yet: no acknowledgement.
    pending = decide_member_fence(RECORD, {REF: member_copy("suspended")}, GONE, acknowledged=False, now=at(2))
    assert pending.suspend == () and pending.acknowledge is None and pending.waiting_for_operator == (REF,)
    stopped = member_copy("suspended", lifecycle="SUSPENDED", savepoint="s3://b/sp/savepoint-9")
    done = decide_member_fence(RECORD, {REF: stopped}, GONE, acknowledged=False, now=at(3))
    assert done.acknowledge == FenceAck(
        FENCE_ID, "member1", (AckedCopy(REF, "suspended", "u-1"),), at(3), "s3://b/sp/savepoint-9"
    )
    # Acknowledged already (this relay or one before a restart): never a second acknowledgement.
    assert decide_member_fence(RECORD, {REF: stopped}, GONE, acknowledged=True, now=at(4)) == type(done)()
    # But a named copy running again (re-applied while the webhook was not called) is suspended again.
    again = decide_member_fence(RECORD, {REF: member_copy("running")}, GONE, acknowledged=True, now=at(5))
    assert again.suspend == (REF,) and again.acknowledge is None
    other = decide_member_fence(
        RECORD, {REF: member_copy("running", permanent_id=NEW_ID)}, GONE, acknowledged=True, now=at(5)
    )
    assert other == type(done)()


def test_no_copy_of_the_fenced_work_here_is_acknowledged_as_absent_and_nothing_is_suspended() -> None:
    for present in (None, member_copy(permanent_id=NEW_ID)):
        decision = decide_member_fence(RECORD, {REF: present}, GONE, acknowledged=False, now=at(1))
        assert decision.suspend == ()
        assert decision.acknowledge is not None and decision.acknowledge.copies == (AckedCopy(REF, "absent"),)


def test_a_copy_without_a_job_is_never_acknowledged_the_timer_decides() -> None:
    session = member_copy(state=None)
    del session["spec"]["job"]
    decision = decide_member_fence(RECORD, {REF: session}, GONE, acknowledged=False, now=at(1))
    assert decision.suspend == () and decision.acknowledge is None


def test_the_webhook_keeps_a_fenced_copy_suspended_and_leaves_every_other_alone() -> None:
    # Karmada's drift correction re-applies the Work's manifest: state running again.
    assert suspension_patch(member_copy("running"), [RECORD]) == [
        {"op": "replace", "path": "/spec/job/state", "value": "suspended"}
    ]
    assert suspension_patch(member_copy(None), [RECORD]) == [
        {"op": "add", "path": "/spec/job/state", "value": "suspended"}
    ]
    assert suspension_patch(member_copy("suspended"), [RECORD]) == []
    assert suspension_patch(member_copy("running", permanent_id=NEW_ID), [RECORD]) == []
    assert suspension_patch(member_copy("running"), []) == []
    unchanged = member_copy("running")
    before = copying.deepcopy(unchanged)
    suspension_patch(unchanged, [RECORD])
    assert unchanged == before


def test_a_record_naming_what_no_suspension_stops_is_never_acknowledged() -> None:
    deployment = MemberCopy("member1", "apps/v1", "Deployment", "jobs", "sidecar", "orders-7c9d")
    record = FenceRecord(FENCE_ID, "member1", "orders-7c9d", "b", (REF, deployment), at(0))
    stopped = member_copy("suspended", lifecycle="SUSPENDED")
    decision = decide_member_fence(record, {REF: stopped, deployment: None}, GONE, acknowledged=False, now=at(1))
    assert decision.acknowledge is None and decision.waiting_for_operator == (deployment,)


def test_the_acknowledged_savepoint_is_a_path_never_the_operators_sentinel() -> None:
    assert suspension_savepoint(member_copy("suspended", savepoint="s3://b/sp/savepoint-9")) == "s3://b/sp/savepoint-9"
    # Operator 1.16 writes KUBERNETES_OPERATOR_LAST_STATE into upgradeSavepointPath on a last-state deploy: the
    # savepoint the suspension took is then the last savepoint's location, or none.
    sentinel = member_copy("suspended", savepoint="KUBERNETES_OPERATOR_LAST_STATE")
    assert suspension_savepoint(sentinel) is None
    sentinel["status"]["jobStatus"]["savepointInfo"] = {"lastSavepoint": {"location": "s3://b/sp/savepoint-7"}}
    assert suspension_savepoint(sentinel) == "s3://b/sp/savepoint-7"


def jobmanager(replicas: int | None = 1, pod_phase: str | None = "Running", deleting: bool = False) -> JobManager:
    """The JobManager the operator deployed for the copy: its Deployment (None: gone) and one pod (None: none)."""
    deployment = None
    if replicas is not None:
        deployment = {"metadata": {"name": "orders", "uid": "d-1"}, "spec": {"replicas": replicas}}
        if deleting:
            deployment["metadata"]["deletionTimestamp"] = "2025-03-01T12:00:00Z"
    pods = () if pod_phase is None else ({"metadata": {"name": "orders-7f9-x"}, "status": {"phase": pod_phase}},)
    return JobManager(deployment, pods)


def test_a_copy_is_stopped_only_when_no_jobmanager_of_it_runs() -> None:
    stopped = member_copy("suspended", lifecycle="SUSPENDED", savepoint="s3://b/sp/savepoint-9")
    # FLINK-41262: the operator says SUSPENDED and leaves the JobManager up: stop it, acknowledge nothing yet.
    left = decide_member_fence(RECORD, {REF: stopped}, {REF: jobmanager()}, acknowledged=False, now=at(1))
    assert (left.stop_jobmanager, left.waiting_for_jobmanager, left.acknowledge) == ((REF,), (REF,), None)
    # The Deployment is going (or wants no replica), a pod still runs: wait for it, nothing more to stop.
    for going in (jobmanager(deleting=True), jobmanager(replicas=0)):
        waiting = decide_member_fence(RECORD, {REF: stopped}, {REF: going}, acknowledged=False, now=at(2))
        assert (waiting.stop_jobmanager, waiting.waiting_for_jobmanager, waiting.acknowledge) == ((), (REF,), None)
    # Not read (the apiserver did not say): not known to be stopped.
    unread = decide_member_fence(RECORD, {REF: stopped}, {}, acknowledged=False, now=at(3))
    assert unread.acknowledge is None and unread.waiting_for_jobmanager == (REF,)
    # No Deployment, its last pod ended: stopped.
    for gone in (jobmanager(replicas=None, pod_phase=None), jobmanager(replicas=None, pod_phase="Failed")):
        done = decide_member_fence(RECORD, {REF: stopped}, {REF: gone}, acknowledged=False, now=at(4))
        assert done.acknowledge is not None and done.acknowledge.copies == (AckedCopy(REF, "suspended", "u-1"),)
    # A JobManager wanted again after the acknowledgement (a Deployment made anew) is stopped again.
    again = decide_member_fence(RECORD, {REF: stopped}, {REF: jobmanager()}, acknowledged=True, now=at(5))
    assert again.stop_jobmanager == (REF,) and again.acknowledge is None


def test_a_session_job_has_no_jobmanager_of_its_own_the_operators_word_is_all() -> None:
    job = MemberCopy("member1", "flink.apache.org/v1beta1", "FlinkSessionJob", "jobs", "orders", "orders-7c9d")
    record = FenceRecord(FENCE_ID, "member1", "orders-7c9d", "b", (job,), at(0))
    stopped = member_copy("suspended", lifecycle="SUSPENDED")
    stopped["kind"] = "FlinkSessionJob"
    decision = decide_member_fence(record, {job: stopped}, {}, acknowledged=False, now=at(1))
    assert decision.acknowledge is not None and decision.stop_jobmanager == ()
