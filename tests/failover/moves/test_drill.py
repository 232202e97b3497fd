"""`failover-relay drill`'s decisions: when a leg may start, what it writes, and how the relay carries it on."""

from __future__ import annotations

import json
from dataclasses import replace

from failover.core import binding as b
from failover.core.loop_settings import DecisionSettings
from failover.fence.control_plane import StoredFence
from failover.moves.drill import leg_view, start_leg
from failover.moves.handoff import (
    CHECKPOINT_FALLBACK,
    DONE,
    HANDOFF_ANNOTATION,
    STOPPING,
    decide_handoff,
    read_handoff,
)
from failover.state.restoration import RESTORING_ANNOTATION
from tests.failover.binding_builders import at, stamp
from tests.failover.moves.test_failback import ORDERED, flink_on
from tests.failover.moves.test_handoff import FENCE_ID, WORK, ack
from tests.failover.work_builders import cluster
from tests.patches import merge_patch

SETTINGS = DecisionSettings()
CLUSTERS = {name: cluster(name, True, 0, typed=False) for name in ("member1", "member2", "member3")}


def on_member2():
    return flink_on("member2", ORDERED)


def test_a_leg_off_a_watched_cluster_is_a_handoff_that_stops_the_copy_on_the_cluster_left() -> None:
    start = start_leg(on_member2(), CLUSTERS, [WORK], True, SETTINGS, at(400))
    assert not isinstance(start, str)
    assert start.change.version == "42" and "spec" not in start.change.patch
    assert "resourceVersion" not in start.change.patch["metadata"]  # the write service sends it
    moved = merge_patch(on_member2(), start.change.patch)
    handoff = read_handoff(moved)
    assert handoff is not None and handoff.phase == STOPPING and handoff.reason == "Drill" and handoff.target == ""
    # The binding's own pipeline carries it on: the fence record stops the copy on the cluster left.
    step = decide_handoff(moved, [WORK], {("member2", FENCE_ID): StoredFence(False)}, SETTINGS, at(402))
    assert step.record is not None and step.record.cluster == "member2"


def test_the_acknowledged_savepoint_writes_the_drill_eviction_restarting_the_scheduler() -> None:
    start = start_leg(on_member2(), CLUSTERS, [WORK], True, SETTINGS, at(400))
    assert not isinstance(start, str)
    moved = merge_patch(on_member2(), start.change.patch)
    decision = decide_handoff(moved, [WORK], {("member2", FENCE_ID): StoredFence(True, ack())}, SETTINGS, at(410))
    evicted = merge_patch(moved, decision.patch)
    [task] = b.eviction_tasks(evicted)
    assert (task["reason"], task["producer"], task["purgeMode"]) == ("Drill", "failover-relay-drill", "Directly")
    assert b.target_clusters(evicted) == [] and b.spec(evicted)["rescheduleTriggeredAt"] == "2025-03-01T12:06:50Z"


def test_without_a_member_relay_the_leg_is_the_checkpoint_move_at_once_and_says_why() -> None:
    start = start_leg(on_member2(), CLUSTERS, [WORK], False, SETTINGS, at(400))
    assert not isinstance(start, str)
    assert start.handoff.way == CHECKPOINT_FALLBACK and "no member relay watches member2" in (start.handoff.why or "")
    [task] = start.change.patch["spec"]["gracefulEvictionTasks"]
    assert task["fromCluster"] == "member2" and task["preservedLabelState"]


def test_a_leg_starts_only_from_a_healthy_single_cluster_workload_with_nothing_else_moving() -> None:
    spread = on_member2()
    spread["spec"]["clusters"].append({"name": "member3", "replicas": 1})
    assert "runs on 2 clusters" in str(start_leg(spread, CLUSTERS, [WORK], True, SETTINGS, at(400)))
    busy = on_member2()
    busy["spec"]["gracefulEvictionTasks"] = [{"fromCluster": "member1", "reason": "Failback", "producer": "x"}]
    assert "under way" in str(start_leg(busy, CLUSTERS, [WORK], True, SETTINGS, at(400)))
    down = {**CLUSTERS, "member2": cluster("member2", False, 0, typed=False)}
    assert "not Ready" in str(start_leg(on_member2(), down, [WORK], True, SETTINGS, at(400)))
    restoring = on_member2()
    restoring["metadata"]["annotations"][RESTORING_ANNOTATION] = json.dumps(
        {
            "member2": {
                "from": "member1",
                "carried": {"application.karmada.io/failover-jobid": "a" * 32},
                "since": stamp(1),
            }
        }
    )
    assert "has not completed a checkpoint" in str(start_leg(restoring, CLUSTERS, [WORK], True, SETTINGS, at(400)))
    sick = on_member2()
    for item in sick["status"]["aggregatedStatus"]:
        item["health"] = "Unhealthy"
    assert "not Healthy" in str(start_leg(sick, CLUSTERS, [WORK], True, SETTINGS, at(400)))


def test_a_leg_has_landed_once_its_handoff_is_done_and_the_new_copy_is_healthy_elsewhere() -> None:
    # The command's clock has microseconds; the annotation keeps seconds.
    start = start_leg(on_member2(), CLUSTERS, [WORK], True, SETTINGS, at(400.25))
    assert not isinstance(start, str)
    moved = merge_patch(on_member2(), start.change.patch)
    assert leg_view(moved, start.handoff).landed is None  # still stopping, still on member2
    landed = flink_on("member1", ORDERED)
    done = replace(start.handoff, phase=DONE, done_at=at(420))
    landed["metadata"]["annotations"][HANDOFF_ANNOTATION] = done.annotation()
    view = leg_view(landed, start.handoff)
    assert view.landed == "member1" and view.task_gone
    for item in landed["status"]["aggregatedStatus"]:
        item["health"] = "Unknown"
    assert leg_view(landed, start.handoff).landed is None
    # Another leg's handoff (a later start) is not this one's.
    assert leg_view(landed, replace(done, started_at=at(1))).handoff is None
