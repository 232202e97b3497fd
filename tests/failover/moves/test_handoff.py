"""A planned move by savepoint handoff (failover/moves/handoff.py), driven as the failback reconciler drives it:
`decide_failback` begins it, the binding's own `decide_handoff` carries it on from what the storage holds, with an
injected clock."""

from __future__ import annotations

import json
from datetime import timedelta

from failover.core import binding as b
from failover.core.loop_settings import DecisionSettings
from failover.core.work import PERMANENT_ID_LABEL, MemberCopy
from failover.fence.control_plane import StoredFence
from failover.fence.fence_files import SUSPENDED, AckedCopy, FenceAck
from failover.moves.failback import IN_FLIGHT_RETRY, decide_failback
from failover.moves.handoff import (
    CHECKPOINT_FALLBACK,
    DONE,
    HANDOFF_ANNOTATION,
    NO_SAVEPOINT,
    RESTORING,
    SAVEPOINT,
    STOPPING,
    HandoffDecision,
    decide_handoff,
    evicted_by,
    read_handoff,
)
from failover.moves.rebalancer import decide_rebalance, rebalance_move
from failover.reconcile.graceful_eviction import EVICTED_FROM_ANNOTATION, decide_graceful_eviction
from failover.state.restoration import RESTORING_ANNOTATION
from tests.failover.binding_builders import at, stamp
from tests.failover.moves.test_failback import FLAT, flink_on, member1, policy
from tests.failover.work_builders import cluster, deployment_manifest, work
from tests.patches import merge_patch

ON = DecisionSettings(failback_enabled=True, failback_settle=timedelta(seconds=300))
FENCE_ID = "0b7e3f5c-3c1e-4c55-9d2b-6a4c1e2f9a10"
WORK = work(
    deployment_manifest("nginx"), cluster="member2", name="nginx-687f7fb96f", labels={PERMANENT_ID_LABEL: FENCE_ID}
)
COPY = MemberCopy("member2", "flink.apache.org/v1beta1", "FlinkDeployment", "default", "nginx", "nginx-687f7fb96f")
SAVEPOINT_PATH = "s3://state/default/savepoints/savepoint-9a27d3-0123456789ab"
WATCHED = frozenset({"member2"})


def works_of(_binding):
    return [WORK]


def begun(now=400):
    """The binding on member2 once the failback to member1 began its handoff, and that decision."""
    binding = flink_on("member2", FLAT)
    decision = decide_failback(member1(), [binding], [policy()], ON, at(now), works_of=works_of, watched=WATCHED)
    [patch] = decision.binding_patches
    return merge_patch(binding, patch.patch), decision


def ack(savepoint=SAVEPOINT_PATH, seconds=406):
    return FenceAck(FENCE_ID, "member2", (AckedCopy(COPY, SUSPENDED, "uid"),), at(seconds), savepoint)


def carry_on(binding, stored, now, settings=ON, watched=WATCHED):
    return decide_handoff(binding, works_of(binding), {("member2", FENCE_ID): stored}, settings, at(now), watched)


def test_a_failback_from_a_watched_cluster_first_stops_the_copy_and_evicts_nothing():
    binding, decision = begun()
    assert "gracefulEvictionTasks" not in binding["spec"] and binding["spec"]["clusters"][0]["name"] == "member2"
    handoff = read_handoff(binding)
    assert handoff is not None and handoff.phase == STOPPING
    assert (handoff.source, handoff.target, handoff.work, handoff.fence_id) == (
        "member2",
        "member1",
        "nginx-687f7fb96f",
        FENCE_ID,
    )
    assert evicted_by(decision.binding_patches[0].patch, binding) is None
    assert decision.requeue_after == timedelta(seconds=2)
    assert "savepoint" in decision.events[0].message
    # The recovery is handled: the next pass begins nothing again.
    assert (
        decide_failback(
            member1(), [binding], [policy()], ON, at(402), works_of=works_of, watched=WATCHED
        ).binding_patches
        == ()
    )


def test_the_fence_record_names_the_old_copy_and_the_move_waits_for_its_acknowledgement():
    binding, _ = begun()
    step = carry_on(binding, StoredFence(False), 402)
    record = step.record
    assert record is not None
    assert (record.fence_id, record.cluster, record.work, record.copies) == (
        FENCE_ID,
        "member2",
        "nginx-687f7fb96f",
        (COPY,),
    )
    assert step.patch is None and step.requeue_after == timedelta(seconds=2)
    waiting = carry_on(binding, StoredFence(True), 404)
    assert waiting.record is None and waiting.patch is None and waiting.requeue_after == timedelta(seconds=2)


