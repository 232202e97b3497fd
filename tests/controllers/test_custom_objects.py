"""`CustomObjects` sends each verb to the custom-objects method of the resource's scope, with the request timeout."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from controllers.access.kube import JSON_PATCH, CustomObjects
from failover.core.api import CLUSTERS, RESOURCE_BINDINGS

TIMEOUT = 3.0
RB = (RESOURCE_BINDINGS.group, RESOURCE_BINDINGS.version, "ns", RESOURCE_BINDINGS.plural, "rb")
CLUSTER = (CLUSTERS.group, CLUSTERS.version, CLUSTERS.plural, "member1")


class RecordingApi:
    """Stands in for `kubernetes.client.CustomObjectsApi`: records each call and answers an empty object."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def __getattr__(self, method: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> dict[str, Any]:
            self.calls.append((method, args, kwargs))
            return {}

        return call


def objects(resource: Any) -> tuple[CustomObjects, RecordingApi]:
    custom_objects = CustomObjects(client.ApiClient(), resource, TIMEOUT)
    api = RecordingApi()
    custom_objects.api = api  # type: ignore[assignment]
    return custom_objects, api


def test_a_namespaced_resource_is_reached_by_namespace_and_name() -> None:
    rb, api = objects(RESOURCE_BINDINGS)
    rb.get("ns/rb")
    rb.patch("ns/rb", {"spec": {}})
    rb.json_patch("ns/rb", [{"op": "test", "path": "/spec", "value": {}}])
    rb.patch_status("ns/rb", {"status": {}})
    rb.delete("ns/rb")
    assert api.calls == [
        ("get_namespaced_custom_object", RB, {"_request_timeout": TIMEOUT}),
        ("patch_namespaced_custom_object", (*RB, {"spec": {}}), {"_request_timeout": TIMEOUT}),
        (
            "patch_namespaced_custom_object",
            (*RB, [{"op": "test", "path": "/spec", "value": {}}]),
            {"_request_timeout": TIMEOUT, "_content_type": JSON_PATCH},
        ),
        ("patch_namespaced_custom_object_status", (*RB, {"status": {}}), {"_request_timeout": TIMEOUT}),
        ("delete_namespaced_custom_object", RB, {"body": None, "_request_timeout": TIMEOUT}),
    ]


def test_a_cluster_scoped_resource_is_reached_by_name_alone() -> None:
    clusters, api = objects(CLUSTERS)
    clusters.get("member1")
    clusters.patch("member1", {"spec": {}})
    clusters.json_patch("member1", [])
    clusters.patch_status("member1", {"status": {}})
    clusters.delete("member1")
    assert api.calls == [
        ("get_cluster_custom_object", CLUSTER, {"_request_timeout": TIMEOUT}),
        ("patch_cluster_custom_object", (*CLUSTER, {"spec": {}}), {"_request_timeout": TIMEOUT}),
        (
            "patch_cluster_custom_object",
            (*CLUSTER, []),
            {"_request_timeout": TIMEOUT, "_content_type": JSON_PATCH},
        ),
        ("patch_cluster_custom_object_status", (*CLUSTER, {"status": {}}), {"_request_timeout": TIMEOUT}),
        ("delete_cluster_custom_object", CLUSTER, {"body": None, "_request_timeout": TIMEOUT}),
    ]


def test_a_delete_with_a_resource_version_carries_it_as_its_precondition() -> None:
    rb, api = objects(RESOURCE_BINDINGS)
    rb.delete("ns/rb", resource_version="42")
    [(_, _, kwargs)] = api.calls
    assert kwargs["body"] == client.V1DeleteOptions(preconditions=client.V1Preconditions(resource_version="42"))
