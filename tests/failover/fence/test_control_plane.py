"""The control plane's side of the storage fence (failover/fence/control_plane.py): which records a binding
needs, that each is written once, and that an acknowledgement makes `decide_fencing` release the old Work at once."""

from __future__ import annotations

from failover.core.loop_settings import DecisionSettings, FencingMode
from failover.core.work import MemberCopy
from failover.fence.control_plane import (
    ACK_MARGIN,
    DEFAULT_POLL,
    StoredFence,
    decide_storage_fence,
    records_done,
    wanted_records,
)
from failover.fence.fence_files import FenceAck
from failover.fence.old_copy import EVENT_FENCED, EVENT_WAITING, decide_fencing
from tests.failover.binding_builders import at
from tests.failover.work_builders import PERMANENT_ID, clusters, evicted, old_work, stored_work

SETTINGS = DecisionSettings()  # fence after 60 s
COPY = MemberCopy("member1", "flink.apache.org/v1beta1", "FlinkDeployment", "default", "foo", "foo-5d8f")


def test_a_record_is_wanted_for_the_work_the_timer_would_fence_and_for_nothing_else() -> None:
    (record,) = wanted_records(evicted(), [old_work()], clusters(False, since=-30), SETTINGS, at(1))
    assert (record.fence_id, record.cluster, record.work, record.copies) == (
        PERMANENT_ID,
        "member1",
        "foo-5d8f",
        (COPY,),
    )
    assert record.written_at == at(1)
    assert "default/" in record.binding

    # The cluster is Ready (a control-plane outage leaves it so), fencing is off, no Directly task, the Work is not
    # being deleted, the finalizer is gone, or the Work has no permanent id: no record.
    assert wanted_records(evicted(), [old_work()], clusters(True), SETTINGS, at(1)) == ()
    off = DecisionSettings(fencing=FencingMode.OFF)
    assert wanted_records(evicted(), [old_work()], clusters(False), off, at(1)) == ()
    gracefully = evicted()
    gracefully["spec"]["gracefulEvictionTasks"][0]["purgeMode"] = "Gracefully"
    assert wanted_records(gracefully, [old_work()], clusters(False), SETTINGS, at(1)) == ()
    no_task = evicted()
    no_task["spec"]["gracefulEvictionTasks"] = []
    assert wanted_records(no_task, [old_work()], clusters(False), SETTINGS, at(1)) == ()
    assert wanted_records(evicted(), [old_work(deleting=None)], clusters(False), SETTINGS, at(1)) == ()
    assert wanted_records(evicted(), [old_work(finalizers=())], clusters(False), SETTINGS, at(1)) == ()
    assert wanted_records(evicted(), [stored_work()], clusters(False), SETTINGS, at(1)) == ()
    # noExecuteTaint mode: only once the taint is there.
    tainted = DecisionSettings(fencing=FencingMode.NO_EXECUTE_TAINT)
    assert wanted_records(evicted(), [old_work()], clusters(False), tainted, at(1)) == ()
    assert len(wanted_records(evicted(), [old_work()], clusters(False, taint=True), tainted, at(1))) == 1


def test_a_record_is_written_once_then_waited_on_then_its_acknowledgement_fences_at_once() -> None:
    binding, works, state = evicted(), [old_work()], clusters(False, since=-30)
    wanted = wanted_records(binding, works, state, SETTINGS, at(1))
    first = decide_storage_fence(wanted, {})
    assert first.write == wanted and first.acknowledged == frozenset() and first.requeue_after == DEFAULT_POLL

    # Written (by this relay, or by one before a restart): never written again, read again every poll.
    again = decide_storage_fence(
        wanted_records(binding, works, state, SETTINGS, at(3)), {("member1", PERMANENT_ID): StoredFence(True)}
    )
    assert again.write == () and [r.fence_id for r in again.waiting] == [PERMANENT_ID]
    assert again.requeue_after == DEFAULT_POLL
    # Until then decide_fencing waits for its timer (fence at 30 s).
    waiting = decide_fencing(binding, works, state, SETTINGS, at(3), again.acknowledged)
    assert [event.reason for event in waiting.events] == [EVENT_WAITING]

    ack = FenceAck(PERMANENT_ID, "member1", (), at(4))
    acked = decide_storage_fence(
        wanted_records(binding, works, state, SETTINGS, at(5)), {("member1", PERMANENT_ID): StoredFence(True, ack)}
    )
    assert acked.acknowledged == {("member1", "foo-5d8f")} and acked.acks == (ack,) and acked.requeue_after is None
    fenced = decide_fencing(binding, works, state, SETTINGS, at(5), acked.acknowledged)
    (release,) = fenced.releases
    assert (release.name, release.delete_first, release.probe) == ("foo-5d8f", (), False)
    assert [event.reason for event in fenced.events] == [EVENT_FENCED]
    assert "acknowledged through the storage fence" in fenced.events[0].message


def test_an_acknowledgement_counts_only_while_the_work_is_held_on_a_cluster_that_is_not_ready() -> None:
    ack = FenceAck(PERMANENT_ID, "member1", (), at(4))
    stored = {("member1", PERMANENT_ID): StoredFence(True, ack)}
    # The cluster is Ready again: nothing is wanted, so the stale acknowledgement fences nothing.
    assert (
        decide_storage_fence(
            wanted_records(evicted(), [old_work()], clusters(True), SETTINGS, at(5)), stored
        ).acknowledged
        == frozenset()
    )
    # An acknowledgement for another Work's id says nothing about this one.
    other = {("member1", "11111111-2222-4333-8444-555555555555"): StoredFence(True, ack)}
    decision = decide_storage_fence(wanted_records(evicted(), [old_work()], clusters(False), SETTINGS, at(5)), other)
    assert decision.acknowledged == frozenset() and len(decision.write) == 1
    # decide_fencing never fences a Ready cluster's Work for an acknowledgement.
    ready = decide_fencing(evicted(), [old_work()], clusters(True), SETTINGS, at(1), {("member1", "foo-5d8f")})
    assert all(release.delete_first for release in ready.releases)


def test_records_of_works_gone_for_good_are_done() -> None:
    stored = {PERMANENT_ID: ("member1", "foo-5d8f"), "11111111-2222-4333-8444-555555555555": ("member1", "bar-1")}
    assert records_done(stored, [("member1", "foo-5d8f")]) == (PERMANENT_ID,)
    assert records_done(stored, [("member2", "foo-5d8f")]) == ()


def test_an_acknowledgement_fences_only_a_margin_after_it_was_first_seen() -> None:
    wanted = wanted_records(evicted(), [old_work()], clusters(False, since=-30), SETTINGS, at(5))
    stored = {("member1", PERMANENT_ID): StoredFence(True, FenceAck(PERMANENT_ID, "member1", (), at(4)))}
    seen = {("member1", PERMANENT_ID): at(5)}
    early = decide_storage_fence(wanted, stored, seen=seen, now=at(6))
    assert early.acknowledged == frozenset() and early.requeue_after == ACK_MARGIN - (at(6) - at(5))
    late = decide_storage_fence(wanted, stored, seen=seen, now=at(7))
    assert late.acknowledged == {("member1", "foo-5d8f")} and late.requeue_after is None
