"""The `failover-relay status` views and phase rows of the status tests (tests/failover/views/test_status_view.py,
test_storm.py, tests/failover/fence/test_pull_clusters.py), built once for them and for the tables that print them
(tests/relay/test_status_tables.py)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from failover.core.api import DEFAULT_JOB_ID_LABEL
from failover.core.loop_settings import DecisionSettings
from failover.core.work import BINDING_ID_LABELS, MemberCopy
from failover.fence.fence_files import FenceAck, FenceRecord
from failover.fence.fenced_copies import FENCED_ANNOTATION
from failover.fence.old_copy import decide_fencing
from failover.reconcile.application_failover import UNHEALTHY_SINCE_ANNOTATION
from failover.views.status_view import RestoreSubject, restore_subject, workload_view
from failover.views.storm import workload_phase_rows
from relay.commands.online import open_storage
from relay.settings import SavepointSettings
from tests.failover.binding_builders import (
    JOB_ID,
    at,
    evicted_from_unreachable,
    flink_binding,
    preemption_task,
    set_health,
    stamp,
)
from tests.failover.history_builders import failed_over
from tests.failover.work_builders import NOT_READY_TAINT, cluster, evicted, stored_work
from tests.patches import merge_patch

TEMPLATE: dict[str, Any] = {
    "apiVersion": "flink.apache.org/v1beta1",
    "kind": "FlinkDeployment",
    "metadata": {"name": "foo", "namespace": "default"},
    "spec": {"job": {"jarURI": "local:///opt/flink/job.jar", "upgradeMode": "stateless"}},
}
READY = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
CLUSTERS = {"member1": READY, "member2": READY}
FENCE_ID = "0b7e3f5c-3c1e-4c55-9d2b-6a4c1e2f9a10"
SETTINGS = DecisionSettings()  # fence after 60 s
LABEL = BINDING_ID_LABELS[0]


def pull(ready: bool, since: float) -> dict[str, dict[str, Any]]:
    taints = None if ready else [NOT_READY_TAINT]
    member1 = cluster("member1", ready, since, taints=taints, sync_mode="Pull", typed=False)
    return {"member1": member1, "member2": cluster("member2", True, -1000, taints=None, typed=False)}


def old_work(labelled: bool = True, deleting: float | None = 0) -> dict[str, Any]:
    obj = stored_work(deleting=deleting)
    if labelled:
        obj["metadata"]["labels"] = {LABEL: "b-1", "work.karmada.io/permanent-id": "w-1"}
    else:
        obj["metadata"]["labels"] = {"work.karmada.io/permanent-id": "w-1"}
    return obj


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


def held_on_member2(binding: dict[str, Any]) -> dict[str, Any]:
    """`binding` (restoring_on_member2) once member2's copy has been Unhealthy past its toleration."""
    binding["metadata"]["annotations"][UNHEALTHY_SINCE_ANNOTATION] = '{"member2":"2025-03-01T12:05:00Z"}'
    return binding


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


def without_a_job_id() -> dict[str, Any]:
    """foo before it reported a job id, as `status` sees it without a checkpoint root."""
    binding = flink_binding()
    binding["status"]["aggregatedStatus"][0]["status"] = {}
    assert restore_subject(binding, TEMPLATE, DEFAULT_JOB_ID_LABEL) is None
    return workload_view(binding, {}, at(0), restore_problem="no checkpoint root configured")


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


def member1_rows() -> list[dict[str, Any]]:
    """`status --cluster member1` over four workloads: foo running there, qux preempted from it, bar restoring away
    from it on member2, and baz on member3 alone (not listed)."""
    restoring = evicted_from_unreachable(targets=("member2",))
    restoring["metadata"]["name"] = "bar-flinkdeployment"
    restoring["spec"]["resource"]["name"] = "bar"
    elsewhere = flink_binding()
    elsewhere["metadata"]["name"] = "baz-flinkdeployment"
    elsewhere["spec"]["resource"]["name"] = "baz"
    elsewhere["spec"]["clusters"] = [{"name": "member3", "replicas": 1}]
    preempted = flink_binding()
    preempted["metadata"]["name"] = "qux-flinkdeployment"
    preempted["spec"]["resource"]["name"] = "qux"
    preempted["spec"]["gracefulEvictionTasks"] = [preemption_task("member1", creationTimestamp=stamp(30))]
    preempted["spec"]["clusters"] = []
    works = {("ResourceBinding", "default/bar-flinkdeployment"): ("member2",)}
    return workload_phase_rows([elsewhere, preempted, flink_binding(), restoring], works, "member1")


def fenced_on_a_pull_cluster() -> dict[str, Any]:
    """The `status` view of foo once its old copy on the Pull cluster member1 is fenced."""
    binding = evicted()
    fenced = decide_fencing(binding, [old_work()], pull(False, since=-30), SETTINGS, at(30))
    return workload_view(merge_patch(binding, fenced.binding_patch), pull(False, since=-30), at(31), decisions=SETTINGS)
