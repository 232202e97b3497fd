"""A FlinkDeployment's JobManager (failover/state/jobmanager.py): when one runs or can come back, and which Deployment
is the copy's."""

from __future__ import annotations

from failover.state.jobmanager import JobManager, jobmanager_selector, owned_by

COPY = {"metadata": {"name": "orders", "namespace": "jobs", "uid": "f-1"}}


def deployment(replicas: object = 1, **metadata: object) -> dict:
    spec = {} if replicas is None else {"replicas": replicas}
    return {"metadata": {"name": "orders", **metadata}, "spec": spec}


def pod(phase: str) -> dict:
    return {"metadata": {"name": f"orders-{phase.lower()}"}, "status": {"phase": phase}}


def test_a_deployment_that_wants_a_replica_runs_one_or_will() -> None:
    assert JobManager(deployment()).runs and JobManager(deployment(replicas=None)).runs  # Kubernetes defaults it to 1
    assert not JobManager(deployment(replicas=0)).wanted
    assert not JobManager(deployment(deletionTimestamp="2025-03-01T12:00:00Z")).wanted
    assert not JobManager(None).runs


def test_a_pod_runs_until_it_has_ended_terminating_or_not() -> None:
    for phase in ("Pending", "Running", "Unknown"):
        assert JobManager(None, (pod(phase),)).runs and JobManager(None, (pod(phase),)).running_pods
    terminating = pod("Running")
    terminating["metadata"]["deletionTimestamp"] = "2025-03-01T12:00:00Z"
    assert JobManager(None, (terminating,)).runs
    assert not JobManager(None, (pod("Succeeded"), pod("Failed"))).runs


def test_the_copys_deployment_is_the_one_it_owns() -> None:
    owned = deployment(ownerReferences=[{"kind": "FlinkDeployment", "name": "orders", "uid": "f-1"}])
    assert owned_by(owned, COPY)
    assert not owned_by(deployment(ownerReferences=[{"uid": "f-2"}]), COPY)
    assert not owned_by(deployment(), COPY) and not owned_by(None, COPY) and not owned_by(owned, {"metadata": {}})
    assert jobmanager_selector("orders") == "app=orders,component=jobmanager,type=flink-native-kubernetes"
