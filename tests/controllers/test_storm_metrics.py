"""The storm metrics as the loop records them after each reconcile, with an injected clock."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from controllers.loop.loop_metrics import StormMetrics
from tests.failover.binding_builders import at, evicted_from_unreachable, set_health

KEY = ("ResourceBinding", "default/foo-flinkdeployment")


def value(registry: CollectorRegistry, name: str, **labels: str) -> float:
    found = registry.get_sample_value(name, labels)
    return 0.0 if found is None else found


def test_a_workload_is_counted_in_the_phase_it_waits_in_and_each_phase_is_timed() -> None:
    registry, seconds = CollectorRegistry(), [0.0]
    storm = StormMetrics(registry, clock=lambda: seconds[0])
    waiting = "failover_relay_workloads_waiting"
    phase_count = "failover_relay_failover_phase_duration_seconds_count"
    phase_sum = "failover_relay_failover_phase_duration_seconds_sum"

    storm.observe(KEY, evicted_from_unreachable(), ("member1",), at(1))
    assert value(registry, waiting, member_cluster="member1", phase="releasing") == 1
    seconds[0] = 4.0
    storm.observe(KEY, evicted_from_unreachable(targets=("member2",)), ("member2",), at(4))
    assert value(registry, waiting, member_cluster="member1", phase="releasing") == 0
    assert value(registry, waiting, member_cluster="member1", phase="restoring") == 1
    assert value(registry, phase_sum, member_cluster="member1", phase="releasing") == 4.0
    # No change: nothing observed twice.
    storm.observe(KEY, evicted_from_unreachable(targets=("member2",)), ("member2",), at(5))
    assert value(registry, phase_count, member_cluster="member1", phase="releasing") == 1

    seconds[0] = 10.0
    restored = evicted_from_unreachable(targets=("member2",))
    set_health(restored, "member2", "Healthy")
    storm.observe(KEY, restored, ("member2",), at(12))
    assert value(registry, waiting, member_cluster="member1", phase="restoring") == 0
    assert value(registry, phase_sum, member_cluster="member1", phase="restoring") == 6.0
    # From the task's creationTimestamp (at(0)) to the reconcile that saw the new copy Healthy.
    assert value(registry, phase_sum, member_cluster="member1", phase="total") == 12.0
    restored["spec"]["gracefulEvictionTasks"] = []
    storm.observe(KEY, restored, ("member2",), at(13))
    assert value(registry, phase_count, member_cluster="member1", phase="total") == 1


def test_a_task_ended_in_the_reconcile_that_saw_the_new_copy_healthy_counts_as_restored() -> None:
    registry = CollectorRegistry()
    storm = StormMetrics(registry, clock=lambda: 0.0)
    storm.observe(KEY, evicted_from_unreachable(targets=("member2",)), (), at(1))
    ended = evicted_from_unreachable(targets=("member2",))
    set_health(ended, "member2", "Healthy")
    ended["spec"]["gracefulEvictionTasks"] = []  # graceful eviction removed it in the same reconcile
    ended["metadata"]["generation"] = 3  # a spec change the scheduler has not observed yet
    storm.observe(KEY, ended, (), at(7), restored=("member1",))
    assert (
        value(registry, "failover_relay_failover_phase_duration_seconds_sum", member_cluster="member1", phase="total")
        == 7
    )


def test_a_task_that_ran_out_is_no_restore() -> None:
    registry = CollectorRegistry()
    storm = StormMetrics(registry, clock=lambda: 0.0)
    storm.observe(KEY, evicted_from_unreachable(targets=("member2",)), (), at(1))
    timed_out = evicted_from_unreachable(targets=("member2",))
    timed_out["spec"]["gracefulEvictionTasks"] = []
    storm.observe(KEY, timed_out, (), at(700))
    total = value(
        registry, "failover_relay_failover_phase_duration_seconds_count", member_cluster="member1", phase="total"
    )
    assert total == 0


def test_a_deleted_binding_leaves_no_waiting_workload_behind() -> None:
    registry = CollectorRegistry()
    storm = StormMetrics(registry, clock=lambda: 0.0)
    storm.observe(KEY, evicted_from_unreachable(), (), at(1))
    assert value(registry, "failover_relay_workloads_waiting", member_cluster="member1", phase="scheduling") == 1
    storm.observe(KEY, None, (), at(2))
    assert value(registry, "failover_relay_workloads_waiting", member_cluster="member1", phase="scheduling") == 0
    assert (
        value(registry, "failover_relay_failover_phase_duration_seconds_count", member_cluster="member1", phase="total")
        == 0
    )
