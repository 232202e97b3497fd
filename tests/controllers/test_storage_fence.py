"""The control plane's storage fence adapter (controllers/reconcilers/storage_fence.py) over a real directory: a record
only on the apiserver's word (the binding read again must still want it), written once, an acknowledgement read back,
the record removed once its copies are gone; one listing per cluster shared by the bindings waiting on it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import structlog
from prometheus_client import CollectorRegistry

from controllers.access.fence_metrics import StorageFenceMetrics
from controllers.access.fence_store import FenceStore
from controllers.reconcilers.storage_fence import StorageFence
from failover.core.loop_settings import DecisionSettings
from failover.fence.control_plane import ACK_MARGIN, StoredFence
from failover.fence.fence_files import FenceAck, FenceRecord, Heartbeat
from failover.state.checkpoints import open_store
from tests.failover.binding_builders import at
from tests.failover.work_builders import PERMANENT_ID, clusters, evicted, old_work


def run(fence: StorageFence, binding: dict[str, Any], fresh: dict[str, Any], now: float) -> Any:
    """(acknowledged, when to look again), as the old-copy step asks: a record written only for `fresh`, the binding
    read again from the apiserver, still wanting it."""

    async def step() -> Any:
        works, members = [old_work()], clusters(False, since=-30)
        decision = await fence.check(binding, works, members, at(now))
        if decision.write:
            await fence.write(decision.write, fresh, works, members, at(now))
        return decision.acknowledged, decision.requeue_after

    return asyncio.run(step())


def test_a_record_is_written_on_the_apiservers_word_once_and_its_acknowledgement_fences(tmp_path: Path) -> None:
    fences = FenceStore(open_store(str(tmp_path)))
    fence = StorageFence(fences, DecisionSettings(), StorageFenceMetrics(CollectorRegistry()))
    no_task = evicted()
    no_task["spec"]["gracefulEvictionTasks"] = []

    # The cache says evicted, the apiserver no longer does (the task ended meanwhile): nothing is written.
    assert run(fence, evicted(), no_task, 1) == (frozenset(), fence.poll)
    assert fences.read("member1").present == set()

    acknowledged, again = run(fence, evicted(), evicted(), 1)
    assert acknowledged == frozenset() and again == fence.poll
    assert set(fences.read("member1").records) == {PERMANENT_ID}
    written = (tmp_path / ".failover-relay" / "fences" / "member1" / f"{PERMANENT_ID}.json").read_bytes()
    run(fence, evicted(), evicted(), 3)
    assert (tmp_path / ".failover-relay" / "fences" / "member1" / f"{PERMANENT_ID}.json").read_bytes() == written

    fences.write_ack(FenceAck(PERMANENT_ID, "member1", (), at(4)))
    fence._read_at.clear()  # past half a poll
    # Seen now; it fences ACK_MARGIN later, so the new copy never comes within it of the suspension.
    assert run(fence, evicted(), evicted(), 5) == (frozenset(), ACK_MARGIN)
    assert run(fence, evicted(), evicted(), 7) == (frozenset({("member1", "foo-5d8f")}), None)
    asyncio.run(fence.forget([("member1", "foo-5d8f")]))
    found = fences.read("member1")
    assert found.present == set() and found.acks == {}


def test_the_members_no_relay_watches_are_said_once_each_time_they_change(tmp_path: Path) -> None:
    fences = FenceStore(open_store(str(tmp_path)))
    fence = StorageFence(fences, DecisionSettings(), StorageFenceMetrics(CollectorRegistry()))

    def report(now: float) -> list[tuple[str, Any]]:
        with structlog.testing.capture_logs() as logs:
            asyncio.run(fence.report_relays(["member1", "member2"], at(now)))
        return [(line["event"], line.get("member_clusters")) for line in logs]

    fences.write_heartbeat(Heartbeat("member1", at(0), 2.0))
    assert report(10) == [("members_without_relay", ["member2"])]
    assert report(20) == []  # unchanged: said once
    fences.write_heartbeat(Heartbeat("member2", at(20), 2.0))
    fences.write_heartbeat(Heartbeat("member1", at(20), 2.0))
    assert report(30) == [("members_all_watched", None)]
    assert report(140) == [("members_without_relay", ["member1", "member2"])]  # three heartbeats missed


def test_a_handoff_reads_its_record_and_acknowledgement_and_which_members_a_relay_watches(tmp_path: Path) -> None:
    """What the planned moves' Cluster controller asks of the storage (failover/moves/handoff.py): a record
    written once by name, what is stored for a cluster by fence id, and the members with a fresh heartbeat (read at
    most every HEARTBEAT_READ seconds however many passes ask; an unreadable storage says None, not "none")."""
    fences = FenceStore(open_store(str(tmp_path)))
    fence = StorageFence(fences, DecisionSettings(), StorageFenceMetrics(CollectorRegistry()))
    assert asyncio.run(fence.stored("member1")) == {}
    record = FenceRecord(PERMANENT_ID, "member1", "foo-5d8f", "ResourceBinding default/foo", (), at(0))
    asyncio.run(fence.write_record(record))
    asyncio.run(fence.write_record(record))  # written once: a restarted relay writes the same name
    fence._read_at.clear()
    assert asyncio.run(fence.stored("member1")) == {PERMANENT_ID: StoredFence(True, None)}
    fences.write_ack(FenceAck(PERMANENT_ID, "member1", (), at(4), "file:///sp/savepoint-1"))
    fence._read_at.clear()
    assert asyncio.run(fence.stored("member1"))[PERMANENT_ID].ack.savepoint == "file:///sp/savepoint-1"

    fences.write_heartbeat(Heartbeat("member1", at(0), 2.0))
    assert asyncio.run(fence.watched(["member1", "member2"], at(10))) == frozenset({"member1"})
    fences.write_heartbeat(Heartbeat("member2", at(10), 2.0))
    assert asyncio.run(fence.watched(["member1", "member2"], at(11))) == frozenset({"member1"})  # read 1 s ago
    fence._heartbeats = None  # past HEARTBEAT_READ
    assert asyncio.run(fence.watched(["member1", "member2"], at(12))) == frozenset({"member1", "member2"})
    assert asyncio.run(fence.watched(["member1", "member2"], at(200))) == frozenset()  # three heartbeats missed
    broken = StorageFence(
        FenceStore(open_store(str(tmp_path / "file-not-dir"))),
        DecisionSettings(),
        StorageFenceMetrics(CollectorRegistry()),
    )
    (tmp_path / "file-not-dir").write_text("not a directory")
    assert asyncio.run(broken.watched(["member1"], at(12))) is None
