"""Graceful eviction task lifecycle, driven by an injected clock."""

from __future__ import annotations

import copy
import json
from datetime import timedelta

from failover.core.loop_settings import DecisionSettings
from failover.reconcile.graceful_eviction import EVICTED_FROM_ANNOTATION, all_targets_healthy, decide_graceful_eviction
from tests.failover.binding_builders import at, evicting_binding, nginx_binding, preemption_task, set_health, stamp
from tests.patches import merge_patch

SETTINGS = DecisionSettings()


def test_task_without_creation_timestamp_is_stamped_and_kept():
    binding = evicting_binding({"gracePeriodSeconds": 600})
    decision = decide_graceful_eviction(binding, SETTINGS, at(0))
    assert decision.patch["spec"]["gracefulEvictionTasks"][0]["creationTimestamp"] == stamp(0)
    assert decision.ended == () and decision.requeue_after == timedelta(seconds=600)


def test_task_ends_when_grace_period_passes():
    binding = evicting_binding({"gracePeriodSeconds": 600, "creationTimestamp": stamp(0)}, scheduled=False)
    waiting = decide_graceful_eviction(binding, SETTINGS, at(599))
    assert waiting.patch is None and waiting.requeue_after == timedelta(seconds=1)
    decision = decide_graceful_eviction(binding, SETTINGS, at(600))
    assert decision.patch["spec"]["gracefulEvictionTasks"] == []
    assert [(t.from_cluster, t.why) for t in decision.ended] == [("member1", "grace period passed")]
    assert [(e.type, e.reason) for e in decision.events] == [("Normal", "EvictionTaskRemoved")]


def test_task_without_grace_period_uses_default_timeout():
    binding = evicting_binding({"creationTimestamp": stamp(0)}, scheduled=False)
    assert decide_graceful_eviction(binding, SETTINGS, at(10)).requeue_after == timedelta(seconds=590)
    short = DecisionSettings(graceful_eviction_timeout=timedelta(seconds=30))
    assert decide_graceful_eviction(binding, short, at(30)).ended[0].why == "grace period passed"


def test_task_ends_when_scheduled_and_every_target_healthy():
    binding = evicting_binding({"gracePeriodSeconds": 600, "creationTimestamp": stamp(0)})
    decision = decide_graceful_eviction(binding, SETTINGS, at(10))
    assert decision.ended[0].why == "every target cluster is healthy"


def test_task_stays_while_a_target_is_not_healthy():
    binding = evicting_binding(
        {"gracePeriodSeconds": 600, "creationTimestamp": stamp(0)}, clusters=("member2", "member3")
    )
    for health in ("Unhealthy", "Unknown"):
        set_health(binding, "member3", health)
        assert decide_graceful_eviction(binding, SETTINGS, at(10)).patch is None


def test_task_stays_while_a_target_has_no_status_yet():
    binding = evicting_binding({"gracePeriodSeconds": 600, "creationTimestamp": stamp(0)})
    binding["status"]["aggregatedStatus"] = []
    assert decide_graceful_eviction(binding, SETTINGS, at(10)).patch is None


def test_task_stays_until_scheduler_observed_current_generation():
    binding = evicting_binding({"gracePeriodSeconds": 600, "creationTimestamp": stamp(0)}, scheduled=False)
    assert decide_graceful_eviction(binding, SETTINGS, at(10)).patch is None


def test_empty_target_list_is_not_all_healthy():
    """Karmada #7455: a binding that fits nowhere lost its old copy at once."""
    binding = evicting_binding({"gracePeriodSeconds": 600, "creationTimestamp": stamp(0)}, clusters=())
    assert not all_targets_healthy(binding)
    decision = decide_graceful_eviction(binding, SETTINGS, at(10))
    assert decision.patch is None and decision.requeue_after == timedelta(seconds=590)


