"""Objects on member clusters, reached through Karmada's cluster proxy.

karmada-aggregated-apiserver serves `<the Cluster's path>/proxy/<member API path>`, the Cluster's path being
`CLUSTERS.path(name)` of the catalogue (`pkg/registry/cluster/storage/proxy.go`): the request is authorized on the
Karmada apiserver (`clusters/proxy`) and replayed on the member with the caller impersonated, so the relay needs no
member credentials of its own, but its identity needs RBAC for the kinds it deletes in each member
(docs/operations.md "Fencing").
"""

from __future__ import annotations

import copy
import threading
import time
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from controllers.access.kube import DEFAULT_REQUEST_TIMEOUT_SECONDS, api_client_of
from failover.core.api import CLUSTERS
from failover.core.work import MemberCopy

# A member that is not Ready is asked `/version` (every authenticated user may read it) before anything else, with
# a short deadline, and the answer is remembered, so a dead cluster costs one short request per interval however
# many old copies wait on it.
PROBE_TIMEOUT_SECONDS = 3.0


class MemberProxy:
    """GET and DELETE of one object on a member cluster; a kind's plural is found by discovery once per version."""

    def __init__(self, api_client: client.ApiClient, timeout: float = DEFAULT_REQUEST_TIMEOUT_SECONDS) -> None:
        self.api_client = api_client
        self.timeout = timeout
        # The probe's own client, without urllib3's 3 retries of a read that timed out: with them a member that does not
        # answer costs 4 x PROBE_TIMEOUT_SECONDS (12 s), and holds the reconcile of every binding waiting on it.
        probe_configuration = copy.deepcopy(api_client.configuration)
        probe_configuration.retries = False
        self.probe_client = api_client_of(probe_configuration)
        self._plurals: dict[tuple[str, str, str], str] = {}
        self._answers: dict[str, tuple[float, bool]] = {}
        self._lock = threading.Lock()
        self._probing: dict[str, threading.Lock] = {}

    def answers(self, cluster: str, remember_seconds: float) -> bool:
        """Whether the member's apiserver answers through the proxy; remembered for `remember_seconds`. One probe
        per cluster at a time: the workers that find the answer expired together wait for it, so a storm of bindings
        waiting on one member costs one probe per interval, not one per binding."""
        known = self._known(cluster, remember_seconds)
        if known is not None:
            return known
        with self._lock:
            probing = self._probing.setdefault(cluster, threading.Lock())
        with probing:
            known = self._known(cluster, remember_seconds)
            if known is not None:
                return known
            try:
                self._call(
                    "GET",
                    f"{CLUSTERS.path(cluster)}/proxy/version",
                    timeout=PROBE_TIMEOUT_SECONDS,
                    via=self.probe_client,
                )
                answered = True
            except (ApiException, HTTPError, OSError):  # refused, timed out, 503 from the aggregated apiserver
                answered = False
            with self._lock:
                self._answers[cluster] = (time.monotonic(), answered)
            return answered

    def _known(self, cluster: str, remember_seconds: float) -> bool | None:
        with self._lock:
            known = self._answers.get(cluster)
        return known[1] if known is not None and time.monotonic() - known[0] < remember_seconds else None

    def get(self, copy: MemberCopy) -> dict[str, Any]:
        return self._call("GET", self._path(copy))

    def delete(self, copy: MemberCopy, uid: str) -> None:
        """Delete with the uid as precondition: an object created since under the same name is never touched."""
        body = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "preconditions": {"uid": uid},
            "propagationPolicy": "Background",
        }
        self._call("DELETE", self._path(copy), body)

    def _path(self, copy: MemberCopy) -> str:
        base = f"{CLUSTERS.path(copy.cluster)}/proxy{_group_path(copy.api_version)}"
        plural = self._plural(copy, base)
        scope = f"/namespaces/{copy.namespace}" if copy.namespace else ""
        return f"{base}{scope}/{plural}/{copy.name}"

    def _plural(self, copy: MemberCopy, base: str) -> str:
        key = (copy.cluster, copy.api_version, copy.kind)
        with self._lock:
            if key in self._plurals:
                return self._plurals[key]
        listing = self._call("GET", base)
        for resource in listing.get("resources") or ():
            if resource.get("kind") == copy.kind and "/" not in str(resource.get("name")):
                with self._lock:
                    self._plurals[key] = str(resource["name"])
                return str(resource["name"])
        raise LookupError(f"{copy.api_version} {copy.kind} is not served by cluster {copy.cluster}")

    def _call(
        self,
        method: str,
        path: str,
        body: Any = None,
        timeout: float | None = None,
        via: client.ApiClient | None = None,
    ) -> Any:
        """One request with the client's credentials; an ApiException for any status outside 2xx."""
        api_client = via or self.api_client
        headers = {"Accept": "application/json", **({"Content-Type": "application/json"} if body is not None else {})}
        request = api_client.param_serialize(
            method=method, resource_path=path, header_params=headers, body=body, auth_settings=["BearerToken"]
        )
        response = api_client.call_api(*request, _request_timeout=timeout or self.timeout)
        response.read()
        return api_client.response_deserialize(response, {"2XX": "object", "default": "object"}).data


def _group_path(api_version: str) -> str:
    return f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
