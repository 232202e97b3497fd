"""The AdmissionReview bodies every server is loaded with, and the checkpoint tree behind the mutate body.

Both bodies are what a kube-apiserver sends for a `kubectl apply` of a real object: the object carries
managedFields and the last-applied annotation, the review carries userInfo and options. The PropagationPolicy is the
test suite's Flink example (failover with statePreservation); the FlinkDeployment carries the job-id label of a job
whose checkpoints exist, so `/mutate` answers with a JSONPatch (from the cache once it is warm).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.policies import flink_policy

JOB_ID_LABEL = "application.karmada.io/failover-jobid"
JOB_ID = "5f2d0c8e9a7b4c1d8e6f3a2b1c0d9e8f"
NAMESPACE = "flink"
CHECKPOINTS = 12  # chk-1 … chk-12; chk-12 is still being written, so the answer is chk-11
UID = "8f6c1a52-4b7e-4f0e-9d0a-3c2b1e0f9a77"


def _applied(obj: dict[str, Any], manager: str) -> dict[str, Any]:
    """`obj` as `kubectl apply` sends it: last-applied annotation, managedFields, server-set metadata."""
    last_applied = json.dumps(obj, separators=(",", ":"), sort_keys=True)
    metadata = obj["metadata"]
    metadata["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": last_applied + "\n"}
    metadata["creationTimestamp"] = None
    metadata["managedFields"] = [
        {
            "apiVersion": obj["apiVersion"],
            "fieldsType": "FieldsV1",
            "manager": manager,
            "operation": "Update",
            "time": "2026-11-22T09:41:07Z",
            "fieldsV1": {
                "f:metadata": {
                    "f:annotations": {".": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {}},
                    **({"f:labels": {".": {}}} if metadata.get("labels") else {}),
                },
                "f:spec": {".": {}, **{f"f:{key}": {} for key in obj["spec"]}},
            },
        }
    ]
    return obj


def review(obj: Mapping[str, Any], resource: str) -> dict[str, Any]:
    group, _, version = obj["apiVersion"].partition("/")
    metadata = obj["metadata"]
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": UID,
            "kind": {"group": group, "version": version, "kind": obj["kind"]},
            "resource": {"group": group, "version": version, "resource": resource},
            "requestKind": {"group": group, "version": version, "kind": obj["kind"]},
            "requestResource": {"group": group, "version": version, "resource": resource},
            "name": metadata["name"],
            "namespace": metadata["namespace"],
            "operation": "CREATE",
            "userInfo": {"username": "kubernetes-admin", "groups": ["kubeadm:cluster-admins", "system:authenticated"]},
            "object": obj,
            "oldObject": None,
            "dryRun": False,
            "options": {
                "apiVersion": "meta.k8s.io/v1",
                "kind": "CreateOptions",
                "fieldManager": "kubectl-client-side-apply",
                "fieldValidation": "Strict",
            },
        },
    }


def propagation_policy_review() -> dict[str, Any]:
    policy = flink_policy()
    policy["spec"]["placement"]["clusterAffinity"]["clusterNames"] = ["member1", "member2", "member3"]
    return review(_applied(policy, "kubectl-client-side-apply"), "propagationpolicies")


def flink_deployment_review() -> dict[str, Any]:
    deployment = {
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkDeployment",
        "metadata": {
            "name": "basic-example",
            "namespace": NAMESPACE,
            "labels": {"app": "basic-example", JOB_ID_LABEL: JOB_ID},
        },
        "spec": {
            "image": "flink:1.17",
            "flinkVersion": "v1_17",
            "serviceAccount": "flink",
            # No checkpoint dir of its own: the relay's configured root (the benchmark's local tree) is searched.
            "flinkConfiguration": {"taskmanager.numberOfTaskSlots": "2", "execution.checkpointing.interval": "30s"},
            "jobManager": {"resource": {"memory": "2048m", "cpu": 1}},
            "taskManager": {"resource": {"memory": "2048m", "cpu": 1}},
            "job": {
                "jarURI": "local:///opt/flink/examples/streaming/StateMachineExample.jar",
                "parallelism": 2,
                "upgradeMode": "stateless",
            },
        },
    }
    return review(_applied(deployment, "karmada-controller-manager"), "flinkdeployments")


def write_bodies(directory: Path) -> dict[str, Path]:
    """`validate.json` and `mutate.json` under `directory`; the same bytes go to every server."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = {"validate": directory / "validate.json", "mutate": directory / "mutate.json"}
    paths["validate"].write_text(json.dumps(propagation_policy_review(), separators=(",", ":")))
    paths["mutate"].write_text(json.dumps(flink_deployment_review(), separators=(",", ":")))
    return paths


def build_checkpoint_tree(root: Path) -> Path:
    """The benchmark job's checkpoints in the default layout (Flink's own); returns the newest completed one."""
    directory = root / JOB_ID
    for n in range(1, CHECKPOINTS + 1):
        (directory / f"chk-{n}").mkdir(parents=True, exist_ok=True)
        if n < CHECKPOINTS:
            (directory / f"chk-{n}" / "_metadata").write_bytes(b"metadata")
    return directory / f"chk-{CHECKPOINTS - 1}"
