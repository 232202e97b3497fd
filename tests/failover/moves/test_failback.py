"""Failback decisions: recovery, settle time, opt-in, affected workloads, never twice for one recovery."""

from __future__ import annotations

import json
from datetime import timedelta

from failover.core.api import FAILBACK_ANNOTATION
from failover.core.loop_settings import DecisionSettings
from failover.moves.failback import IN_FLIGHT_RETRY, RECOVERY_ANNOTATION, decide_failback
from failover.reconcile.graceful_eviction import EVICTED_FROM_ANNOTATION
from tests.failover.binding_builders import at, nginx_binding, stamp
from tests.failover.work_builders import cluster
from tests.patches import merge_patch

ON = DecisionSettings(failback_enabled=True, failback_settle=timedelta(seconds=300))
OFF = DecisionSettings(failback_settle=timedelta(seconds=300))


def member1(ready="True", since=100, taints=(), annotations=None):
    """member1 as Karmada reports it: Ready (or `ready`) since `since`."""
    return cluster(
        "member1",
        ready,
        since,
        taints=taints,
        annotations=dict(annotations or {}),
        reason="ClusterReady",
        message="cluster is healthy and ready",
    )


def evicted_nginx(evicted_at=50):
    """nginx now on member2 after an eviction from member1 that started at `evicted_at` and has finished."""
    binding = nginx_binding(["member2"])
    binding["metadata"]["annotations"][EVICTED_FROM_ANNOTATION] = json.dumps({"member1": stamp(evicted_at)})
    return binding


POLICY = {
    "apiVersion": "policy.karmada.io/v1alpha1",
    "kind": "PropagationPolicy",
    "metadata": {"name": "nginx-propagation", "namespace": "default", "annotations": {}},
}


def policy(choice=None):
    obj = json.loads(json.dumps(POLICY))
    if choice is not None:
        obj["metadata"]["annotations"][FAILBACK_ANNOTATION] = choice
    return obj


def test_recovered_cluster_gets_one_rebalancer_after_settle_time():
    decision = decide_failback(member1(), [evicted_nginx()], [policy()], ON, at(400))
    rebalancer = decision.rebalancer
    assert rebalancer["kind"] == "WorkloadRebalancer" and rebalancer["apiVersion"] == "apps.karmada.io/v1alpha1"
    assert rebalancer["metadata"]["name"].startswith("failback-member1-")
    assert rebalancer["metadata"]["labels"] == {"failover-relay.io/failback-cluster": "member1"}
    assert rebalancer["spec"] == {
        "workloads": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx", "namespace": "default"}],
        "ttlSecondsAfterFinished": 3600,
    }
    assert [e.reason for e in decision.events] == ["FailbackTriggered"]


def test_nothing_before_settle_time_but_a_requeue_for_it():
    decision = decide_failback(member1(), [evicted_nginx()], [policy()], ON, at(399))
    assert decision.rebalancer is None and decision.requeue_after == timedelta(seconds=1)


def test_not_ready_or_no_execute_tainted_cluster_does_not_fail_back():
    taint = {"key": "cluster.karmada.io/not-ready", "effect": "NoExecute"}
    for down in (member1(ready="False"), member1(ready="Unknown"), member1(taints=[taint])):
        assert decide_failback(down, [evicted_nginx()], [policy()], ON, at(10**5)).rebalancer is None


def test_no_schedule_taint_does_not_block_failback():
    taint = {"key": "cluster.karmada.io/unschedulable", "effect": "NoSchedule"}
    assert decide_failback(member1(taints=[taint]), [evicted_nginx()], [policy()], ON, at(400)).rebalancer


