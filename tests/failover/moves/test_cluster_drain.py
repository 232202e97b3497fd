"""Drain (failover/moves/cluster_drain.py): a drained cluster's stateful workloads moved off, each by savepoint
handoff where a member relay watches it, a few at a time, and home again by failback once the drain taint is gone."""

from __future__ import annotations

import json
from datetime import timedelta

from failover.core import binding as b
from failover.core.loop_settings import DecisionSettings
from failover.fence.control_plane import StoredFence
from failover.moves.cluster_drain import (
    CHECKPOINT,
    DRAIN_RETRY,
    HANDOFF,
    IN_FLIGHT,
    STAYS,
    decide_drain,
    drain_plan,
    drain_taint,
    drained_since,
    without_drain_taint,
)
from failover.moves.failback import RECOVERY_ANNOTATION, decide_failback
from failover.moves.handoff import (
    CHECKPOINT_FALLBACK,
    HANDOFF_ANNOTATION,
    SAVEPOINT,
    STOPPING,
    decide_handoff,
    evicted_by,
    moved_without_handoff,
    read_handoff,
)
from failover.reconcile.graceful_eviction import EVICTED_FROM_ANNOTATION
from tests.failover.binding_builders import at, stamp
from tests.failover.moves.test_failback import FLAT, flink_on, member1, policy
from tests.failover.moves.test_handoff import FENCE_ID, ack, works_of
from tests.patches import merge_patch

SETTINGS = DecisionSettings(failback_enabled=True, failback_settle=timedelta(seconds=300))
WATCHED = frozenset({"member2"})
RULES = {"rules": [{"aliasLabelName": "application.karmada.io/failover-jobid", "jsonPath": "{ .jobStatus.jobId }"}]}


def member2(drained=True):
    cluster = member1()
    cluster["metadata"]["name"] = "member2"
    if drained:
        cluster["spec"] = {"taints": [drain_taint(at(300))]}
    return cluster


def job(name="job0"):
    """A stateful Flink workload on member2 (single-cluster placement), its copy healthy there."""
    binding = flink_on("member2", FLAT)
    binding["metadata"]["name"] = name
    binding["spec"]["failover"]["application"]["statePreservation"] = RULES
    return binding


def test_a_cluster_that_is_not_drained_moves_nothing():
    assert decide_drain(member2(drained=False), [job()], works_of, WATCHED, SETTINGS, at(400)).binding_patches == ()


def test_a_drained_cluster_watched_by_a_member_relay_begins_a_handoff_per_workload():
    decision = decide_drain(member2(), [job("a"), job("b")], works_of, WATCHED, SETTINGS, at(400))
    assert len(decision.binding_patches) == 2
    assert [evicted_by(patch.patch, job()) for patch in decision.binding_patches] == [None, None]
    moving = merge_patch(job("a"), decision.binding_patches[0].patch)
    assert "gracefulEvictionTasks" not in moving["spec"]  # the copy stops first
    handoff = read_handoff(moving)
    assert (handoff.reason, handoff.source, handoff.target, handoff.phase) == ("Drain", "member2", "", STOPPING)
    assert decision.requeue_after == timedelta(seconds=2)
    assert [event.reason for event in decision.events] == ["DrainMove", "DrainMove"]
    # Begun once: the next pass begins nothing again for them.
    again = decide_drain(member2(), [moving], works_of, WATCHED, SETTINGS, at(402))
    assert again.binding_patches == ()


def test_the_handoff_of_a_drain_is_carried_on_from_the_drained_cluster_and_evicts_by_drain():
    moving = merge_patch(
        job(), decide_drain(member2(), [job()], works_of, WATCHED, SETTINGS, at(400)).binding_patches[0].patch
    )
    step = decide_handoff(
        moving, works_of(moving), {("member2", FENCE_ID): StoredFence(True, ack())}, SETTINGS, at(408), WATCHED
    )
    moved = merge_patch(moving, step.patch)
    [task] = moved["spec"]["gracefulEvictionTasks"]
    assert (task["reason"], task["producer"], task["purgeMode"], task["clustersBeforeFailover"]) == (
        "Drain",
        "failover-relay-drain",
        "Directly",
        ["member2"],
    )
    assert moved["spec"]["clusters"] == [] and "rescheduleTriggeredAt" not in moved["spec"]
    assert read_handoff(moved).way == SAVEPOINT and "the cluster the scheduler picks" in step.events[0].message
    # Decided again on the moved binding (its eviction task not yet over): no second eviction.
    assert decide_handoff(moved, works_of(moved), {}, SETTINGS, at(410), WATCHED).patch is None


def test_at_most_the_planned_moves_in_flight_begin_and_the_rest_wait():
    settings = DecisionSettings(failback_enabled=True, failback_max_in_flight=2)
    bindings = [job(f"j{index}") for index in range(3)]
    decision = decide_drain(member2(), bindings, works_of, WATCHED, settings, at(400))
    assert [patch.binding.name for patch in decision.binding_patches] == ["j0", "j1"]
    assert decision.requeue_after == timedelta(seconds=2)  # the begun ones go on; the third waits
    begun = [merge_patch(bindings[i], decision.binding_patches[i].patch) for i in range(2)] + bindings[2:]
    later = decide_drain(member2(), begun, works_of, WATCHED, settings, at(402))
    assert later.binding_patches == () and later.requeue_after == DRAIN_RETRY


