"""Cluster access: which config to use, and the Karmada resources the loop reads and writes.

The custom-objects API returns plain dicts, which is exactly what the decisions in `failover/` take, so no typed
models are generated for Karmada's CRDs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kubernetes import client, config
from kubernetes.config.config_exception import ConfigException

from failover.api import CLUSTER_RESOURCE_BINDINGS, CLUSTERS, RESOURCE_BINDINGS, WORKLOAD_REBALANCERS  # noqa: F401
from failover.api import Resource as CustomResource


class NoClusterConfig(Exception):
    """Neither in-cluster config nor a kubeconfig was found (the loop is then off; the webhook still serves)."""


def load_api_client(kubeconfig: Path | None = None) -> client.ApiClient:
    """In-cluster config when running in a Pod, else `kubeconfig`, `$KUBECONFIG` or `~/.kube/config`."""
    if kubeconfig is None and "KUBERNETES_SERVICE_HOST" in os.environ:
        configuration = client.Configuration()
        try:
            config.load_incluster_config(client_configuration=configuration)
        except ConfigException as error:
            raise NoClusterConfig(f"in-cluster config unusable: {error}") from None
        return client.ApiClient(configuration)
    candidates = [kubeconfig] if kubeconfig is not None else [
        Path(path) for path in os.environ.get("KUBECONFIG", "").split(os.pathsep) if path
    ] or [Path.home() / ".kube" / "config"]
    path = next((candidate for candidate in candidates if candidate.is_file()), None)
    if path is None:
        raise NoClusterConfig(f"no kubeconfig at {', '.join(map(str, candidates))}")
    try:
        return config.new_client_from_config(config_file=str(path))
    except (ConfigException, OSError, ValueError) as error:
        raise NoClusterConfig(f"kubeconfig {path} unusable: {error}") from None


class CustomObjects:
    """get / list / replace / replace_status / create / delete of one custom resource, by key (`ns/name` or `name`)."""

    def __init__(self, api_client: client.ApiClient, resource: CustomResource) -> None:
        self.api = client.CustomObjectsApi(api_client)
        self.resource = resource

    def list(self, **kwargs: Any) -> Any:
        r = self.resource
        return self.api.list_cluster_custom_object(r.group, r.version, r.plural, **kwargs)

    def get(self, key: str) -> dict[str, Any]:
        return self._call("get", key)

    def replace(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        return self._call("replace", _key_of(obj), body=obj)

    def replace_status(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        return self._call("replace", _key_of(obj), body=obj, status=True)

    def patch(self, key: str, merge_patch: Mapping[str, Any]) -> dict[str, Any]:
        """A JSON merge patch; put metadata.resourceVersion in it to make it conditional (409 when stale)."""
        return self._call("patch", key, body=merge_patch)

    def patch_status(self, key: str, merge_patch: Mapping[str, Any]) -> dict[str, Any]:
        return self._call("patch", key, body=merge_patch, status=True)

    def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        r = self.resource
        namespace = (obj.get("metadata") or {}).get("namespace")
        if r.namespaced:
            return self.api.create_namespaced_custom_object(r.group, r.version, namespace, r.plural, obj)
        return self.api.create_cluster_custom_object(r.group, r.version, r.plural, obj)

    def delete(self, key: str, resource_version: str | None = None) -> None:
        preconditions = client.V1DeleteOptions(
            preconditions=client.V1Preconditions(resource_version=resource_version)) if resource_version else None
        self._call("delete", key, body=preconditions)

    def _call(self, verb: str, key: str, body: Any = None, status: bool = False) -> Any:
        r = self.resource
        namespace, _, name = key.rpartition("/")
        scope = "namespaced" if r.namespaced else "cluster"
        method = getattr(self.api, f"{verb}_{scope}_custom_object{'_status' if status else ''}")
        args: list[Any] = [r.group, r.version, *([namespace] if r.namespaced else []), r.plural, name]
        if verb in ("replace", "patch"):
            return method(*args, body)
        if body is not None:
            return method(*args, body=body)
        return method(*args)


def _key_of(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata") or {}
    namespace = metadata.get("namespace")
    return f"{namespace}/{metadata['name']}" if namespace else str(metadata["name"])