def test_settle_time_counts_from_when_the_no_execute_taint_went_away():
    taint = {"key": "failover.example/down", "effect": "NoExecute"}
    down = decide_failback(member1(since=0, taints=[taint]), [evicted_nginx()], [policy()], ON, at(60))
    tainted = merge_patch(member1(since=0, taints=[taint]), down.cluster_patch)
    untainted = {**tainted, "spec": {"taints": []}}
    first = decide_failback(untainted, [evicted_nginx()], [policy()], ON, at(500))
    assert first.rebalancer is None and first.requeue_after == timedelta(seconds=300)
    recorded = merge_patch(untainted, first.cluster_patch)
    assert json.loads(recorded["metadata"]["annotations"][RECOVERY_ANNOTATION])["recoveredSince"] == stamp(500)
    assert decide_failback(recorded, [evicted_nginx()], [policy()], ON, at(800)).rebalancer is not None


def test_never_twice_for_the_same_recovery():
    first = decide_failback(member1(), [evicted_nginx()], [policy()], ON, at(400))
    stored_cluster = merge_patch(member1(), first.cluster_patch)
    # Even if the binding patches were lost (crash), the recorded name stops a second rebalancer.
    again = decide_failback(stored_cluster, [evicted_nginx()], [policy()], ON, at(500))
    assert again.rebalancer is None


def test_rebalancer_name_is_deterministic_for_a_recovery():
    one = decide_failback(member1(), [evicted_nginx()], [policy()], ON, at(400)).rebalancer["metadata"]["name"]
    two = decide_failback(member1(), [evicted_nginx()], [policy()], ON, at(900)).rebalancer["metadata"]["name"]
    later = decide_failback(member1(since=200), [evicted_nginx()], [policy()], ON, at(900))
    assert one == two and later.rebalancer["metadata"]["name"] != one


def test_handled_bindings_forget_the_eviction():
    binding = evicted_nginx()
    decision = decide_failback(member1(), [binding], [policy()], ON, at(400))
    [patch] = decision.binding_patches
    assert patch.binding.name == "nginx-deployment" and patch.binding.namespace == "default"
    stored = merge_patch(binding, patch.patch)
    assert EVICTED_FROM_ANNOTATION not in stored["metadata"]["annotations"]
    assert decide_failback(member1(), [stored], [policy()], ON, at(500)).rebalancer is None


def test_failback_is_off_by_default_and_opt_in_per_policy():
    assert decide_failback(member1(), [evicted_nginx()], [policy()], OFF, at(400)).rebalancer is None
    assert decide_failback(member1(), [evicted_nginx()], [policy("true")], OFF, at(400)).rebalancer is not None
    assert decide_failback(member1(), [evicted_nginx()], [policy("false")], ON, at(400)).rebalancer is None


def test_cluster_policy_opt_in():
    binding = evicted_nginx()
    binding["kind"] = "ClusterResourceBinding"
    binding["metadata"]["annotations"] = {
        "clusterpropagationpolicy.karmada.io/name": "everything",
        EVICTED_FROM_ANNOTATION: json.dumps({"member1": stamp(50)}),
    }
    cpp = {
        "kind": "ClusterPropagationPolicy",
        "metadata": {"name": "everything", "annotations": {FAILBACK_ANNOTATION: "true"}},
    }
    assert decide_failback(member1(), [binding], [cpp], OFF, at(400)).rebalancer is not None


def test_application_failure_on_a_cluster_that_stayed_ready_is_not_a_recovery():
    # Ready since 100, the workload was evicted at 150: the cluster never went down after the eviction.
    assert decide_failback(member1(), [evicted_nginx(evicted_at=150)], [policy()], ON, at(10**4)).rebalancer is None


def test_workload_back_on_the_cluster_or_still_being_evicted_is_not_affected():
    back = evicted_nginx()
    back["spec"]["clusters"].append({"name": "member1", "replicas": 1})
    evicting = evicted_nginx()
    evicting["spec"]["gracefulEvictionTasks"] = [
        {
            "fromCluster": "member1",
            "reason": "TaintUntolerated",
            "producer": "TaintManager",
            "creationTimestamp": stamp(50),
        }
    ]
    assert decide_failback(member1(), [back, evicting], [policy()], ON, at(400)).rebalancer is None


