"""Works and Clusters as Karmada writes them: one builder for each (`work`, `cluster`), for every test that needs one;
and the old copy's Work, its clusters and the binding evicted from member1 with purgeMode Directly that the decisions
on old copies start from (failover/fence/, failover/reconcile/)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from failover.core.work import EXECUTION_FINALIZER
from tests.failover.binding_builders import flink_binding, stamp

# The taint Karmada's cluster controller puts on a cluster that is not Ready (cluster.karmada.io/not-ready).
NOT_READY_TAINT = {"key": "cluster.karmada.io/not-ready", "effect": "NoExecute"}


def work(
    *manifests: dict[str, Any],
    cluster: str = "member1",
    name: str = "foo-5d8f",
    namespace: str | None = None,
    deleting: float | None = None,
    finalizers: Iterable[str] | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    resource_version: str | None = None,
    typed: bool = True,
) -> dict[str, Any]:
    """A Work holding `manifests`, in the execution namespace of `cluster` (`karmada-es-<cluster>`) unless `namespace`
    is given. The optional fields are written only when given: `deleting` is the deletionTimestamp, in seconds after
    T0; `typed=False` leaves out apiVersion and kind."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace or f"karmada-es-{cluster}"}
    if resource_version is not None:
        metadata["resourceVersion"] = resource_version
    if finalizers is not None:
        metadata["finalizers"] = list(finalizers)
    if deleting is not None:
        metadata["deletionTimestamp"] = stamp(deleting)
    if labels is not None:
        metadata["labels"] = dict(labels)
    if annotations is not None:
        metadata["annotations"] = dict(annotations)
    obj: dict[str, Any] = {"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work"} if typed else {}
    obj["metadata"] = metadata
    obj["spec"] = {"workload": {"manifests": list(manifests)}}
    return obj


def deployment_manifest(name: str = "foo", namespace: str = "default", **fields: Any) -> dict[str, Any]:
    """A FlinkDeployment as a Work's manifest: FLINK_BINDING's foo by default; `fields` (spec=...) follow its
    metadata."""
    return {
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkDeployment",
        "metadata": {"name": name, "namespace": namespace},
        **fields,
    }


# The annotations by which Karmada's binding controller names the binding a Work was rendered from: here
# FLINK_BINDING, default/foo-flinkdeployment.
RENDERED_FROM_FOO = {
    "resourcebinding.karmada.io/namespace": "default",
    "resourcebinding.karmada.io/name": "foo-flinkdeployment",
}


def cluster(
    name: str = "member1",
    ready: bool | str = True,
    since: float | None = None,
    *,
    taints: Iterable[dict[str, str]] | None = (),
    annotations: dict[str, str] | None = None,
    sync_mode: str | None = None,
    reason: str | None = None,
    message: str | None = None,
    typed: bool = True,
) -> dict[str, Any]:
    """A Cluster with its Ready condition: `ready` is its status (True, False, or Karmada's string, "Unknown"), `since`
    its lastTransitionTime in seconds after T0, `reason` and `message` the condition's. The optional fields are
    written only when given (`taints=None`: no taints field at all); `typed=False` leaves out apiVersion and kind."""
    metadata: dict[str, Any] = {"name": name}
    if annotations is not None:
        metadata["annotations"] = dict(annotations)
    spec: dict[str, Any] = {}
    if sync_mode is not None:
        spec["syncMode"] = sync_mode
    if taints is not None:
        spec["taints"] = [dict(taint) for taint in taints]
    condition: dict[str, Any] = {"type": "Ready", "status": ready if isinstance(ready, str) else str(ready)}
    if since is not None:
        condition["lastTransitionTime"] = stamp(since)
    if reason is not None:
        condition["reason"] = reason
    if message is not None:
        condition["message"] = message
    obj: dict[str, Any] = {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster"} if typed else {}
    obj.update(metadata=metadata, spec=spec, status={"conditions": [condition]})
    return obj


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


def stored_work(
    cluster: str = "member1",
    deleting: float | None = 0,
    finalizers: Iterable[str] = (EXECUTION_FINALIZER,),
    name: str = "foo-5d8f",
    **fields: Any,
) -> dict[str, Any]:
    """foo's Work as the apiserver stores it, with a resourceVersion and the execution controller's finalizer; by
    default the old copy of `evicted()`, on member1, which Karmada deletes at 0 s (`deleting=None`: not deleting).
    `fields` as `work` takes them."""
    return work(
        deployment_manifest(),
        cluster=cluster,
        name=name,
        deleting=deleting,
        finalizers=finalizers,
        resource_version="77",
        **fields,
    )


def clusters(member1_ready: bool, since: float = 0, taint: bool = False) -> dict[str, dict[str, Any]]:
    """member1, Ready or not since `since` (with the not-ready taint if `taint`), and member2, Ready for long."""
    return {
        "member1": cluster("member1", member1_ready, since, taints=[NOT_READY_TAINT] if taint else None, typed=False),
        "member2": cluster("member2", True, -1000, taints=None, typed=False),
    }


# The permanent id Karmada's Work webhook gives the old Work (`work.karmada.io/permanent-id`): its fence id.
PERMANENT_ID = "0b7e3f5c-3c1e-4c55-9d2b-6a4c1e2f9a10"


def old_work(**kwargs: Any) -> dict[str, Any]:
    """`stored_work(**kwargs)` with its permanent id, as Karmada's Work webhook stamps every Work."""
    return stored_work(labels={"work.karmada.io/permanent-id": PERMANENT_ID}, **kwargs)
