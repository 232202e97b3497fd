"""The storage fence's records in the checkpoint storage (controllers/access/fence_store.py), on a local directory and
on a real S3-protocol server: written once, read back, hostile files skipped with one line, removed."""

from __future__ import annotations

import os
import uuid
from dataclasses import replace
from pathlib import Path

import pytest
import structlog

from controllers.access.fence_store import FenceStore
from failover.core.work import MemberCopy
from failover.fence.fence_files import FENCES_DIR, AckedCopy, FenceAck, FenceRecord, Heartbeat
from failover.state.checkpoints import open_store
from tests.failover.binding_builders import at
from tests.storage.s3_options import options

FENCE_ID = "0b7e3f5c-3c1e-4c55-9d2b-6a4c1e2f9a10"
REF = MemberCopy("member1", "flink.apache.org/v1beta1", "FlinkDeployment", "jobs", "orders", "orders-7c9d")
RECORD = FenceRecord(FENCE_ID, "member1", "orders-7c9d", "ResourceBinding jobs/orders", (REF,), at(0))
ACK = FenceAck(FENCE_ID, "member1", (AckedCopy(REF, "suspended", "u-1"),), at(5), None)


def exercise(fences: FenceStore, write_raw) -> None:
    assert fences.read("member1").records == {}  # no directory yet
    assert fences.read_heartbeats() == {}
    fences.write_heartbeat(Heartbeat("member1", at(0), 2.0))
    fences.write_heartbeat(Heartbeat("member1", at(30), 2.0))  # over the last one
    assert fences.read_heartbeats() == {"member1": Heartbeat("member1", at(30), 2.0)}
    assert fences.write_record(RECORD) is True
    again = FenceRecord(FENCE_ID, "member1", "orders-7c9d", "ResourceBinding jobs/orders", (REF,), at(99))
    assert fences.write_record(again) is False  # a restarted relay never writes a second record
    found = fences.read("member1")
    assert found.records == {FENCE_ID: RECORD} and found.present == {FENCE_ID} and found.acks == {}
    assert fences.read("member2").records == {}  # another cluster's directory

    # What else anyone with write access put there is skipped, once each, never an error.
    write_raw("member1/notes.txt", b"hello")
    write_raw("member1/11111111-2222-4333-8444-555555555555.json", b'{"version": 1')
    write_raw(f"member1/{FENCE_ID}.ack.json", b"[]")
    with structlog.testing.capture_logs() as logs:
        found = fences.read("member1")
        fences.read("member1")
    assert found.records == {FENCE_ID: RECORD} and found.acks == {}
    # The half-written record's id is present: never written over.
    assert found.present == {FENCE_ID, "11111111-2222-4333-8444-555555555555"}
    assert [line["event"] for line in logs] == ["fence_file_ignored"] * 3

    fences.remove("member1", FENCE_ID)
    assert fences.write_ack(ACK) is True and fences.write_ack(ACK) is False
    # An acknowledgement read without its record: its copies' Work, which only the record names, is unknown.
    unknown_work = replace(REF, work="")
    assert fences.read("member1").acks == {
        FENCE_ID: replace(ACK, copies=(AckedCopy(unknown_work, "suspended", "u-1"),))
    }
    assert fences.write_record(RECORD) is True
    assert fences.read("member1").acks == {FENCE_ID: ACK}
    fences.remove("member1", FENCE_ID)
    assert FENCE_ID not in fences.read("member1").present | set(fences.read("member1").acks)


def test_fence_records_in_a_local_directory(tmp_path: Path) -> None:
    root = tmp_path / "checkpoints"
    root.mkdir()

    def write_raw(relative: str, data: bytes) -> None:
        path = root / FENCES_DIR / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    exercise(FenceStore(open_store(str(root))), write_raw)


def test_a_link_out_of_the_root_is_not_read(tmp_path: Path) -> None:
    root, outside = tmp_path / "checkpoints", tmp_path / "secret.json"
    outside.write_text("{}")
    (root / FENCES_DIR / "member1").mkdir(parents=True)
    os.symlink(outside, root / FENCES_DIR / "member1" / f"{FENCE_ID}.json")
    with structlog.testing.capture_logs() as logs:
        found = FenceStore(open_store(str(root))).read("member1")
    assert found.records == {} and [line["reason"] for line in logs] == ["a link out of the checkpoint root"]


@pytest.mark.parametrize("cluster", ["../member1", "member1/x"])
def test_a_cluster_name_that_is_no_dns_label_reads_nothing(tmp_path: Path, cluster: str) -> None:
    with pytest.raises(ValueError):
        FenceStore(open_store(str(tmp_path))).read(cluster)


def test_fence_records_on_s3(bucket, s3_endpoint) -> None:
    fs, name = bucket
    prefix = f"{name}/checkpoints-{uuid.uuid4().hex[:6]}"

    def write_raw(relative: str, data: bytes) -> None:
        fs.pipe_file(f"{prefix}/{FENCES_DIR}/{relative}", data)

    exercise(FenceStore(open_store(f"s3://{prefix}", options(s3_endpoint))), write_raw)