def test_clusters_before_failover_of_a_pending_task_counts():
    binding = nginx_binding(["member3"])
    binding["spec"]["gracefulEvictionTasks"] = [
        {
            "fromCluster": "member2",
            "reason": "ApplicationFailure",
            "producer": "x",
            "purgeMode": "Never",
            "suppressDeletion": True,
            "clustersBeforeFailover": ["member1", "member2"],
            "creationTimestamp": stamp(50),
        }
    ]
    decision = decide_failback(member1(), [binding], [policy()], ON, at(400))
    assert decision.rebalancer["spec"]["workloads"][0]["name"] == "nginx" and decision.binding_patches == ()


def test_one_rebalancer_lists_every_affected_workload_once():
    other = evicted_nginx()
    other["metadata"]["name"] = "web-deployment"
    other["spec"]["resource"]["name"] = "web"
    decision = decide_failback(member1(), [evicted_nginx(), other], [policy()], ON, at(400))
    assert [w["name"] for w in decision.rebalancer["spec"]["workloads"]] == ["nginx", "web"]
    assert len(decision.binding_patches) == 2


def test_going_down_again_clears_the_recovery_record():
    first = decide_failback(member1(), [evicted_nginx()], [policy()], ON, at(400))
    stored = merge_patch(member1(), first.cluster_patch)
    stored["status"]["conditions"][0]["status"] = "False"
    down = decide_failback(stored, [], [], ON, at(500))
    assert json.loads(merge_patch(stored, down.cluster_patch)["metadata"]["annotations"][RECOVERY_ANNOTATION]) == {
        "downSeenAt": stamp(500)
    }


