"""Cluster access: which config to use, and the Karmada resources the loop reads and writes.

The custom-objects API returns plain dicts, which is exactly what the decisions in `failover/` take, so no typed
models are generated for Karmada's CRDs.
"""

from __future__ import annotations

import builtins
import json
import os
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, cast

import yaml
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException
from urllib3.exceptions import InsecureRequestWarning

from failover.core.api import Resource
from failover.core.names import split_key
from failover.core.version import package_version

# What the apiservers record as the writer: managedFields' manager is the user agent's part before "/", and the audit
# log names it too. The client's default, "OpenAPI-Generator/...", said nothing about who wrote a binding's tasks.
FIELD_MANAGER = "failover-relay"
USER_AGENT = f"{FIELD_MANAGER}/{package_version()}"


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
        return api_client_of(configuration)
    candidates = (
        [kubeconfig]
        if kubeconfig is not None
        else [Path(path) for path in os.environ.get("KUBECONFIG", "").split(os.pathsep) if path]
        or [Path.home() / ".kube" / "config"]
    )
    path = next((candidate for candidate in candidates if candidate.is_file()), None)
    if path is None:
        directories = [candidate for candidate in candidates if candidate.is_dir()]
        if directories:
            raise NoClusterConfig(f"kubeconfig {directories[0]} is a directory, not a kubeconfig file")
        raise NoClusterConfig(f"no kubeconfig at {', '.join(map(str, candidates))}")
    try:
        api_client = config.new_client_from_config(config_file=str(path))
    except (ConfigException, OSError, ValueError, yaml.YAMLError, TypeError, AttributeError) as error:
        # Not YAML, or YAML of the wrong shape: the kubernetes client raises whatever its parser met.
        raise NoClusterConfig(f"kubeconfig {path}{_position(error)} unusable: {_reason(error)}") from None
    api_client.user_agent = USER_AGENT
    if not api_client.configuration.verify_ssl:
        # insecure-skip-tls-verify is the kubeconfig's own choice, which kubectl honours without a word; urllib3
        # would print an InsecureRequestWarning on every request (`status --watch` printed them between its tables).
        warnings.filterwarnings("ignore", category=InsecureRequestWarning)
    return api_client


def api_client_of(configuration: client.Configuration) -> client.ApiClient:
    """A client for `configuration` that names the relay as its user agent."""
    api_client = client.ApiClient(configuration)
    api_client.user_agent = USER_AGENT
    return api_client


def _position(error: Exception) -> str:
    """ ":LINE:COLUMN" of a YAML error, 1-based as editors count; "" for any other error."""
    mark = getattr(error, "problem_mark", None)
    return f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""


def _reason(error: Exception) -> str:
    """What went wrong, in one line: a YAML error's problem ("expected ',' or ']'"), else the error's first line."""
    problem = getattr(error, "problem", None)
    if isinstance(error, yaml.YAMLError) and problem:
        return f"invalid YAML: {problem}"
    return str(error).splitlines()[0] if str(error) else type(error).__name__


# Every call has a deadline, so a hung apiserver fails a reconcile (retried with backoff) instead of holding a worker
# forever. A GET or PATCH of one object takes milliseconds; 10 s is far above that and below the 15 s Lease
# duration, as controller-runtime bounds its calls by the leader election's renew deadline.
DEFAULT_REQUEST_TIMEOUT_SECONDS = 10.0
# A full list of 10,000 bindings takes a few seconds (docs/benchmarks.md); a minute leaves room for far more.
LIST_TIMEOUT_SECONDS = 60.0
JSON_PATCH = "application/json-patch+json"


def not_found(error: BaseException) -> bool:
    """404: the object does not exist (any more)."""
    return isinstance(error, ApiException) and error.status == 404


def conflict(error: BaseException) -> bool:
    """409: the object changed since it was read (or already exists, for a create)."""
    return isinstance(error, ApiException) and error.status == 409


def precondition_failed(error: BaseException) -> bool:
    """422 from a JSON patch that could not be applied: with ours, a `test` failed (a field its decision read has
    changed). The apiserver answers that with a bare `Invalid` status, no details
    (`k8s.io/apiserver/pkg/endpoints/handlers/patch.go` `NewGenericServerResponse`); a patched object that fails
    validation names itself and its causes in `details`."""
    if not (isinstance(error, ApiException) and error.status == 422):
        return False
    try:
        body = json.loads(error.body or "")
    except ValueError:
        return False
    return isinstance(body, dict) and body.get("reason") == "Invalid" and not body.get("details")