def test_the_acknowledged_savepoint_lets_the_move_go_on_by_the_failback_eviction():
    binding, _ = begun()
    step = carry_on(binding, StoredFence(True, ack()), 408)
    # The decision says what to change; the write service sends the version it was decided on.
    assert step.patch is not None and "resourceVersion" not in step.patch["metadata"]
    moved = merge_patch(binding, step.patch)
    [task] = moved["spec"]["gracefulEvictionTasks"]
    assert task["fromCluster"] == "member2" and task["purgeMode"] == "Directly" and task["reason"] == "Failback"
    assert task["preservedLabelState"] == {"application.karmada.io/failover-jobid": "9a27d37ad0e5486283a527060f190710"}
    handoff = read_handoff(moved)
    assert (handoff.phase, handoff.way, handoff.savepoint, handoff.stopped_at) == (
        RESTORING,
        SAVEPOINT,
        SAVEPOINT_PATH,
        at(406),
    )
    assert step.move is not None and step.move.way == SAVEPOINT
    assert SAVEPOINT_PATH in step.events[0].message and step.events[0].reason == "PlannedMoveHandoff"


def test_a_copy_stopped_without_a_savepoint_moves_from_the_newest_checkpoint_and_says_why():
    binding, _ = begun()
    moved = merge_patch(binding, carry_on(binding, StoredFence(True, ack(savepoint=None)), 408).patch)
    handoff = read_handoff(moved)
    assert (handoff.way, handoff.why) == (CHECKPOINT_FALLBACK, NO_SAVEPOINT)
    assert moved["spec"]["gracefulEvictionTasks"][0]["fromCluster"] == "member2"


def test_no_acknowledgement_within_the_timeout_falls_back_to_the_checkpoint_move():
    binding, _ = begun()
    settings = DecisionSettings(failback_enabled=True, handoff_timeout=timedelta(seconds=30))
    assert carry_on(binding, StoredFence(True), 429, settings).requeue_after == timedelta(seconds=1)
    late = carry_on(binding, StoredFence(True), 430, settings)
    handoff = read_handoff(merge_patch(binding, late.patch))
    assert (handoff.way, handoff.why) == (CHECKPOINT_FALLBACK, "no savepoint within 30 s")
    unreadable = carry_on(binding, None, 430, settings)
    assert "could not be read" in read_handoff(merge_patch(binding, unreadable.patch)).why
    # An unreadable storage writes no record meanwhile.
    assert carry_on(binding, None, 410, settings).record is None


def test_the_move_is_done_once_karmada_took_the_workload_off_the_old_cluster_and_its_record_goes():
    binding, _ = begun()
    moved = merge_patch(binding, carry_on(binding, StoredFence(True, ack()), 408).patch)
    assert carry_on(moved, None, 410).patch is None  # the task is still there
    placed = json.loads(json.dumps(moved))
    placed["spec"]["gracefulEvictionTasks"] = []
    placed["spec"]["clusters"] = [{"name": "member1", "replicas": 2}]
    step = carry_on(placed, None, 420)
    assert step.forget == (("member2", "nginx-687f7fb96f"),)
    done = read_handoff(merge_patch(placed, step.patch))
    assert (done.phase, done.way, done.done_at) == (DONE, SAVEPOINT, at(420))
    assert carry_on(merge_patch(placed, step.patch), None, 430) == HandoffDecision()


def test_a_workload_moved_otherwise_while_stopping_ends_the_handoff_without_an_eviction():
    binding, _ = begun()
    elsewhere = json.loads(json.dumps(binding))
    elsewhere["spec"]["clusters"] = [{"name": "member3", "replicas": 2}]
    step = carry_on(elsewhere, StoredFence(True), 404)
    assert "spec" not in step.patch and step.forget == (("member2", "nginx-687f7fb96f"),)
    assert read_handoff(merge_patch(elsewhere, step.patch)).phase == DONE


def test_without_a_member_relay_the_failback_moves_at_once_from_the_checkpoint_and_says_why():
    binding = flink_on("member2", FLAT)
    decision = decide_failback(member1(), [binding], [policy()], ON, at(400), works_of=works_of, watched=frozenset())
    moved = merge_patch(binding, decision.binding_patches[0].patch)
    assert moved["spec"]["gracefulEvictionTasks"][0]["fromCluster"] == "member2"
    handoff = read_handoff(moved)
    assert (handoff.phase, handoff.way) == (RESTORING, CHECKPOINT_FALLBACK)
    assert "no member relay watches member2" in handoff.why and handoff.why in decision.events[0].message
    assert evicted_by(decision.binding_patches[0].patch, moved) == handoff  # counted as moved at once


