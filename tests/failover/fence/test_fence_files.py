"""The storage fence's files (failover/fence/fence_files.py): records and acknowledgements round-trip, and whatever
anyone may have written to the storage is parsed strictly: a hostile file is refused in one line."""

from __future__ import annotations

import json
from typing import Any

import pytest

from failover.core.work import MemberCopy
from failover.fence.control_plane import without_relay
from failover.fence.fence_files import (
    FENCES_DIR,
    AckedCopy,
    FenceAck,
    FenceRecord,
    Heartbeat,
    RecordRefused,
    cluster_dir,
    encode_ack,
    encode_heartbeat,
    encode_record,
    heartbeat_name,
    parse_ack,
    parse_file_name,
    parse_heartbeat,
    parse_record,
)
from tests.failover.binding_builders import at

FENCE_ID = "0b7e3f5c-3c1e-4c55-9d2b-6a4c1e2f9a10"
NEW_ID = "9f0e2d1c-0000-4000-8000-000000000001"
REF = MemberCopy("member1", "flink.apache.org/v1beta1", "FlinkDeployment", "jobs", "orders", "orders-7c9d")
RECORD = FenceRecord(FENCE_ID, "member1", "orders-7c9d", "ResourceBinding jobs/orders-flinkdeployment", (REF,), at(0))


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


def test_a_member_relays_heartbeat_round_trips_and_a_hostile_one_is_refused() -> None:
    heartbeat = Heartbeat("member1", at(5), 2.0)
    assert parse_heartbeat(encode_heartbeat(heartbeat), "member1") == heartbeat
    assert heartbeat_name("member1") == ".failover-relay/relays/member1.json"
    for data, cluster in (
        (encode_heartbeat(heartbeat), "member2"),  # another cluster's file
        (b'{"version": 1, "cluster": "member1", "seenAt": "soon", "pollSeconds": 2}', "member1"),
        (b'{"version": 1, "cluster": "member1", "seenAt": "2025-03-01T12:00:00Z", "pollSeconds": true}', "member1"),
        (b"[]", "member1"),
        (b"x" * 20000, "member1"),
    ):
        with pytest.raises(RecordRefused):
            parse_heartbeat(data, cluster)
    with pytest.raises(RecordRefused):
        heartbeat_name("../member1")


def test_a_member_no_relay_watches_is_named() -> None:
    beats = {"member1": Heartbeat("member1", at(0), 2.0), "member2": Heartbeat("member2", at(0), 60.0)}
    assert without_relay(["member1", "member2", "member3"], beats, at(60)) == ("member3",)
    # Three heartbeats missed (of 30 s, or of the relay's own poll when longer): gone.
    assert without_relay(["member1", "member2"], beats, at(91)) == ("member1",)
    assert without_relay(["member2"], beats, at(181)) == ("member2",)
