"""ResourceBindings as Karmada writes them, for the reconcile decision tests, and a clock to drive them."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    """The injected clock: `seconds` after T0."""
    return T0 + timedelta(seconds=seconds)


def stamp(seconds: float) -> str:
    return at(seconds).strftime("%Y-%m-%dT%H:%M:%SZ")


# A FlinkDeployment's binding as Karmada v1.12+ makes it from the documented state preservation policy (with the
# operator's real field name, jobId), running on member1; aggregatedStatus carries the reflected status.
JOB_ID = "8f0c7a7bd5a0c3e6bd8d2c1c4f9b2a11"
FLINK_BINDING: dict[str, Any] = {
    "apiVersion": "work.karmada.io/v1alpha2",
    "kind": "ResourceBinding",
    "metadata": {
        "name": "foo-flinkdeployment",
        "namespace": "default",
        "generation": 2,
        "resourceVersion": "1000",
        "annotations": {
            "propagationpolicy.karmada.io/name": "foo",
            "propagationpolicy.karmada.io/namespace": "default",
        },
    },
    "spec": {
        "resource": {
            "apiVersion": "flink.apache.org/v1beta1",
            "kind": "FlinkDeployment",
            "namespace": "default",
            "name": "foo",
            "uid": "4b9e1b4e-1111-2222-3333-444455556666",
        },
        "propagateDeps": True,
        "replicas": 1,
        "clusters": [{"name": "member1", "replicas": 1}],
        "failover": {
            "application": {
                "decisionConditions": {"tolerationSeconds": 60},
                "purgeMode": "Directly",
                "statePreservation": {
                    "rules": [
                        {"aliasLabelName": "application.karmada.io/failover-jobid", "jsonPath": "{ .jobStatus.jobId }"}
                    ]
                },
            }
        },
    },
    "status": {
        "schedulerObservedGeneration": 2,
        "aggregatedStatus": [
            {
                "clusterName": "member1",
                "applied": True,
                "health": "Healthy",
                "status": {"jobStatus": {"jobId": JOB_ID, "state": "RUNNING"}, "lifecycleState": "STABLE"},
            },
        ],
    },
}


def flink_binding(**health: str) -> dict[str, Any]:
    """FLINK_BINDING with the given per-cluster health (`member1="Unhealthy"`)."""
    binding = copy.deepcopy(FLINK_BINDING)
    for item in binding["status"]["aggregatedStatus"]:
        if item["clusterName"] in health:
            item["health"] = health[item["clusterName"]]
    return binding


# The alias label of cluster failover's state preservation, and a second job id (a restarted run's, another copy's).
CLUSTER_LABEL = "application.karmada.io/cluster-failover-jobid"
OTHER_JOB = "0123456789abcdef0123456789abcdef"


def with_cluster_rules(binding: dict[str, Any]) -> dict[str, Any]:
    """`binding` with cluster failover preserving the job id too, under CLUSTER_LABEL."""
    binding["spec"]["failover"]["cluster"] = {
        "purgeMode": "Directly",
        "statePreservation": {"rules": [{"aliasLabelName": CLUSTER_LABEL, "jsonPath": "{ .jobStatus.jobId }"}]},
    }
    return binding


def preemption_task(from_cluster: str, **extra: Any) -> dict[str, Any]:
    """An eviction task as Karmada PR #7832's binding preemption writes it (`pkg/scheduler/core/preemption.go`,
    `GracefulEvictCluster` with purge mode Gracefully, reason BindingPreempted, producer Scheduler; its e2e gives a 30 s
    grace period): no preservedLabelState, no clustersBeforeFailover."""
    return {
        "fromCluster": from_cluster,
        "purgeMode": "Gracefully",
        "reason": "BindingPreempted",
        "message": "preempted by a binding of higher priority",
        "producer": "Scheduler",
        "gracePeriodSeconds": 30,
        "replicas": 1,
        **extra,
    }


# What Karmada's taint manager writes (pkg/controllers/cluster/taint_manager.go syncBindingEviction) without
# StatefulFailoverInjection: no preservedLabelState, no clustersBeforeFailover, no creationTimestamp.
TAINT_TASK = {
    "fromCluster": "member1",
    "purgeMode": "Directly",
    "reason": "TaintUntolerated",
    "producer": "TaintManager",
    "replicas": 1,
}


def evicted_by_taint(binding: dict[str, Any]) -> dict[str, Any]:
    """`binding` after the taint manager evicted it from member1 and the scheduler placed it on member2."""
    binding["spec"]["clusters"] = [{"name": "member2", "replicas": 1}]
    binding["spec"]["gracefulEvictionTasks"] = [dict(TAINT_TASK)]
    return binding


def evicted_from_unreachable(purge_mode: str = "Directly", targets: tuple[str, ...] = ()) -> dict[str, Any]:
    """foo after the taint manager evicted it from member1, whose health is Unknown, as Karmada writes the task (stamped
    at 0 s); `targets` are the clusters the scheduler has chosen since."""
    binding = flink_binding(member1="Unknown")
    binding["spec"]["clusters"] = [{"name": name, "replicas": 1} for name in targets]
    binding["spec"]["gracefulEvictionTasks"] = [
        {
            "fromCluster": "member1",
            "purgeMode": purge_mode,
            "reason": "TaintUntolerated",
            "producer": "TaintManager",
            "creationTimestamp": stamp(0),
        }
    ]
    return binding


def set_health(binding: dict[str, Any], cluster: str, health: str, status: dict[str, Any] | None = None) -> None:
    items = binding["status"].setdefault("aggregatedStatus", [])
    for item in items:
        if item["clusterName"] == cluster:
            item["health"] = health
            if status is not None:
                item["status"] = status
            return
    items.append({"clusterName": cluster, "applied": True, "health": health, "status": status or {}})
    items.sort(key=lambda item: item["clusterName"])


def nginx_binding(clusters: list[str], purge_mode: str = "Gracefully", **application: Any) -> dict[str, Any]:
    """The documented nginx Deployment binding (application failover guide), spread over `clusters`."""
    spec_application = {"decisionConditions": {"tolerationSeconds": 120}, "purgeMode": purge_mode, **application}
    return {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {
            "name": "nginx-deployment",
            "namespace": "default",
            "generation": 1,
            "annotations": {
                "propagationpolicy.karmada.io/name": "nginx-propagation",
                "propagationpolicy.karmada.io/namespace": "default",
            },
        },
        "spec": {
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "nginx"},
            "propagateDeps": True,
            "replicas": 2 * len(clusters),
            "clusters": [{"name": name, "replicas": 2} for name in clusters],
            "failover": {"application": spec_application},
        },
        "status": {
            "schedulerObservedGeneration": 1,
            "aggregatedStatus": [
                {"clusterName": name, "applied": True, "health": "Healthy", "status": {"readyReplicas": 2}}
                for name in clusters
            ],
        },
    }


def evicting_binding(
    task: dict[str, Any], clusters: tuple[str, ...] = ("member2",), scheduled: bool = True
) -> dict[str, Any]:
    """nginx after member1 was evicted: targets `clusters`, one task from member1."""
    binding = nginx_binding(list(clusters))
    binding["metadata"]["generation"] = 2
    binding["status"]["schedulerObservedGeneration"] = 2 if scheduled else 1
    binding["spec"]["gracefulEvictionTasks"] = [
        {
            "fromCluster": "member1",
            "reason": "ApplicationFailure",
            "producer": "resource-binding-application-failover-controller",
            "purgeMode": "Gracefully",
            **task,
        }
    ]
    return binding
