"""Works and Clusters as Karmada writes them, and a binding evicted from member1 with purgeMode Directly, for the
decisions on old copies (failover/fence/, failover/reconcile/)."""

from __future__ import annotations

from typing import Any

from failover.core.work import EXECUTION_FINALIZER
from tests.failover.binding_builders import flink_binding, stamp


def evicted(message: str = "application on member1 was Unhealthy") -> dict[str, Any]:
    binding = flink_binding()
    binding["metadata"]["labels"] = {"resourcebinding.karmada.io/permanent-id": "b-1"}
    binding["spec"]["clusters"] = [{"name": "member2", "replicas": 1}]
    binding["spec"]["gracefulEvictionTasks"] = [
        {
            "fromCluster": "member1",
            "purgeMode": "Directly",
            "reason": "ApplicationFailure",
            "message": message,
            "creationTimestamp": stamp(0),
        }
    ]
    return binding


def work(
    cluster: str = "member1",
    deleting: float | None = 0,
    finalizers: tuple[str, ...] = (EXECUTION_FINALIZER,),
    name: str = "foo-5d8f",
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": f"karmada-es-{cluster}",
        "resourceVersion": "77",
        "finalizers": list(finalizers),
    }
    if deleting is not None:
        metadata["deletionTimestamp"] = stamp(deleting)
    return {
        "apiVersion": "work.karmada.io/v1alpha1",
        "kind": "Work",
        "metadata": metadata,
        "spec": {
            "workload": {
                "manifests": [
                    {
                        "apiVersion": "flink.apache.org/v1beta1",
                        "kind": "FlinkDeployment",
                        "metadata": {"name": "foo", "namespace": "default"},
                    }
                ]
            }
        },
    }


def cluster(name: str, ready: bool, since: float, taint: bool = False) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "metadata": {"name": name},
        "spec": {},
        "status": {
            "conditions": [
                {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": stamp(since)}
            ]
        },
    }
    if taint:
        obj["spec"]["taints"] = [{"key": "cluster.karmada.io/not-ready", "effect": "NoExecute"}]
    return obj


def clusters(member1_ready: bool, since: float = 0, taint: bool = False) -> dict[str, dict[str, Any]]:
    return {"member1": cluster("member1", member1_ready, since, taint), "member2": cluster("member2", True, -1000)}


# The permanent id Karmada's Work webhook gives the old Work (`work.karmada.io/permanent-id`): its fence id.
PERMANENT_ID = "0b7e3f5c-3c1e-4c55-9d2b-6a4c1e2f9a10"


def old_work(**kwargs: Any) -> dict[str, Any]:
    """`work(**kwargs)` with its permanent id, as Karmada's Work webhook stamps every Work."""
    obj = work(**kwargs)
    obj["metadata"]["labels"] = {"work.karmada.io/permanent-id": PERMANENT_ID}
    return obj