def test_without_a_member_relay_a_drain_evicts_at_once_from_the_newest_checkpoint_and_says_why():
    decision = decide_drain(member2(), [job()], works_of, frozenset(), SETTINGS, at(400))
    moved = merge_patch(job(), decision.binding_patches[0].patch)
    assert moved["spec"]["gracefulEvictionTasks"][0]["reason"] == "Drain"
    handoff = read_handoff(moved)
    assert handoff.way == CHECKPOINT_FALLBACK and "no member relay watches member2" in handoff.why
    assert evicted_by(decision.binding_patches[0].patch, moved) == handoff  # counted as moved at once


def test_the_plan_says_what_moves_how_and_what_stays():
    stateless = job("stateless")
    del stateless["spec"]["failover"]["application"]["statePreservation"]
    spread = job("spread")
    spread["spec"]["clusters"].append({"name": "member3", "replicas": 2})
    moving = job("moving")
    moving["spec"]["gracefulEvictionTasks"] = [{"fromCluster": "member2", "reason": "Drain"}]
    elsewhere = flink_on("member3", FLAT)
    plan = drain_plan("member2", [stateless, spread, moving, elsewhere, job("a")], works_of, WATCHED, at(400))
    assert [(item.name, item.how) for item in plan] == [
        ("default/a", HANDOFF),
        ("default/moving", IN_FLIGHT),
        ("default/spread", STAYS),
    ]
    plan = drain_plan("member2", [job("a")], works_of, frozenset(), at(400))
    assert plan[0].how == CHECKPOINT and "no member relay" in plan[0].why


def test_a_drain_task_is_remembered_for_failback_and_undrain_brings_the_workload_home():
    drained = member2()
    assert decide_failback(drained, [], [policy()], SETTINGS, at(400)).cluster_patch is not None  # down
    down = json.loads(
        decide_failback(drained, [], [policy()], SETTINGS, at(400)).cluster_patch["metadata"]["annotations"][
            RECOVERY_ANNOTATION
        ]
    )
    assert down == {"downSeenAt": stamp(400)}
    assert b.is_failover_task({"reason": "Drain", "producer": "failover-relay-drain"})
    # After the drain: the workload runs on member1, evicted from member2 at 400; member2 undrained at 500.
    home = flink_on("member1", {**FLAT, "clusterAffinity": {"clusterNames": ["member2", "member1"]}})
    home["metadata"]["annotations"][EVICTED_FROM_ANNOTATION] = json.dumps({"member2": stamp(400)})
    undrained = member2(drained=False)
    undrained["metadata"]["annotations"] = {RECOVERY_ANNOTATION: json.dumps(down)}
    recovering = decide_failback(undrained, [home], [policy()], SETTINGS, at(500))
    assert recovering.requeue_after == timedelta(seconds=300)
    undrained["metadata"]["annotations"] = recovering.cluster_patch["metadata"]["annotations"]
    back = decide_failback(undrained, [home], [policy()], SETTINGS, at(800), works_of=lambda _: [], watched=frozenset())
    [patch] = back.binding_patches
    assert merge_patch(home, patch.patch)["spec"]["gracefulEvictionTasks"][0]["fromCluster"] == "member1"


def test_drained_since_is_the_taint_s_time_and_undrain_keeps_every_other_taint():
    drained = member2()
    other = {"key": "example.io/maintenance", "effect": "NoSchedule"}
    drained["spec"]["taints"].append(other)
    assert drained_since(drained) == at(300)
    assert drained_since(member2(drained=False)) is None
    assert without_drain_taint(drained) == [other]


def test_a_failback_waits_while_a_drain_hands_the_same_workload_over():
    # The workload came to member2 from member1 and is being drained off member2 when member1 recovers.
    moving = merge_patch(
        job(), decide_drain(member2(), [job()], works_of, WATCHED, SETTINGS, at(400)).binding_patches[0].patch
    )
    assert EVICTED_FROM_ANNOTATION in moving["metadata"]["annotations"]
    decision = decide_failback(member1(), [moving], [policy()], SETTINGS, at(402), works_of=works_of, watched=WATCHED)
    assert decision.binding_patches == () and decision.requeue_after == DRAIN_RETRY


def test_a_drain_waits_and_looks_again_while_another_move_of_its_workload_ends():
    # The workload came home by a failback whose handoff is still restoring when its cluster is drained again: the
    # drain begins nothing, and looks again soon (the failback ends in the binding's pipeline, which does not queue
    # the Cluster).
    coming_home = job()
    coming_home["metadata"]["annotations"][HANDOFF_ANNOTATION] = moved_without_handoff(
        "Failback", "member1", "member2", "no member relay", at(390)
    ).annotation()
    decision = decide_drain(member2(), [coming_home], works_of, WATCHED, SETTINGS, at(400))
    assert decision.binding_patches == () and decision.requeue_after == DRAIN_RETRY
    done = merge_patch(coming_home, {"metadata": {"annotations": {HANDOFF_ANNOTATION: None}}})
    assert len(decide_drain(member2(), [done], works_of, WATCHED, SETTINGS, at(402)).binding_patches) == 1
