"""The view of `failover-relay status` (failover/reconcile/status_view.py), computed without any server: timers, tasks
in flight, the state a new copy would restore (looked up in a real directory tree with the relay's settings) and the
history. The views built here are also what tests/relay/test_status_tables.py prints."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from failover.core.api import DEFAULT_JOB_ID_LABEL
from failover.core.loop_settings import DecisionSettings
from failover.core.work import MemberCopy
from failover.fence.fence_files import FenceAck, FenceRecord
from failover.fence.fenced_copies import FENCED_ANNOTATION
from failover.reconcile.application_failover import UNHEALTHY_SINCE_ANNOTATION
from failover.reconcile.status_view import RestoreSubject, is_stateful, restore_subject, workload_view
from failover.state.restore import PREVIOUS_JOB_ID
from relay.commands.status import open_storage
from relay.settings import SavepointSettings
from tests.failover.binding_builders import JOB_ID, at, flink_binding, set_health
from tests.failover.history_builders import ROTATED, failed_over, reconcile

TEMPLATE: dict[str, Any] = {
    "apiVersion": "flink.apache.org/v1beta1",
    "kind": "FlinkDeployment",
    "metadata": {"name": "foo", "namespace": "default"},
    "spec": {"job": {"jarURI": "local:///opt/flink/job.jar", "upgradeMode": "stateless"}},
}
READY = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
CLUSTERS = {"member1": READY, "member2": READY}
FENCE_ID = "0b7e3f5c-3c1e-4c55-9d2b-6a4c1e2f9a10"


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


def failover_in_flight(tmp_path: Path) -> tuple[RestoreSubject | None, dict[str, Any]]:
    """foo failed over from member1 (the rotated run preserved, nothing stored for it; the first run checkpointed
    in `tmp_path`): the subject of the restore lookup, and the view at 80 s with the lookup's answer."""
    binding = failed_over()
    (tmp_path / JOB_ID / "chk-41").mkdir(parents=True)
    (tmp_path / JOB_ID / "chk-41" / "_metadata").write_bytes(b"flink")
    storage = open_storage(SavepointSettings(checkpoint_root=f"file://{tmp_path}"))
    assert storage is not None

    subject = restore_subject(binding, TEMPLATE, DEFAULT_JOB_ID_LABEL)
    assert subject is not None
    profile = next(iter(p for p in storage.profiles.values() if p.kind == "FlinkDeployment"))
    result, root = storage.look_up(profile, subject.obj, "default")
    return subject, workload_view(binding, CLUSTERS, at(80), subject, result, root)


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


def without_a_job_id() -> dict[str, Any]:
    """foo before it reported a job id, as `status` sees it without a checkpoint root."""
    binding = flink_binding()
    binding["status"]["aggregatedStatus"][0]["status"] = {}
    assert restore_subject(binding, TEMPLATE, DEFAULT_JOB_ID_LABEL) is None
    return workload_view(binding, {}, at(0), restore_problem="no checkpoint root configured")


def test_without_a_job_id_or_storage_the_view_says_why() -> None:
    view = without_a_job_id()
    assert view["restore"] == {"outcome": None, "reason": "no checkpoint root configured"}
    assert view["targets"][0]["clusterReady"] is False


def test_only_a_policy_that_preserves_state_is_stateful() -> None:
    stateless = copy.deepcopy(flink_binding())
    del stateless["spec"]["failover"]["application"]["statePreservation"]
    assert is_stateful(flink_binding()) and not is_stateful(stateless)


def restoring_on_member2() -> dict[str, Any]:
    """foo moved from member1 to member2, whose new copy is not Healthy yet."""
    binding = flink_binding()
    binding["spec"]["placement"] = {"clusterAffinity": {"clusterNames": ["member1", "member2"]}}
    binding["spec"]["clusters"] = [{"name": "member2", "replicas": 1}]
    binding["spec"]["gracefulEvictionTasks"] = [
        {"fromCluster": "member1", "purgeMode": "Directly", "creationTimestamp": "2025-03-01T12:00:00Z"}
    ]
    set_health(binding, "member2", "Unhealthy", {"jobStatus": {"state": "RECONCILING"}})
    return binding


def held_on_member2(binding: dict[str, Any]) -> dict[str, Any]:
    """`binding` (restoring_on_member2) once member2's copy has been Unhealthy past its toleration."""
    binding["metadata"]["annotations"][UNHEALTHY_SINCE_ANNOTATION] = '{"member2":"2025-03-01T12:05:00Z"}'
    return binding


def test_a_new_copy_shows_until_when_it_restores_and_a_held_last_cluster_says_so() -> None:
    binding = restoring_on_member2()
    [target] = workload_view(binding, CLUSTERS, at(30), decisions=DecisionSettings())["targets"]
    assert target["restoringUntil"] == "2025-03-01T12:05:00Z" and not target["keptOnLastCluster"]

    view = workload_view(held_on_member2(binding), CLUSTERS, at(400), decisions=DecisionSettings())
    [target] = view["targets"]
    assert target["restoringUntil"] is None and target["keptOnLastCluster"]  # member1 is still being evicted from


def fence_views() -> dict[str, dict[str, Any]]:
    """foo evicted Directly from member1, which is not Ready, in each state of its fence: `waiting` for
    fenceAfterSeconds, the storage fence's record written (`fencing`), its acknowledgement (`acknowledged`), and the
    old copy recorded as fenced (`fenced`)."""
    binding = flink_binding()
    binding["spec"]["clusters"] = [{"name": "member2", "replicas": 1}]
    binding["spec"]["gracefulEvictionTasks"] = [
        {"fromCluster": "member1", "purgeMode": "Directly", "creationTimestamp": "2025-03-01T12:00:00Z"}
    ]
    not_ready = {
        "status": {"conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": "2025-03-01T12:00:00Z"}]}
    }
    clusters = {"member1": not_ready, "member2": READY}
    views = {"waiting": workload_view(binding, clusters, at(30), decisions=DecisionSettings())}
    ref = MemberCopy("member1", "flink.apache.org/v1beta1", "FlinkDeployment", "default", "foo", "foo-123")
    label = f"ResourceBinding {binding['metadata']['namespace']}/{binding['metadata']['name']}"
    record = FenceRecord(FENCE_ID, "member1", "foo-123", label, (ref,), at(2))
    bar = MemberCopy("member1", "flink.apache.org/v1beta1", "FlinkDeployment", "x", "bar", "bar-1")
    other = FenceRecord(
        "11111111-2222-4333-8444-555555555555", "member1", "bar-1", "ResourceBinding x/bar", (bar,), at(1)
    )
    views["fencing"] = workload_view(
        binding,
        clusters,
        at(30),
        decisions=DecisionSettings(),
        fence_records={"member1": [(other, None), (record, None)]},
    )
    ack = FenceAck(record.fence_id, "member1", (), at(5), "file:///sp/savepoint-1")
    views["acknowledged"] = workload_view(
        binding, clusters, at(30), decisions=DecisionSettings(), fence_records={"member1": [(record, ack)]}
    )
    fenced = copy.deepcopy(binding)
    fenced["metadata"]["annotations"][FENCED_ANNOTATION] = (
        '{"member1":[{"apiVersion":"flink.apache.org/v1beta1","kind":"FlinkDeployment","namespace":"default",'
        '"name":"foo","work":"foo-123"}]}'
    )
    views["fenced"] = workload_view(fenced, clusters, at(90), decisions=DecisionSettings())
    return views


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
