"""A workload moved from member1 to member2 whose new copy has no checkpoint of its own yet, for the restoration
tests (tests/failover/state/test_restoration.py) and the binding pipeline's restoration step."""

from __future__ import annotations

import json
from typing import Any

from failover.core.loop_settings import DecisionSettings
from failover.reconcile.graceful_eviction import decide_graceful_eviction
from tests.failover.binding_builders import JOB_ID, at, flink_binding, set_health, stamp
from tests.patches import merge_patch

LABEL = "application.karmada.io/failover-jobid"
NEW_JOB = "4c1f0e9d8b7a69584736251403f2e1d0"


def moved_to_member2(health: str = "Healthy", job_id: str = NEW_JOB) -> dict[str, Any]:
    """foo failed over from member1 at 0 s carrying JOB_ID; its new copy on member2 runs `job_id`."""
    binding = flink_binding()
    binding["spec"]["clusters"] = [{"name": "member2", "replicas": 1}]
    binding["spec"]["gracefulEvictionTasks"] = [
        {
            "fromCluster": "member1",
            "purgeMode": "Directly",
            "reason": "ApplicationFailure",
            "producer": "resource-binding-application-failover-controller",
            "preservedLabelState": {LABEL: JOB_ID},
            "clustersBeforeFailover": ["member1"],
            "creationTimestamp": stamp(0),
        }
    ]
    binding["status"]["aggregatedStatus"] = []
    set_health(binding, "member2", health, {"jobStatus": {"jobId": job_id, "state": "RUNNING"}})
    return binding


def moved_without_checkpoint(health: str = "Healthy") -> dict[str, Any]:
    """moved_to_member2 once the task ended (the new copy Healthy at 30 s): the move's state recorded as restoring;
    then the copy reports `health`."""
    binding = moved_to_member2()
    decision = decide_graceful_eviction(binding, DecisionSettings(), at(30))
    assert [task.from_cluster for task in decision.ended] == ["member1"]
    binding = merge_patch(binding, decision.patch)
    set_health(binding, "member2", health)
    return binding


def deployed_status(path: str | None, job_id: str = NEW_JOB) -> dict[str, Any]:
    """A FlinkDeployment's status as Karmada reflects it once operator 1.16 deployed it from `path` (None: from no
    path); the shape of `lastReconciledSpec` is Karmada's interpreter testdata
    (`resourcecustomizations/flink.apache.org/v1beta1/FlinkDeployment/testdata/interpretstatus-test.yaml`)."""
    job = {"jarURI": "local:///opt/flink/job.jar", "upgradeMode": "savepoint", "initialSavepointPath": path}
    spec = json.dumps({"spec": {"job": job}, "resource_metadata": {"firstDeployment": True}})
    return {"jobStatus": {"jobId": job_id, "state": "RUNNING"}, "reconciliationStatus": {"lastReconciledSpec": spec}}
