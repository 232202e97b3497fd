"""A binding write tested on the fields its decision read (failover/reconcile/preconditions.py), on a real
kube-apiserver: what it answers when Karmada changed other fields, a read field, or nothing since the decision."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from controllers.access.kube import CustomObjects, precondition_failed
from failover.core.api import RESOURCE_BINDINGS
from failover.reconcile.cluster_failover import decide_cluster_failover_state
from failover.reconcile.preconditions import fill_reads, guarded_patch
from tests.e2e.objects import REPORTED_JOB_ID, flink_binding, replace_object
from tests.envtest import ControlPlane
from tests.failover.binding_builders import CLUSTER_LABEL, with_cluster_rules

pytestmark = pytest.mark.envtest
# The taint manager's task without StatefulFailoverInjection (pkg/controllers/cluster/taint_manager.go).
TAINT_TASK = {
    "fromCluster": "member1",
    "purgeMode": "Directly",
    "reason": "TaintUntolerated",
    "producer": "TaintManager",
}


def test_a_guarded_fill_survives_karmadas_other_writes_and_fails_on_a_read_field(control_plane: ControlPlane) -> None:
    namespace = f"guarded-{uuid.uuid4().hex[:8]}"
    control_plane.kubectl("create", "namespace", namespace)
    api: client.ApiClient = config.new_client_from_config(config_file=str(control_plane.kubeconfig_path))
    bindings = CustomObjects(api, RESOURCE_BINDINGS)
    spec_binding = with_cluster_rules(flink_binding("job", namespace, 30))
    spec_binding["spec"]["clusters"] = [{"name": "member2", "replicas": 1}]
    spec_binding["spec"]["gracefulEvictionTasks"] = [dict(TAINT_TASK)]
    created = bindings.create(spec_binding)
    status: dict[str, Any] = {
        "aggregatedStatus": [
            {
                "clusterName": "member1",
                "health": "Healthy",
                "applied": True,
                "status": {"jobStatus": {"jobId": REPORTED_JOB_ID}},
            }
        ]
    }
    seen = replace_object(bindings, {**created, "status": status}, status=True)  # what the relay's cache holds

    decision = decide_cluster_failover_state(seen)
    operations = guarded_patch(seen, decision.patch, fill_reads(seen, decision.filled))
    # Meanwhile Karmada writes fields the decision did not read: the scheduler's targets' status, a condition,
    # another cluster's reflected status, a label. A resourceVersion precondition would have failed here.
    later = bindings.get(f"{namespace}/job")
    later["status"]["conditions"] = [
        {
            "type": "Scheduled",
            "status": "True",
            "reason": "Success",
            "message": "",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
    ]
    later["status"]["aggregatedStatus"].append({"clusterName": "member2", "health": "Unknown", "applied": False})
    later = replace_object(bindings, later, status=True)
    later["metadata"]["labels"] = {"karmada.io/managed": "true"}
    later = replace_object(bindings, later)

    patched = bindings.json_patch(f"{namespace}/job", operations)
    (task,) = patched["spec"]["gracefulEvictionTasks"]
    assert task["preservedLabelState"] == {CLUSTER_LABEL: REPORTED_JOB_ID}
    assert patched["metadata"]["labels"] == {"karmada.io/managed": "true"}
    assert len(patched["status"]["aggregatedStatus"]) == 2

    # Applied twice: the tasks it tested have changed (by its own first write), so the apiserver refuses it.
    with pytest.raises(ApiException) as again:
        bindings.json_patch(f"{namespace}/job", operations)
    assert precondition_failed(again.value), again.value.body
    assert decide_cluster_failover_state(patched).patch is None

    # The taint manager's next task, written since the decision was made, fails it too.
    fresh = patched
    unfilled = {**fresh, "spec": {**fresh["spec"], "gracefulEvictionTasks": [dict(TAINT_TASK)]}}
    unfilled = replace_object(bindings, unfilled)
    decision = decide_cluster_failover_state(unfilled)
    operations = guarded_patch(unfilled, decision.patch, fill_reads(unfilled, decision.filled))
    unfilled["spec"]["gracefulEvictionTasks"].append({**TAINT_TASK, "fromCluster": "member3"})
    replace_object(bindings, unfilled)
    with pytest.raises(ApiException) as moved:
        bindings.json_patch(f"{namespace}/job", operations)
    assert precondition_failed(moved.value), moved.value.body
