"""The objects the Flink operator 1.16 makes for a FlinkDeployment's JobManager, as a member cluster's apiserver holds
them: Flink's native Kubernetes integration names the Deployment after the cluster id (the FlinkDeployment's name),
the operator owns it by the FlinkDeployment (`kubernetes.jobmanager.owner.reference`), and its pods carry Flink's
JobManager labels (`KubernetesUtils.getJobManagerSelectors`). Written here from Flink's side, not read from
failover/state/jobmanager.py, so a wrong selector there fails the tests that use these."""

from __future__ import annotations

import urllib.parse
from typing import Any

from tests.kube_api import resource_path

FLINK_IMAGE = "flink:1.20"
# The hash a ReplicaSet controller puts in its pods' names and `pod-template-hash` label (one template, one hash).
POD_TEMPLATE_HASH = "6c9f8d7b5"


def jobmanager_labels(name: str) -> dict[str, str]:
    return {"app": name, "component": "jobmanager", "type": "flink-native-kubernetes"}


def jobmanager_selector(name: str) -> str:
    return ",".join(f"{key}={value}" for key, value in jobmanager_labels(name).items())


def jobmanager_pods_path(name: str, namespace: str) -> str:
    """The REST path listing FlinkDeployment `name`'s JobManager pods."""
    selector = urllib.parse.quote(jobmanager_selector(name))
    return f"{resource_path('v1', 'pods', namespace=namespace)}?labelSelector={selector}"


def jobmanager_deployment(name: str, owner_uid: str) -> dict[str, Any]:
    """The JobManager Deployment the operator makes for FlinkDeployment `name`, owned by it."""
    owner = {
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkDeployment",
        "name": name,
        "uid": owner_uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": jobmanager_labels(name), "ownerReferences": [owner]},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": jobmanager_labels(name)},
            "template": {
                "metadata": {"labels": jobmanager_labels(name)},
                "spec": {"containers": [{"name": "flink-main-container", "image": FLINK_IMAGE}]},
            },
        },
    }


def jobmanager_pod(name: str, suffix: str = "x7k2p") -> dict[str, Any]:
    """One pod of that Deployment, named as its ReplicaSet names pods; a tier without a kubelet reports it Running
    through the status subresource."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{name}-{POD_TEMPLATE_HASH}-{suffix}",
            "labels": jobmanager_labels(name) | {"pod-template-hash": POD_TEMPLATE_HASH},
        },
        "spec": {"containers": [{"name": "flink-main-container", "image": FLINK_IMAGE}]},
    }


def running_pods(pods: list[dict[str, Any]]) -> list[str]:
    """The names of the pods that run: Running, and not being deleted."""
    return [
        pod["metadata"]["name"]
        for pod in pods
        if (pod.get("status") or {}).get("phase") == "Running" and not pod["metadata"].get("deletionTimestamp")
    ]
