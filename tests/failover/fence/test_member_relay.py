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
from tests.failover.binding_builders import at

FENCE_ID = "0b7e3f5c-3c1e-4c55-9d2b-6a4c1e2f9a10"
NEW_ID = "9f0e2d1c-0000-4000-8000-000000000001"
REF = MemberCopy("member1", "flink.apache.org/v1beta1", "FlinkDeployment", "jobs", "orders", "orders-7c9d")
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
    first = decide_member_fence(RECORD, {REF: member_copy()}, acknowledged=False, now=at(1))
    assert first.suspend == (REF,) and first.acknowledge is None
    # Suspended in the spec, the operator has not stopped the job yet: no acknowledgement.
    pending = decide_member_fence(RECORD, {REF: member_copy("suspended")}, acknowledged=False, now=at(2))
    assert pending.suspend == () and pending.acknowledge is None and pending.waiting_for_operator == (REF,)
    stopped = member_copy("suspended", lifecycle="SUSPENDED", savepoint="s3://b/sp/savepoint-9")
    done = decide_member_fence(RECORD, {REF: stopped}, acknowledged=False, now=at(3))
    assert done.acknowledge == FenceAck(
        FENCE_ID, "member1", (AckedCopy(REF, "suspended", "u-1"),), at(3), "s3://b/sp/savepoint-9"
    )
    # Acknowledged already (this relay or one before a restart): never a second acknowledgement.
    assert decide_member_fence(RECORD, {REF: stopped}, acknowledged=True, now=at(4)) == type(done)()
    # But a named copy running again (re-applied while the webhook was not called) is suspended again.
    again = decide_member_fence(RECORD, {REF: member_copy("running")}, acknowledged=True, now=at(5))
    assert again.suspend == (REF,) and again.acknowledge is None
    other = decide_member_fence(
        RECORD, {REF: member_copy("running", permanent_id=NEW_ID)}, acknowledged=True, now=at(5)
    )
    assert other == type(done)()


def test_no_copy_of_the_fenced_work_here_is_acknowledged_as_absent_and_nothing_is_suspended() -> None:
    for present in (None, member_copy(permanent_id=NEW_ID)):
        decision = decide_member_fence(RECORD, {REF: present}, acknowledged=False, now=at(1))
        assert decision.suspend == ()
        assert decision.acknowledge is not None and decision.acknowledge.copies == (AckedCopy(REF, "absent"),)


def test_a_copy_without_a_job_is_never_acknowledged_the_timer_decides() -> None:
    session = member_copy(state=None)
    del session["spec"]["job"]
    decision = decide_member_fence(RECORD, {REF: session}, acknowledged=False, now=at(1))
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
    decision = decide_member_fence(record, {REF: stopped, deployment: None}, acknowledged=False, now=at(1))
    assert decision.acknowledge is None and decision.waiting_for_operator == (deployment,)


def test_the_acknowledged_savepoint_is_a_path_never_the_operators_sentinel() -> None:
    assert suspension_savepoint(member_copy("suspended", savepoint="s3://b/sp/savepoint-9")) == "s3://b/sp/savepoint-9"
    # Operator 1.16 writes KUBERNETES_OPERATOR_LAST_STATE into upgradeSavepointPath on a last-state deploy: the
    # savepoint the suspension took is then the last savepoint's location, or none.
    sentinel = member_copy("suspended", savepoint="KUBERNETES_OPERATOR_LAST_STATE")
    assert suspension_savepoint(sentinel) is None
    sentinel["status"]["jobStatus"]["savepointInfo"] = {"lastSavepoint": {"location": "s3://b/sp/savepoint-7"}}
    assert suspension_savepoint(sentinel) == "s3://b/sp/savepoint-7"