def _object(response: object) -> dict[str, Any]:
    """The client types what the custom-objects API returns as `object`; it is the decoded JSON body, a dict."""
    return cast("dict[str, Any]", response)


class CustomObjects:
    """Blocking calls on one custom resource, by key (`ns/name` or `name`), each with a request timeout."""

    def __init__(
        self, api_client: client.ApiClient, resource: Resource, timeout: float = DEFAULT_REQUEST_TIMEOUT_SECONDS
    ) -> None:
        self.api = client.CustomObjectsApi(api_client)
        self.resource = resource
        self.timeout = timeout

    def list(self, **kwargs: Any) -> Any:
        """The list (or, with watch=True, the stream) of every object; a watch passes its own _request_timeout."""
        r = self.resource
        kwargs.setdefault("_request_timeout", LIST_TIMEOUT_SECONDS)
        return self.api.list_cluster_custom_object(r.group, r.version, r.plural, **kwargs)

    def get(self, key: str) -> dict[str, Any]:
        return _object(self._by_scope(key, self.api.get_namespaced_custom_object, self.api.get_cluster_custom_object))

    def patch(self, key: str, merge_patch: Mapping[str, Any]) -> dict[str, Any]:
        """A JSON merge patch; put metadata.resourceVersion in it to make it conditional (409 when stale)."""
        return _object(
            self._by_scope(
                key, self.api.patch_namespaced_custom_object, self.api.patch_cluster_custom_object, dict(merge_patch)
            )
        )

    def json_patch(self, key: str, operations: builtins.list[dict[str, Any]]) -> dict[str, Any]:
        """A JSON patch (RFC 6902); its `test` operations are its preconditions (422, `precondition_failed`)."""
        return _object(
            self._by_scope(
                key,
                self.api.patch_namespaced_custom_object,
                self.api.patch_cluster_custom_object,
                operations,
                _content_type=JSON_PATCH,
            )
        )

    def patch_status(self, key: str, merge_patch: Mapping[str, Any]) -> dict[str, Any]:
        return _object(
            self._by_scope(
                key,
                self.api.patch_namespaced_custom_object_status,
                self.api.patch_cluster_custom_object_status,
                dict(merge_patch),
            )
        )

    def create(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        r = self.resource
        if r.namespaced:
            namespace = (obj.get("metadata") or {}).get("namespace")
            if not isinstance(namespace, str):
                # What the client's own argument validation raised here (pydantic's ValidationError is a ValueError).
                raise ValueError(f"{r.kind}: a namespaced object to create needs metadata.namespace")
            return _object(
                self.api.create_namespaced_custom_object(
                    r.group, r.version, namespace, r.plural, dict(obj), _request_timeout=self.timeout
                )
            )
        return _object(
            self.api.create_cluster_custom_object(
                r.group, r.version, r.plural, dict(obj), _request_timeout=self.timeout
            )
        )

    def delete(self, key: str, resource_version: str | None = None) -> None:
        options = (
            client.V1DeleteOptions(preconditions=client.V1Preconditions(resource_version=resource_version))
            if resource_version
            else None
        )
        self._by_scope(
            key, self.api.delete_namespaced_custom_object, self.api.delete_cluster_custom_object, body=options
        )

    def _by_scope(
        self,
        key: str,
        namespaced: Callable[..., object],
        cluster_scoped: Callable[..., object],
        *body: Any,
        **options: Any,
    ) -> object:
        """One call on the object `key` names, with the request timeout: the custom-objects API has a method of each
        scope for every verb, `namespaced` taking the namespace before the plural, `cluster_scoped` none."""
        r, (namespace, name) = self.resource, split_key(key)
        if r.namespaced:
            return namespaced(
                r.group, r.version, namespace, r.plural, name, *body, _request_timeout=self.timeout, **options
            )
        return cluster_scoped(r.group, r.version, r.plural, name, *body, _request_timeout=self.timeout, **options)


def with_identity(obj: Mapping[str, Any], resource: Resource) -> dict[str, Any]:
    """Items of a list may come without kind/apiVersion; the decisions need the kind."""
    return {"apiVersion": resource.api_version, "kind": resource.kind, **obj}