def test_a_workload_that_is_not_a_flink_job_is_not_handed_off():
    binding = flink_on("member2", FLAT)
    deployment = work(
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "nginx", "namespace": "default"}},
        cluster="member2",
        labels={PERMANENT_ID_LABEL: FENCE_ID},
    )
    decision = decide_failback(
        member1(), [binding], [policy()], ON, at(400), works_of=lambda _: [deployment], watched=WATCHED
    )
    handoff = read_handoff(merge_patch(binding, decision.binding_patches[0].patch))
    assert handoff.way == CHECKPOINT_FALLBACK and "not a Flink job" in handoff.why


def test_stopping_handoffs_count_against_the_failbacks_in_flight():
    bindings = []
    for index in range(2):
        binding, _ = begun()
        binding["metadata"]["name"] = f"job{index}"
        bindings.append(binding)
    waiting = flink_on("member2", FLAT)
    waiting["metadata"]["name"] = "job2"
    settings = DecisionSettings(failback_enabled=True, failback_settle=timedelta(seconds=300), failback_max_in_flight=2)
    decision = decide_failback(
        member1(), [*bindings, waiting], [policy()], settings, at(404), works_of=works_of, watched=WATCHED
    )
    assert decision.binding_patches == () and decision.requeue_after == IN_FLIGHT_RETRY


def test_a_handoff_annotation_that_does_not_read_is_not_acted_on():
    binding, _ = begun()
    for hostile in (
        "not json",
        "[]",
        json.dumps({"phase": STOPPING}),
        json.dumps({**json.loads(binding["metadata"]["annotations"][HANDOFF_ANNOTATION]), "fenceId": "../../etc"}),
    ):
        broken = json.loads(json.dumps(binding))
        broken["metadata"]["annotations"][HANDOFF_ANNOTATION] = hostile
        assert read_handoff(broken) is None
        assert carry_on(broken, StoredFence(True, ack()), 408).patch is None


def test_a_member_relay_gone_while_stopping_ends_the_wait_at_once_but_an_unreadable_storage_does_not():
    binding, _ = begun()
    gone = carry_on(binding, StoredFence(True), 404, watched=frozenset())
    handoff = read_handoff(merge_patch(binding, gone.patch))
    assert handoff.way == CHECKPOINT_FALLBACK and "member relay of member2 stopped answering" in handoff.why
    assert carry_on(binding, StoredFence(True), 404, watched=None).patch is None
    # An acknowledgement written before the relay went still counts.
    assert (
        read_handoff(
            merge_patch(binding, carry_on(binding, StoredFence(True, ack()), 408, watched=frozenset()).patch)
        ).way
        == SAVEPOINT
    )


def test_with_the_storage_fence_off_the_failback_says_so():
    binding = flink_on("member2", FLAT)
    decision = decide_failback(member1(), [binding], [policy()], ON, at(400), works_of=works_of)
    handoff = read_handoff(merge_patch(binding, decision.binding_patches[0].patch))
    assert handoff.way == CHECKPOINT_FALLBACK and handoff.why.startswith("the storage fence is off")


# --- a WorkloadRebalancer's move of a stateful single-cluster workload (failover/moves/rebalancer.py)

ORDERED_HOME_FIRST = {
    "clusterAffinities": [
        {"affinityName": "home", "clusterNames": ["member1"]},
        {"affinityName": "away", "clusterNames": ["member2", "member3"]},
    ],
    "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 1, "minGroups": 1}],
}
CLUSTERS = {name: cluster(name, since=0) for name in ("member1", "member2", "member3")}
NGINX = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx", "namespace": "default"}
RULES = {"rules": [{"aliasLabelName": "application.karmada.io/failover-jobid", "jsonPath": "{ .jobStatus.jobId }"}]}


def rebalanced_job(placement=ORDERED_HOME_FIRST):
    """A stateful workload on member2 whose placement prefers member1, and the rebalancer over it."""
    binding = flink_on("member2", placement)
    binding["spec"]["failover"]["application"]["statePreservation"] = RULES
    rebalancer = {
        "metadata": {"name": "demo", "creationTimestamp": stamp(350), "generation": 1},
        "spec": {"workloads": [NGINX]},
    }
    return binding, rebalancer


def test_the_scheduler_s_choice_on_a_fresh_reschedule_is_told_beforehand():
    binding, _ = rebalanced_job()
    assert rebalance_move(binding, CLUSTERS) == "member1"
    down = {**CLUSTERS, "member1": cluster("member1", ready=False, since=0)}
    assert rebalance_move(binding, down) is None  # member2 is in the first term that fits: it stays
    assert rebalance_move(flink_on("member2", FLAT), CLUSTERS) is None  # ClusterLocality keeps the current cluster
    labelled = {**ORDERED_HOME_FIRST, "clusterAffinities": [{"labelSelector": {"matchLabels": {"a": "b"}}}]}
    assert rebalance_move(flink_on("member2", labelled), CLUSTERS) is None