def test_malformed_input_does_not_raise():
    for junk in (
        {},
        [],
        {"metadata": {"name": "x"}, "status": {"conditions": "no"}},
        {
            "metadata": {"name": "member1", "annotations": {RECOVERY_ANNOTATION: "{"}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        },
    ):
        decide_failback(junk, [{}, [], {"spec": {"clusters": 3}}], [[], {}], ON, at(0))


def test_policy_annotations_of_the_wrong_type_do_not_raise():
    binding = evicted_nginx()
    binding["metadata"]["annotations"]["propagationpolicy.karmada.io/name"] = ["not", "a", "string"]
    assert decide_failback(member1(), [binding], [policy("true")], OFF, at(400)).rebalancer is None


# --- failback that carries state and actually moves back (a bare rebalancer writes no eviction task, and
# ClusterLocality keeps a single-cluster placement where it is)


def flink_on(current, placement, evicted_at=50, job="9a27d37ad0e5486283a527060f190710"):
    """A FlinkDeployment's binding now on `current` after an eviction from member1, its copy healthy there."""
    binding = nginx_binding([current])
    binding["metadata"]["resourceVersion"] = "42"
    binding["metadata"]["annotations"][EVICTED_FROM_ANNOTATION] = json.dumps({"member1": stamp(evicted_at)})
    binding["metadata"]["annotations"]["failover-relay.io/last-state"] = json.dumps(
        {current: {"labels": {"application.karmada.io/failover-jobid": job}, "at": stamp(60)}}
    )
    binding["spec"]["placement"] = placement
    return binding


FLAT = {
    "clusterAffinity": {"clusterNames": ["member1", "member2", "member3"]},
    "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 1, "minGroups": 1}],
}
ORDERED = {
    "clusterAffinities": [
        {"affinityName": "primary", "clusterNames": ["member1"]},
        {"affinityName": "backup", "clusterNames": ["member2", "member3"]},
    ],
    "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 1, "minGroups": 1}],
}


def test_a_single_cluster_workload_moves_back_by_an_eviction_that_carries_its_state():
    binding = flink_on("member2", FLAT)
    decision = decide_failback(member1(), [binding], [policy()], ON, at(400))
    assert decision.rebalancer is None
    [patch] = decision.binding_patches
    assert (
        patch.version == "42" and "resourceVersion" not in patch.patch["metadata"]
    )  # conditional: decided on this version
    stored = merge_patch(binding, patch.patch)
    assert stored["spec"]["clusters"] == []
    [task] = stored["spec"]["gracefulEvictionTasks"]
    assert task["fromCluster"] == "member2" and task["purgeMode"] == "Directly"  # never two copies
    assert task["preservedLabelState"] == {"application.karmada.io/failover-jobid": "9a27d37ad0e5486283a527060f190710"}
    assert task["clustersBeforeFailover"] == ["member2"] and task["reason"] == "Failback"
    assert "rescheduleTriggeredAt" not in stored["spec"]
    assert EVICTED_FROM_ANNOTATION not in stored["metadata"]["annotations"]  # never twice for one recovery
    assert decide_failback(member1(), [stored], [policy()], ON, at(500)).binding_patches == ()


def test_ordered_affinities_are_also_rescheduled_from_the_first_term():
    stored = merge_patch(
        flink_on("member2", ORDERED),
        decide_failback(member1(), [flink_on("member2", ORDERED)], [policy()], ON, at(400)).binding_patches[0].patch,
    )
    assert stored["spec"]["rescheduleTriggeredAt"] == stamp(400)


def test_a_flat_placement_whose_tie_goes_to_another_cluster_is_not_moved_and_says_why():
    binding = flink_on("member3", {**FLAT, "clusterAffinity": {"clusterNames": ["member0", "member1", "member3"]}})
    decision = decide_failback(member1(), [binding], [policy()], ON, at(400))
    [patch] = decision.binding_patches
    assert "spec" not in patch.patch  # only the record is cleared: handled, not retried
    assert [event.reason for event in decision.events] == ["FailbackNotPossible"]
    assert "member0" in decision.events[0].message


def test_a_cluster_that_cannot_be_scheduled_does_not_win_the_tie():
    binding = flink_on("member3", {**FLAT, "clusterAffinity": {"clusterNames": ["member0", "member1", "member3"]}})
    tainted = cluster("member0", since=0, taints=[{"key": "x", "effect": "NoSchedule"}], typed=False)
    decision = decide_failback(member1(), [binding], [policy()], ON, at(400), {"member0": tainted})
    assert decision.binding_patches[0].patch["spec"]["gracefulEvictionTasks"][0]["fromCluster"] == "member3"


def test_a_label_selected_placement_is_not_predicted():
    binding = flink_on("member2", {**FLAT, "clusterAffinity": {"labelSelector": {"matchLabels": {"a": "b"}}}})
    decision = decide_failback(member1(), [binding], [policy()], ON, at(400))
    assert [event.reason for event in decision.events] == ["FailbackNotPossible"]


def test_at_most_the_configured_number_of_failback_evictions_at_once():
    bindings = []
    for index in range(3):
        binding = flink_on("member2", FLAT)
        binding["metadata"]["name"] = f"job{index}"
        bindings.append(binding)
    decision = decide_failback(
        member1(),
        bindings,
        [policy()],
        DecisionSettings(failback_enabled=True, failback_settle=timedelta(seconds=300), failback_max_in_flight=2),
        at(400),
    )
    assert len(decision.binding_patches) == 2 and decision.requeue_after == IN_FLIGHT_RETRY
    in_flight = [
        merge_patch(b, p.patch) for b, p in zip(bindings[:2], decision.binding_patches, strict=True)
    ] + bindings[2:]
    later = decide_failback(
        member1(),
        in_flight,
        [policy()],
        DecisionSettings(failback_enabled=True, failback_settle=timedelta(seconds=300), failback_max_in_flight=2),
        at(410),
    )
    assert later.binding_patches == () and later.requeue_after == IN_FLIGHT_RETRY


def test_a_spread_workload_still_gets_the_rebalancer():
    binding = evicted_nginx()
    binding["spec"]["placement"] = {
        "clusterAffinity": {"clusterNames": ["member1", "member2"]},
        "replicaScheduling": {"replicaSchedulingType": "Divided"},
    }
    assert decide_failback(member1(), [binding], [policy()], ON, at(400)).rebalancer is not None
