"""Cluster failover's eviction tasks written by the relay (failover/reconcile/cluster_eviction.py): Karmada's taint
manager's task, its tolerations, its timing, with the preserved state, held by the brake."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from failover.core.api import APPLIED_PLACEMENT_ANNOTATION
from failover.core.loop_settings import DecisionSettings, TaintEvictionPurgeMode
from failover.reconcile.brake import EVENT_BRAKED, brake
from failover.reconcile.cluster_eviction import (
    BRAKE_RECHECK,
    decide_cluster_evictions,
    eviction_order,
    tolerates,
    untolerated_after,
)
from failover.reconcile.cluster_failover import EVENT_STATE_NOT_FOUND
from failover.reconcile.preconditions import cluster_eviction_reads, guarded_patch
from failover.state.last_state import decide_last_state
from tests.failover.binding_builders import (
    CLUSTER_LABEL,
    JOB_ID,
    at,
    flink_binding,
    set_health,
    stamp,
    with_cluster_rules,
)
from tests.failover.work_builders import cluster
from tests.patches import merge_patch

SETTINGS = DecisionSettings()
NOT_READY_TAINT = {"key": "cluster.karmada.io/not-ready", "effect": "NoExecute", "timeAdded": stamp(0)}
UNREACHABLE_TAINT = {"key": "cluster.karmada.io/unreachable", "effect": "NoExecute", "timeAdded": stamp(0)}


def placed(binding: dict[str, Any], tolerations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """`binding` with the placement Karmada applied, as the taint manager reads it."""
    placement = {"clusterAffinity": {"clusterNames": ["member1", "member2"]}}
    if tolerations is not None:
        placement["clusterTolerations"] = tolerations
    binding["metadata"]["annotations"][APPLIED_PLACEMENT_ANNOTATION] = json.dumps(placement)
    return binding


def stateful() -> dict[str, Any]:
    """foo on member1 with cluster failover preserving its job id, its last healthy report recorded at 0 s."""
    binding = placed(with_cluster_rules(flink_binding()))
    return merge_patch(binding, decide_last_state(binding, at(0)))


def clusters(
    *member1_taints: dict[str, Any], member1_ready: bool = False, since: float = -60
) -> dict[str, dict[str, Any]]:
    """member1 with the taints given, not Ready since `since` (past the brake's window by default), and two members
    Ready."""
    return {
        "member1": cluster("member1", member1_ready, since, taints=member1_taints),
        "member2": cluster("member2"),
        "member3": cluster("member3"),
    }


def test_an_untolerated_taint_evicts_at_once_with_karmadas_task_and_the_state() -> None:
    binding = stateful()
    set_health(binding, "member1", "Unknown", {})  # a dead cluster reflects nothing any more
    decision = decide_cluster_evictions(binding, clusters(NOT_READY_TAINT), SETTINGS, at(1))
    assert decision.evicted == ("member1",)
    assert decision.patch is not None
    assert decision.patch["spec"]["clusters"] == []
    assert decision.patch["spec"]["gracefulEvictionTasks"] == [
        {
            "fromCluster": "member1",
            "purgeMode": "Directly",
            "reason": "TaintUntolerated",
            "message": "cluster member1 has NoExecute taints the placement does not tolerate",
            "producer": "TaintManager",
            "replicas": 1,
            "preservedLabelState": {CLUSTER_LABEL: JOB_ID},
            "clustersBeforeFailover": ["member1"],
            "creationTimestamp": stamp(1),
        }
    ]
    after = merge_patch(binding, decision.patch)
    assert decide_cluster_evictions(after, clusters(NOT_READY_TAINT), SETTINGS, at(2)).patch is None, "twice"


def test_a_toleration_with_seconds_evicts_when_they_have_run_out_counted_from_the_taint() -> None:
    binding = placed(
        flink_binding(),
        [{"key": NOT_READY_TAINT["key"], "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
    )
    early = decide_cluster_evictions(binding, clusters(NOT_READY_TAINT), SETTINGS, at(100))
    assert early.patch is None and early.requeue_after == timedelta(seconds=200)
    due = decide_cluster_evictions(binding, clusters(NOT_READY_TAINT), SETTINGS, at(300))
    assert due.evicted == ("member1",)


def test_tolerated_for_ever_or_no_applied_placement_or_no_taint_stays() -> None:
    forever = placed(flink_binding(), [{"operator": "Exists"}])
    assert decide_cluster_evictions(forever, clusters(NOT_READY_TAINT), SETTINGS, at(9999)) == decide_cluster_evictions(
        forever, clusters(), SETTINGS, at(0)
    )
    assert decide_cluster_evictions(forever, clusters(NOT_READY_TAINT), SETTINGS, at(9999)).patch is None
    unplaced = flink_binding()  # Karmada's needEviction errs without the annotation: nothing is evicted
    assert decide_cluster_evictions(unplaced, clusters(NOT_READY_TAINT), SETTINGS, at(1)).patch is None
    no_schedule = {**NOT_READY_TAINT, "effect": "NoSchedule"}
    assert decide_cluster_evictions(placed(flink_binding()), clusters(no_schedule), SETTINGS, at(1)).patch is None
    assert decide_cluster_evictions(placed(flink_binding()), None, SETTINGS, at(1)).patch is None


def test_every_taint_must_be_tolerated_and_the_earliest_expiry_wins() -> None:
    one_tolerated = [{"key": NOT_READY_TAINT["key"], "operator": "Exists", "effect": "NoExecute"}]
    both = decide_cluster_evictions(
        placed(flink_binding(), one_tolerated), clusters(NOT_READY_TAINT, UNREACHABLE_TAINT), SETTINGS, at(1)
    )
    assert both.evicted == ("member1",), "the unreachable taint is tolerated by nothing"
    later = {**UNREACHABLE_TAINT, "timeAdded": stamp(50)}
    tolerations = [
        {"key": NOT_READY_TAINT["key"], "operator": "Exists", "tolerationSeconds": 100},
        {"key": UNREACHABLE_TAINT["key"], "operator": "Exists", "tolerationSeconds": 30},
    ]
    assert untolerated_after([NOT_READY_TAINT, later], tolerations, at(0)) == timedelta(seconds=80)


@pytest.mark.parametrize(
    ("toleration", "taint", "expected"),
    [
        ({"key": "a", "operator": "Equal", "value": "x"}, {"key": "a", "value": "x", "effect": "NoExecute"}, True),
        ({"key": "a", "value": "x"}, {"key": "a", "value": "y", "effect": "NoExecute"}, False),
        ({"key": "a"}, {"key": "a", "effect": "NoExecute"}, True),  # Equal with both values empty
        ({"operator": "Exists"}, {"key": "anything", "effect": "NoExecute"}, True),
        ({"operator": "Exists", "effect": "NoSchedule"}, {"key": "a", "effect": "NoExecute"}, False),
        ({"key": "b", "operator": "Exists"}, {"key": "a", "effect": "NoExecute"}, False),
        ({"key": "a", "operator": "Lt", "value": "5"}, {"key": "a", "value": "3", "effect": "NoExecute"}, False),
    ],
)
def test_toleration_matching_is_corev1s_without_comparison_operators(
    toleration: dict[str, Any], taint: dict[str, Any], expected: bool
) -> None:
    assert tolerates(toleration, taint) is expected


def test_purge_mode_is_the_cluster_failovers_else_gracefully_else_the_setting_without_one() -> None:
    def mode(binding: dict[str, Any], settings: DecisionSettings = SETTINGS) -> str:
        decision = decide_cluster_evictions(binding, clusters(NOT_READY_TAINT), settings, at(1))
        assert decision.patch is not None
        return str(decision.patch["spec"]["gracefulEvictionTasks"][-1]["purgeMode"])

    assert mode(stateful()) == "Directly"
    unnamed = stateful()
    del unnamed["spec"]["failover"]["cluster"]["purgeMode"]
    assert mode(unnamed) == "Gracefully"
    without = placed(flink_binding())
    assert mode(without) == "Gracefully"
    directly = DecisionSettings(taint_eviction_purge_mode=TaintEvictionPurgeMode.DIRECTLY)
    assert mode(without, directly) == "Directly"


def test_no_state_found_still_evicts_and_says_so() -> None:
    binding = placed(with_cluster_rules(flink_binding()))
    set_health(binding, "member1", "Unknown", {})
    decision = decide_cluster_evictions(binding, clusters(NOT_READY_TAINT), SETTINGS, at(1))
    assert decision.evicted == ("member1",)
    assert decision.patch is not None
    assert "preservedLabelState" not in decision.patch["spec"]["gracefulEvictionTasks"][-1]
    assert [event.reason for event in decision.events] == [EVENT_STATE_NOT_FOUND]


def test_a_cluster_just_gone_not_ready_waits_the_brakes_window_for_others_to_follow() -> None:
    """Clusters cut off together are marked not Ready a status round or two apart: the first one's eviction waits."""
    binding = stateful()
    early = decide_cluster_evictions(binding, clusters(NOT_READY_TAINT, since=0), SETTINGS, at(10))
    assert early.patch is None and early.requeue_after == timedelta(seconds=20)
    assert decide_cluster_evictions(binding, clusters(NOT_READY_TAINT, since=0), SETTINGS, at(30)).evicted == (
        "member1",
    )
    # A taint put on a Ready cluster by hand is no outage: nothing to wait for.
    ready = decide_cluster_evictions(binding, clusters(NOT_READY_TAINT, member1_ready=True, since=0), SETTINGS, at(1))
    assert ready.evicted == ("member1",)


def test_the_brake_holds_the_eviction_and_looks_again() -> None:
    binding = stateful()
    two_of_three = clusters(NOT_READY_TAINT)
    two_of_three["member2"] = cluster("member2", False, -60)
    held = brake(two_of_three, SETTINGS.unhealthy_cluster_threshold)
    decision = decide_cluster_evictions(binding, two_of_three, SETTINGS, at(1), held)
    assert decision.patch is None and decision.braked == ("member1",)
    assert decision.requeue_after == BRAKE_RECHECK
    assert [event.reason for event in decision.events] == [EVENT_BRAKED]
    one_of_three = clusters(NOT_READY_TAINT)
    free = brake(one_of_three, SETTINGS.unhealthy_cluster_threshold)
    assert decide_cluster_evictions(binding, one_of_three, SETTINGS, at(1), free).evicted == ("member1",)


def test_the_write_is_guarded_by_the_targets_a_second_writer_changes() -> None:
    """Beside the taint manager: its Update removes member1 from the targets first; our guarded patch then fails its
    test of spec.clusters (no second task), and decided again there is nothing to write."""
    binding = stateful()
    decision = decide_cluster_evictions(binding, clusters(NOT_READY_TAINT), SETTINGS, at(1))
    assert decision.patch is not None
    operations = guarded_patch(binding, decision.patch, cluster_eviction_reads(binding, decision.evicted))
    assert {"op": "test", "path": "/spec/clusters", "value": [{"name": "member1", "replicas": 1}]} in operations
    karmadas = merge_patch(
        binding,
        {"spec": {"clusters": [], "gracefulEvictionTasks": [{"fromCluster": "member1", "reason": "TaintUntolerated"}]}},
    )
    assert decide_cluster_evictions(karmadas, clusters(NOT_READY_TAINT), SETTINGS, at(1)).patch is None


def test_the_order_is_priority_then_the_oldest_state_then_the_stateless() -> None:
    old, new, stateless, urgent = stateful(), stateful(), placed(flink_binding()), placed(flink_binding())
    new = merge_patch(placed(with_cluster_rules(flink_binding())), decide_last_state(new, at(60)))
    urgent["spec"]["schedulePriority"] = {"priority": 10}
    for name, binding in (("old", old), ("new", new), ("stateless", stateless), ("urgent", urgent)):
        binding["metadata"]["name"] = name
    ordered = sorted([stateless, new, old, urgent], key=eviction_order)
    assert [binding["metadata"]["name"] for binding in ordered] == ["urgent", "old", "new", "stateless"]
