"""The storage fence's records and the member side's decisions (failover/state/fence_records.py): strict parsing of
what anyone may have written to the storage, which copies a record names, suspend then acknowledge once, and what
the member's webhook keeps suspended."""

from __future__ import annotations

import copy as copying
import json
from typing import Any

import pytest

from failover.core.work import MemberCopy
from failover.fence.fence_files import (
    FENCES_DIR,
    AckedCopy,
    FenceAck,
    FenceRecord,
    RecordRefused,
    cluster_dir,
    encode_ack,
    encode_record,
    parse_ack,
    parse_file_name,
    parse_record,
)
from failover.fence.member_relay import decide_member_fence, names_copy, suspension_patch
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


def test_records_and_acknowledgements_round_trip_and_name_their_files() -> None:
    assert parse_record(encode_record(RECORD), "member1", FENCE_ID) == RECORD
    ack = FenceAck(FENCE_ID, "member1", (AckedCopy(REF, "suspended", "u-1"),), at(3), "s3://b/sp/savepoint-1")
    assert parse_ack(encode_ack(ack), "member1", FENCE_ID, RECORD.work) == ack
    assert parse_file_name(f"{FENCE_ID}.json") == (FENCE_ID, False)
    assert parse_file_name(f"{FENCE_ID}.ack.json") == (FENCE_ID, True)
    assert cluster_dir("member1") == f"{FENCES_DIR}/member1"


@pytest.mark.parametrize(
    "name", ["../x.json", "..%2f.json", f"{FENCE_ID}.yaml", "a.json", f"{FENCE_ID.upper()}.json", ".json", "x"]
)
def test_a_file_name_that_is_not_a_permanent_id_is_refused(name: str) -> None:
    with pytest.raises(RecordRefused):
        parse_file_name(name)


@pytest.mark.parametrize("cluster", ["../etc", "a/b", "", "Member1", "x" * 64])
def test_a_cluster_name_that_is_not_a_dns_label_names_no_directory(cluster: str) -> None:
    with pytest.raises(RecordRefused):
        cluster_dir(cluster)


def _tampered(**changes: Any) -> bytes:
    document = json.loads(encode_record(RECORD))
    document.update(changes)
    return json.dumps(document).encode()


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\xff\xfe",
        b"[]",
        b"{" * 100000,
        b" " * 20000,
        _tampered(cluster="member2"),  # another cluster's record copied here
        _tampered(fenceId=NEW_ID),
        _tampered(version=2),
        _tampered(extra=1),
        _tampered(copies=[]),
        _tampered(copies=[{"apiVersion": "v1", "kind": "Secret", "namespace": "../kube-system", "name": "x"}]),
        _tampered(copies="all"),
        _tampered(work="../x"),
        _tampered(writtenAt="yesterday"),
        _tampered(binding=["x"]),
    ],
)
def test_a_malformed_or_hostile_record_is_refused_in_one_line(data: bytes) -> None:
    with pytest.raises(RecordRefused) as refused:
        parse_record(data, "member1", FENCE_ID)
    assert "\n" not in str(refused.value) and len(str(refused.value)) < 200


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
