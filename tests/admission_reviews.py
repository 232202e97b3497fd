"""AdmissionReviews as the apiserver sends them to the relay, and the JSON patch of an answer read back."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Mapping
from typing import Any

GVK = {
    "PropagationPolicy": ("policy.karmada.io", "v1alpha1"),
    "ClusterPropagationPolicy": ("policy.karmada.io", "v1alpha1"),
    "WorkloadRebalancer": ("apps.karmada.io", "v1alpha1"),
    "FlinkDeployment": ("flink.apache.org", "v1beta1"),
    "FlinkSessionJob": ("flink.apache.org", "v1beta1"),
    "FlinkBlueGreenDeployment": ("flink.apache.org", "v1beta1"),
    "Deployment": ("apps", "v1"),
}


def plural(kind: str) -> str:
    """The resource name the apiserver puts in a review: propagationpolicies, flinkdeployments, deployments."""
    lower = kind.lower()
    return lower[:-1] + "ies" if lower.endswith("y") else lower + "s"


def admission_review(
    obj: Mapping[str, Any],
    operation: str = "CREATE",
    *,
    uid: str | None = None,
    old: Mapping[str, Any] | None = None,
    dry_run: bool = False,
) -> dict[str, Any]:
    kind = obj["kind"]
    group, version = GVK[kind]
    metadata = obj.get("metadata", {})
    request: dict[str, Any] = {
        "uid": uid or str(uuid.uuid4()),
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": plural(kind)},
        "name": metadata.get("name", ""),
        "operation": operation,
        "userInfo": {"username": "test"},
        "object": obj,
        "oldObject": old,
        "dryRun": dry_run,
    }
    if metadata.get("namespace"):
        request["namespace"] = metadata["namespace"]
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def decoded_patch(response: Mapping[str, Any]) -> list[dict[str, Any]]:
    assert response.get("patchType") == "JSONPatch"
    return json.loads(base64.b64decode(response["patch"]))
