"""The view of `failover-relay status` (failover/views/status_view.py), computed without any server: timers, tasks
in flight, the state a new copy would restore (looked up in a real directory tree with the relay's settings) and the
history. The views built here are also what tests/relay/test_status_tables.py prints."""

from __future__ import annotations

import copy
from pathlib import Path

from failover.core.api import DEFAULT_JOB_ID_LABEL
from failover.core.loop_settings import DecisionSettings
from failover.state.restore import PREVIOUS_JOB_ID
from failover.views.status_view import is_stateful, workload_view
from tests.failover.binding_builders import JOB_ID, at, flink_binding, set_health
from tests.failover.history_builders import ROTATED, reconcile
from tests.failover.view_builders import (
    CLUSTERS,
    failover_in_flight,
    fence_views,
    held_on_member2,
    restoring_on_member2,
    without_a_job_id,
)


def test_an_unhealthy_target_shows_since_when_and_when_it_will_be_evicted() -> None:
    binding = reconcile(flink_binding(), 0)
    set_health(binding, "member1", "Unhealthy")
    binding = reconcile(binding, 5)
    [target] = workload_view(binding, CLUSTERS, at(20))["targets"]
    assert (target["cluster"], target["health"], target["clusterReady"]) == ("member1", "Unhealthy", True)
    assert (target["unhealthySince"], target["evictionAt"], target["evictionIn"]) == (
        "2025-03-01T12:00:05Z",
        "2025-03-01T12:01:05Z",
        45,
    )
    assert target["jobId"] == JOB_ID


def test_a_failover_in_flight_shows_its_task_its_state_and_the_restore_a_new_copy_would_get(tmp_path: Path) -> None:
    subject, view = failover_in_flight(tmp_path)

    assert subject is not None and subject.job_id == ROTATED and subject.source == "eviction task from member1"
    assert view["placement"] == [] and view["tolerationSeconds"] == 60 and view["purgeMode"] == "Directly"
    [task] = view["evictions"]
    assert (task["fromCluster"], task["purgeMode"], task["preservedState"]) == (
        "member1",
        "Directly",
        {DEFAULT_JOB_ID_LABEL: ROTATED},
    )
    assert view["restore"]["path"] == f"file://{tmp_path}/{JOB_ID}/chk-41"
    assert view["restore"]["fallback"] == PREVIOUS_JOB_ID and view["restore"]["storage"] == f"file://{tmp_path}"
    assert [move["kind"] for move in view["history"]] == ["failover"]


def test_without_a_job_id_or_storage_the_view_says_why() -> None:
    view = without_a_job_id()
    assert view["restore"] == {"outcome": None, "reason": "no checkpoint root configured"}
    assert view["targets"][0]["clusterReady"] is False


def test_only_a_policy_that_preserves_state_is_stateful() -> None:
    stateless = copy.deepcopy(flink_binding())
    del stateless["spec"]["failover"]["application"]["statePreservation"]
    assert is_stateful(flink_binding()) and not is_stateful(stateless)


def test_a_new_copy_shows_until_when_it_restores_and_a_held_last_cluster_says_so() -> None:
    binding = restoring_on_member2()
    [target] = workload_view(binding, CLUSTERS, at(30), decisions=DecisionSettings())["targets"]
    assert target["restoringUntil"] == "2025-03-01T12:05:00Z" and not target["keptOnLastCluster"]

    view = workload_view(held_on_member2(binding), CLUSTERS, at(400), decisions=DecisionSettings())
    [target] = view["targets"]
    assert target["restoringUntil"] is None and target["keptOnLastCluster"]  # member1 is still being evicted from


def test_the_fence_state_of_each_cluster_is_shown() -> None:
    views = fence_views()
    assert views["waiting"]["fences"] == [
        {
            "cluster": "member1",
            "state": "waiting",
            "since": "2025-03-01T12:00:00Z",
            "fenceAt": "2025-03-01T12:01:00Z",
            "copies": [],
        }
    ]
    # The storage fence: the record written (fencing), then the member relay's acknowledgement (acknowledged).
    [fence] = views["fencing"]["fences"]
    assert (fence["state"], fence["recordWrittenAt"], fence["acknowledgedAt"]) == (
        "fencing",
        at(2).strftime("%Y-%m-%dT%H:%M:%SZ"),
        None,
    )
    [fence] = views["acknowledged"]["fences"]
    assert (fence["state"], fence["savepoint"]) == ("acknowledged", "file:///sp/savepoint-1")
    assert views["fenced"]["fences"] == [
        {"cluster": "member1", "state": "fenced", "copies": ["FlinkDeployment default/foo"]}
    ]