def test_a_rebalance_that_moves_a_stateful_job_hands_it_over_instead_of_stamping():
    binding, rebalancer = rebalanced_job()
    ref = b.object_ref(binding)
    decision = decide_rebalance(rebalancer, {ref: binding}, ON, at(400), CLUSTERS, works_of=works_of, watched=WATCHED)
    [patch] = decision.stamps
    moving = merge_patch(binding, patch.patch)
    assert "rescheduleTriggeredAt" not in moving["spec"] and patch.version == "42"
    assert "resourceVersion" not in patch.patch["metadata"]  # the write service sends it
    handoff = read_handoff(moving)
    assert (handoff.reason, handoff.source, handoff.target, handoff.phase) == (
        "Rebalance",
        "member2",
        "member1",
        STOPPING,
    )
    assert decision.status_patch["status"]["observedWorkloads"][0]["result"] == "Successful"
    # Decided again on the annotated binding: nothing more; the binding's own pipeline carries it on.
    assert (
        decide_rebalance(rebalancer, {ref: moving}, ON, at(402), CLUSTERS, works_of=works_of, watched=WATCHED).stamps
        == ()
    )
    step = carry_on(moving, StoredFence(True, ack()), 408)
    moved = merge_patch(moving, step.patch)
    [task] = moved["spec"]["gracefulEvictionTasks"]
    assert (task["reason"], task["producer"], task["fromCluster"]) == (
        "Rebalance",
        "failover-relay-rebalance",
        "member2",
    )
    assert moved["spec"]["rescheduleTriggeredAt"] == stamp(408)  # the scheduler starts again from the first term


def test_without_a_member_relay_the_rebalance_stamps_as_karmada_does_and_says_why_not_by_savepoint():
    binding, rebalancer = rebalanced_job()
    ref = b.object_ref(binding)
    decision = decide_rebalance(
        rebalancer, {ref: binding}, ON, at(400), CLUSTERS, works_of=works_of, watched=frozenset()
    )
    assert [s.patch for s in decision.stamps] == [{"spec": {"rescheduleTriggeredAt": stamp(350)}}]
    assert "not by savepoint: no member relay watches member2" in decision.events[0].message


def test_a_rebalance_task_is_not_remembered_for_failback():
    binding, _ = rebalanced_job()
    binding["spec"]["clusters"] = [{"name": "member1", "replicas": 2}]
    binding["spec"]["gracefulEvictionTasks"] = [
        {
            "fromCluster": "member2",
            "reason": "Rebalance",
            "producer": "failover-relay-rebalance",
            "purgeMode": "Directly",
            "creationTimestamp": stamp(400),
            "clustersBeforeFailover": ["member2"],
        }
    ]
    binding["status"]["aggregatedStatus"] = [{"clusterName": "member1", "applied": True, "health": "Healthy"}]
    binding["metadata"]["annotations"].pop(EVICTED_FROM_ANNOTATION)
    ended = decide_graceful_eviction(binding, ON, at(420))
    annotations = (ended.patch or {}).get("metadata", {}).get("annotations", {})
    assert ended.patch["spec"]["gracefulEvictionTasks"] == []
    assert "member2" not in json.loads(annotations.get(EVICTED_FROM_ANNOTATION, "{}"))


def test_a_copy_still_restoring_that_stopped_with_a_savepoint_hands_over_its_own_job():
    # The copy on member2 came by a move that carried the job before it, and has not checkpointed yet; its own job
    # (reported in its status) took the savepoint, whose name carries that job's id: the move must carry that id.
    own, carried = "c08ed3" + "0" * 26, "5e6fb2" + "0" * 26
    binding, _ = begun()
    binding["spec"]["failover"]["application"]["statePreservation"] = {
        "rules": [{"aliasLabelName": "application.karmada.io/failover-jobid", "jsonPath": "{ .jobStatus.jobId }"}]
    }
    for item in binding["status"]["aggregatedStatus"]:
        item["status"] = {"jobStatus": {"jobId": own, "state": "FINISHED"}}
    binding["metadata"]["annotations"][RESTORING_ANNOTATION] = json.dumps(
        {
            "member2": {
                "since": stamp(390),
                "from": "member1",
                "carried": {"application.karmada.io/failover-jobid": carried},
            }
        }
    )
    [task] = b.eviction_tasks(merge_patch(binding, carry_on(binding, StoredFence(True, ack()), 408).patch))
    assert task["preservedLabelState"] == {"application.karmada.io/failover-jobid": own}
    # Stopped without a savepoint, the newest state is still the one the move brought.
    [task] = b.eviction_tasks(
        merge_patch(binding, carry_on(binding, StoredFence(True, ack(savepoint=None)), 408).patch)
    )
    assert task["preservedLabelState"] == {"application.karmada.io/failover-jobid": carried}
