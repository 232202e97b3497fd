"""Never none (failover/reconcile/last_cluster.py), through the application failover decision with an injected clock:
member1 -> member2 -> member3 with copies that never come up ends with the workload kept on member3, not on no
cluster (issue 25 item 5)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from failover.core.loop_settings import DecisionSettings
from failover.reconcile.application_failover import UNHEALTHY_SINCE_ANNOTATION, decide_application_failover
from failover.reconcile.last_cluster import EVENT_KEPT, RECHECK, why_not_takers
from tests.failover.binding_builders import at, flink_binding, set_health, stamp
from tests.failover.work_builders import cluster
from tests.patches import merge_patch

MEMBERS = ("member1", "member2", "member3")
TOLERATION = 60  # FLINK_BINDING's tolerationSeconds
GRACE = DecisionSettings().restore_grace.total_seconds()


def clusters(*names: str, **overrides: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found = {name: cluster(name) for name in names}
    found.update(overrides)
    return found


def on_three_members() -> dict[str, Any]:
    """FLINK_BINDING placed by clusterAffinity over three members with spread maxGroups 1, running on member1."""
    binding = flink_binding(member1="Unhealthy")
    binding["spec"]["placement"] = {
        "clusterAffinity": {"clusterNames": list(MEMBERS)},
        "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 1, "minGroups": 1}],
    }
    return binding


def moved_to(binding: dict[str, Any], member: str) -> dict[str, Any]:
    """What Karmada's scheduler and controllers make of the eviction: the workload on `member`, whose copy is not up."""
    binding["spec"]["clusters"] = [{"name": member, "replicas": 1}]
    set_health(binding, member, "Unhealthy", {"jobStatus": {"state": "RECONCILING"}})
    return binding


def fail_over(binding, start, everything):
    """The only target Unhealthy from `start`; decide once then, once a toleration later; return that decision."""
    stored = merge_patch(binding, decide_application_failover(binding, DecisionSettings(), at(start), everything).patch)
    return decide_application_failover(stored, DecisionSettings(), at(start + TOLERATION), everything), stored


def test_copies_that_never_come_up_are_moved_until_no_other_cluster_can_take_them_then_kept():
    everything = clusters(*MEMBERS)
    first, stored = fail_over(on_three_members(), 0, everything)
    assert first.evicted == ("member1",)
    binding = moved_to(merge_patch(stored, first.patch), "member2")
    second, stored = fail_over(binding, TOLERATION + GRACE, everything)
    assert second.evicted == ("member2",)
    binding = moved_to(merge_patch(stored, second.patch), "member3")

    third, stored = fail_over(binding, 2 * (TOLERATION + GRACE), everything)
    assert third.evicted == () and third.patch is None and third.kept == ("member3",)
    assert [event.reason for event in third.events] == [EVENT_KEPT]
    assert "member1 still being evicted from; member2 still being evicted from" in third.events[0].message
    assert third.requeue_after == RECHECK
    # An eviction task ending (its grace period) makes member1 a taker again: the failover happens at once.
    stored["spec"]["gracefulEvictionTasks"] = stored["spec"]["gracefulEvictionTasks"][1:]
    later = decide_application_failover(stored, DecisionSettings(), at(3 * (TOLERATION + GRACE)), everything)
    assert later.evicted == ("member3",) and later.kept == ()


def test_a_cluster_that_is_not_ready_or_tainted_cannot_take_the_workload():
    binding = on_three_members()
    no_execute = {"key": "cluster.karmada.io/not-ready", "effect": "NoSchedule"}
    everything = clusters(
        *MEMBERS, member2=cluster("member2", ready=False), member3=cluster("member3", taints=(no_execute,))
    )
    decision, _ = fail_over(binding, 0, everything)
    assert decision.kept == ("member1",)
    assert "member2 not Ready; member3 tainted cluster.karmada.io/not-ready:NoSchedule" in decision.events[0].message
    binding["spec"]["placement"]["clusterTolerations"] = [{"key": "cluster.karmada.io/not-ready", "operator": "Exists"}]
    assert fail_over(binding, 0, everything)[0].evicted == ("member1",)


def test_a_cluster_outside_the_placement_is_no_taker_and_one_inside_it_unknown_is():
    binding = on_three_members()
    binding["spec"]["placement"]["clusterAffinity"]["clusterNames"] = ["member1"]
    assert fail_over(binding, 0, clusters(*MEMBERS))[0].kept == ("member1",)
    binding["spec"]["placement"]["clusterAffinity"]["clusterNames"] = list(MEMBERS)
    # Without the Clusters (the cache not synced), the named ones count as takers unless they are being evicted from.
    assert fail_over(binding, 0, None)[0].evicted == ("member1",)


def test_a_placement_without_names_and_unknown_clusters_evicts_as_karmada_does():
    binding = on_three_members()
    del binding["spec"]["placement"]["clusterAffinity"]
    assert why_not_takers(binding, None, {"member1"}) is None
    assert why_not_takers(binding, {"member1": cluster("member1")}, {"member1"}) == {}


def test_a_spread_workload_keeps_its_last_target_but_leaves_the_others():
    binding = on_three_members()
    binding["spec"]["placement"]["clusterAffinity"]["clusterNames"] = ["member1", "member2"]
    binding["spec"]["clusters"] = [{"name": "member1", "replicas": 1}, {"name": "member2", "replicas": 1}]
    set_health(binding, "member2", "Unhealthy", {})
    decision, _ = fail_over(binding, 0, clusters("member1", "member2"))
    assert decision.evicted == ("member1",) and decision.kept == ("member2",)


def test_the_restore_grace_ends_when_the_new_copy_came_up():
    """Its task ended (graceful eviction ends it once every target is Healthy): a failure is counted at once."""
    binding = moved_to(on_three_members(), "member2")
    binding["spec"]["gracefulEvictionTasks"] = [
        {
            "fromCluster": "member1",
            "purgeMode": "Directly",
            "reason": "ApplicationFailure",
            "creationTimestamp": stamp(0),
        }
    ]
    restoring = decide_application_failover(binding, DecisionSettings(), at(30), clusters(*MEMBERS))
    assert restoring.patch is None and restoring.requeue_after == timedelta(seconds=GRACE - 30)
    binding["spec"]["gracefulEvictionTasks"] = []
    counted = decide_application_failover(binding, DecisionSettings(), at(30), clusters(*MEMBERS))
    assert counted.patch is not None and counted.requeue_after == timedelta(seconds=TOLERATION)


def test_a_cluster_that_ran_the_workload_before_the_move_gets_no_restore_grace():
    binding = on_three_members()
    binding["spec"]["clusters"] = [{"name": "member1", "replicas": 1}, {"name": "member2", "replicas": 1}]
    set_health(binding, "member2", "Unhealthy", {})
    binding["spec"]["gracefulEvictionTasks"] = [
        {
            "fromCluster": "member3",
            "purgeMode": "Directly",
            "reason": "ApplicationFailure",
            "clustersBeforeFailover": ["member2", "member3"],
            "creationTimestamp": stamp(0),
        }
    ]
    decision = decide_application_failover(binding, DecisionSettings(), at(10), clusters(*MEMBERS))
    timers = json.loads(merge_patch(binding, decision.patch)["metadata"]["annotations"][UNHEALTHY_SINCE_ANNOTATION])
    assert timers == {"member2": stamp(10)}  # member1 is the move's new copy, still within its grace