def test_a_preemption_task_passes_through_as_karmadas_controller_ends_it():
    """Karmada PR #7832: a preempted workload that fits nowhere gives its resources up at once, as Karmada's own
    controller ends the task (no target counts as all healthy there), and is no failover to fail back."""
    binding = nginx_binding([])
    binding["metadata"]["generation"] = binding["status"]["schedulerObservedGeneration"] = 2
    binding["spec"]["gracefulEvictionTasks"] = [preemption_task("member1")]
    stamped = merge_patch(binding, decide_graceful_eviction(binding, SETTINGS, at(0)).patch)
    assert stamped["spec"]["gracefulEvictionTasks"] == [{**preemption_task("member1"), "creationTimestamp": stamp(0)}]
    decision = decide_graceful_eviction(stamped, SETTINGS, at(1))
    assert decision.patch == {"spec": {"gracefulEvictionTasks": []}}
    assert [(t.from_cluster, t.why, t.failover) for t in decision.ended] == [
        ("member1", "every target cluster is healthy", False)
    ]
    # Placed elsewhere but not healthy yet: its own 30 s grace period, not our default timeout.
    waiting = copy.deepcopy(stamped)
    waiting["spec"]["clusters"] = [{"name": "member2", "replicas": 1}]
    set_health(waiting, "member2", "Unhealthy")
    assert decide_graceful_eviction(waiting, SETTINGS, at(1)).requeue_after == timedelta(seconds=29)
    assert decide_graceful_eviction(waiting, SETTINGS, at(30)).ended[0].why == "grace period passed"


def test_suppress_deletion_true_stays_forever():
    binding = evicting_binding({"purgeMode": "Never", "suppressDeletion": True, "creationTimestamp": stamp(0)})
    decision = decide_graceful_eviction(binding, SETTINGS, at(10**7))
    assert decision.patch is None and decision.requeue_after is None


def test_suppress_deletion_false_ends_at_once():
    binding = evicting_binding(
        {"purgeMode": "Never", "suppressDeletion": False, "creationTimestamp": stamp(0)}, scheduled=False
    )
    decision = decide_graceful_eviction(binding, SETTINGS, at(1))
    assert decision.ended[0].why == "suppressDeletion set to false"


def test_directly_tasks_follow_the_same_rules():
    binding = evicting_binding({"purgeMode": "Directly", "creationTimestamp": stamp(0)}, scheduled=False)
    assert decide_graceful_eviction(binding, SETTINGS, at(10)).patch is None


def test_only_the_finished_task_is_removed_and_requeue_is_the_nearest_deadline():
    binding = evicting_binding({"gracePeriodSeconds": 100, "creationTimestamp": stamp(0)}, scheduled=False)
    binding["spec"]["gracefulEvictionTasks"] += [
        {
            "fromCluster": "member3",
            "reason": "TaintUntolerated",
            "producer": "TaintManager",
            "gracePeriodSeconds": 300,
            "creationTimestamp": stamp(0),
        },
        {
            "fromCluster": "member4",
            "reason": "TaintUntolerated",
            "producer": "TaintManager",
            "gracePeriodSeconds": 500,
            "creationTimestamp": stamp(0),
        },
    ]
    decision = decide_graceful_eviction(binding, SETTINGS, at(150))
    assert [t["fromCluster"] for t in decision.patch["spec"]["gracefulEvictionTasks"]] == ["member3", "member4"]
    assert decision.requeue_after == timedelta(seconds=150)


def test_ended_evictions_are_remembered_for_failback():
    binding = evicting_binding({"gracePeriodSeconds": 600, "creationTimestamp": stamp(0)})
    stored = merge_patch(binding, decide_graceful_eviction(binding, SETTINGS, at(10)).patch)
    assert json.loads(stored["metadata"]["annotations"][EVICTED_FROM_ANNOTATION]) == {"member1": stamp(0)}
    assert stored["spec"]["gracefulEvictionTasks"] == []


def test_deleting_or_malformed_bindings_are_left_alone():
    binding = evicting_binding({"creationTimestamp": stamp(0)})
    binding["metadata"]["deletionTimestamp"] = stamp(0)
    assert decide_graceful_eviction(binding, SETTINGS, at(10**6)).patch is None
    odd = evicting_binding({"creationTimestamp": "yesterday-ish"})
    odd["spec"]["gracefulEvictionTasks"].append("not a task")
    decision = decide_graceful_eviction(odd, SETTINGS, at(0))
    assert decision.patch["spec"]["gracefulEvictionTasks"][1] == "not a task"
    for junk in ({}, {"spec": {"gracefulEvictionTasks": "x"}}, [], {"spec": 1}):
        assert decide_graceful_eviction(junk, SETTINGS, at(0)).patch is None
