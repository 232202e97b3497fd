"""The phases of a workload moving away from a member cluster, as a storm is watched by (the table `status --cluster`
prints from them: tests/relay/test_status_tables.py)."""

from __future__ import annotations

from typing import Any

from failover.views.storm import (
    RELEASING,
    RESTORED,
    RESTORING,
    RUNNING,
    SCHEDULING,
    UNHEALTHY,
    phases,
)
from tests.failover.binding_builders import (
    at,
    evicted_from_unreachable,
    flink_binding,
    set_health,
)
from tests.failover.view_builders import member1_rows


def phase_of(binding: dict[str, Any], works: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    return [(found.cluster, found.phase) for found in phases(binding, works)]


def test_a_workload_moves_through_every_phase_of_a_cluster_failover() -> None:
    assert phase_of(flink_binding()) == [("member1", RUNNING)]
    assert phase_of(flink_binding(member1="Unhealthy")) == [("member1", UNHEALTHY)]
    # Directly: the new copy waits for the old Work to go, even once a new cluster is chosen.
    assert phase_of(evicted_from_unreachable(), works=("member1",)) == [("member1", RELEASING)]
    assert phase_of(evicted_from_unreachable(targets=("member2",)), works=("member1",)) == [
        ("member1", RELEASING),
        ("member2", UNHEALTHY),
    ]
    assert phase_of(evicted_from_unreachable()) == [("member1", SCHEDULING)]
    restoring = evicted_from_unreachable(targets=("member2",))
    assert phase_of(restoring, works=("member2",)) == [("member1", RESTORING), ("member2", UNHEALTHY)]
    set_health(restoring, "member2", "Healthy")
    assert phase_of(restoring, works=("member2",)) == [("member1", RESTORED), ("member2", RUNNING)]
    [found] = [found for found in phases(restoring, ()) if found.cluster == "member1"]
    assert (found.since, found.reason) == (at(0), "TaintUntolerated")


def test_gracefully_keeps_the_old_copy_beside_the_new_one_so_it_is_no_phase() -> None:
    gracefully = evicted_from_unreachable("Gracefully", ("member2",))
    assert phase_of(gracefully, works=("member1", "member2"))[0] == ("member1", RESTORING)


def test_a_binding_the_scheduler_has_not_seen_since_its_change_is_still_scheduling() -> None:
    stale = evicted_from_unreachable(targets=("member2",))
    stale["metadata"]["generation"] = 3
    assert phase_of(stale)[0] == ("member1", SCHEDULING)


def test_status_lists_every_workload_of_the_cluster_with_its_phase() -> None:
    rows = member1_rows()
    assert [(row["workload"], row["phase"], row["reason"]) for row in rows] == [
        ("FlinkDeployment/default/foo", RUNNING, None),
        ("FlinkDeployment/default/qux", SCHEDULING, "BindingPreempted"),
        ("FlinkDeployment/default/bar", RESTORING, "TaintUntolerated"),
    ]
