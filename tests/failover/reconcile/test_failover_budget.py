"""No ping-pong (failover/reconcile/failover_budget.py): budget, backoff and restore grace, through the application
failover decision with an injected clock."""

from __future__ import annotations

import json
from datetime import timedelta

from failover.core.loop_settings import DecisionSettings
from failover.reconcile.application_failover import decide_application_failover
from failover.reconcile.failover_budget import EVENT_HELD_BACK, FAILOVERS_ANNOTATION, failover_history
from tests.failover.binding_builders import at, flink_binding, set_health, stamp
from tests.patches import merge_patch

TOLERATION = 60  # FLINK_BINDING's tolerationSeconds


def fail_over_once(binding, start, settings):
    """member1 Unhealthy at `start`, evicted a toleration later; the workload is then back on member1 (as if the
    scheduler had returned it) and Healthy, so the next round can start."""
    stored = merge_patch(binding, decide_application_failover(binding, settings, at(start)).patch)
    decision = decide_application_failover(stored, settings, at(start + TOLERATION))
    assert decision.evicted == ("member1",), decision.events
    after = merge_patch(stored, decision.patch)
    after["spec"]["clusters"] = [{"name": "member1", "replicas": 1}]
    after["spec"]["gracefulEvictionTasks"] = []
    return after


def test_every_failover_is_recorded_on_the_binding():
    settings = DecisionSettings()
    binding = fail_over_once(flink_binding(member1="Unhealthy"), 0, settings)
    assert json.loads(binding["metadata"]["annotations"][FAILOVERS_ANNOTATION]) == [stamp(TOLERATION)]
    assert failover_history(binding, settings, at(TOLERATION + 3600)) == []  # out of the window


def test_the_budget_holds_the_next_failover_back_until_the_oldest_leaves_the_window():
    settings = DecisionSettings(failover_budget=2)
    binding = flink_binding(member1="Unhealthy")
    binding = fail_over_once(binding, 0, settings)
    binding = fail_over_once(binding, 100, settings)
    stored = merge_patch(binding, decide_application_failover(binding, settings, at(200)).patch)
    held = decide_application_failover(stored, settings, at(200 + TOLERATION))
    assert held.evicted == ()
    assert [event.reason for event in held.events] == [EVENT_HELD_BACK]
    assert "failoverBudget" in held.events[0].message
    assert held.requeue_after == at(TOLERATION + 3600) - at(200 + TOLERATION)
    assert decide_application_failover(stored, settings, at(TOLERATION + 3600)).evicted == ("member1",)


def test_backoff_doubles_with_each_failover_in_the_window():
    settings = DecisionSettings(failover_backoff=timedelta(seconds=100))
    binding = fail_over_once(flink_binding(member1="Unhealthy"), 0, settings)  # evicted at 60
    stored = merge_patch(binding, decide_application_failover(binding, settings, at(70)).patch)
    held = decide_application_failover(stored, settings, at(130))
    assert held.evicted == () and held.requeue_after == timedelta(seconds=30)  # 60 + 100
    binding = fail_over_once(binding, 100, settings)  # evicted at 160
    stored = merge_patch(binding, decide_application_failover(binding, settings, at(170)).patch)
    assert decide_application_failover(stored, settings, at(300)).requeue_after == timedelta(seconds=60)  # 160+200
    assert decide_application_failover(stored, settings, at(360)).evicted == ("member1",)


def test_a_copy_still_restoring_is_not_counted_unhealthy_within_the_grace():
    settings = DecisionSettings(restore_grace=timedelta(seconds=120))
    binding = flink_binding()
    binding["spec"]["clusters"] = [{"name": "member2", "replicas": 1}]
    binding["spec"]["gracefulEvictionTasks"] = [
        {"fromCluster": "member1", "purgeMode": "Directly", "reason": "TaintUntolerated", "creationTimestamp": stamp(0)}
    ]
    set_health(binding, "member2", "Unhealthy", {})
    early = decide_application_failover(binding, settings, at(30))
    assert early.patch is None and early.requeue_after == timedelta(seconds=90)
    later = decide_application_failover(binding, settings, at(120))
    assert "member2" in json.loads(
        merge_patch(binding, later.patch)["metadata"]["annotations"]["failover-relay.io/unhealthy-since"]
    )


def test_a_hand_edited_history_is_read_tolerantly():
    binding = flink_binding()
    binding["metadata"]["annotations"][FAILOVERS_ANNOTATION] = '["nonsense", 5, "2025-03-01T12:00:00Z"]'
    assert failover_history(binding, DecisionSettings(), at(10)) == [at(0)]
    binding["metadata"]["annotations"][FAILOVERS_ANNOTATION] = "{"
    assert failover_history(binding, DecisionSettings(), at(10)) == []
