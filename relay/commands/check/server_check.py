"""`check --server`: each object sent to the apiserver as `kubectl apply --server-side --dry-run=server` sends it.

A server-side apply with `dryRun=All` and `fieldValidation=Strict` goes through everything a real apply goes
through (strict decoding, defaulting, every mutating and validating webhook, the CRD schema) and stores nothing, so
its answer is the most faithful there is. An object without a name (only `generateName`) is a dry-run create.
The relay's own rules then judge the object as the server would store it, so they count even where the relay is
not registered with that server.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from controllers.access.kube import NoClusterConfig, load_api_client
from failover.admission.registry import VALIDATORS
from failover.core.api import group_kind_of
from failover.core.verdict import Findings, Verdict
from relay.kube_requests import raw_request

FIELD_MANAGER = "failover-relay-check"
_WARNING = re.compile(r'^\d{3} \S+ "((?:[^"\\]|\\.)*)"')


class ServerCheckError(Exception):
    """The cluster cannot be used (no cluster config, a discovery it refuses); the message says which and why. A
    server that does not answer at all is `relay.kube_requests.Unreachable`."""


class ServerCheck:
    """Dry-run writes of objects to one apiserver, with the API discovery they need cached."""

    def __init__(self, kubeconfig: Path | None) -> None:
        try:
            self.api = load_api_client(kubeconfig)
        except NoClusterConfig as error:
            raise ServerCheckError(str(error)) from None
        self._resources: dict[str, dict[str, tuple[str, bool]] | None] = {}

    def __call__(self, obj: Mapping[str, Any], namespace: str) -> Verdict | str:
        """The server's verdict, merged with the relay's rules; a string (the reason) for a kind it does not serve."""
        api_version = obj.get("apiVersion")
        api_version = api_version if isinstance(api_version, str) else ""
        kind = obj.get("kind")
        kind = kind if isinstance(kind, str) else ""
        served = self._discover(api_version)
        if served is None or kind not in served:
            return f"{api_version or '?'} {kind or '?'}: the server serves no such kind"
        plural, namespaced = served[kind]
        metadata = obj.get("metadata")
        metadata = metadata if isinstance(metadata, dict) else {}
        object_namespace = metadata.get("namespace") or namespace
        base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        collection = f"{base}/namespaces/{quote(object_namespace)}/{plural}" if namespaced else f"{base}/{plural}"
        name = metadata.get("name")
        body = dict(obj)
        if namespaced and not metadata.get("namespace"):
            body["metadata"] = {**metadata, "namespace": object_namespace}
        query = [("dryRun", "All"), ("fieldManager", FIELD_MANAGER), ("fieldValidation", "Strict")]
        if isinstance(name, str) and name:
            method, path, content_type = "PATCH", f"{collection}/{quote(name)}", "application/apply-patch+yaml"
            query.append(("force", "true"))
        else:
            method, path, content_type = "POST", collection, "application/json"
        payload: Any = json.dumps(body) if method == "PATCH" else body
        status, headers, data = raw_request(self.api, method, path, query, payload, content_type)
        if status >= 300:
            return _denied(status, headers, data)
        stored = json.loads(data or b"{}")
        warnings = tuple(_warnings(headers))
        verdict = Verdict(warnings=warnings)
        validator = VALIDATORS.get(group_kind_of(api_version, kind))
        if validator is not None:
            ours = validator(stored)
            verdict = Verdict(
                denials=ours.denials, warnings=warnings + tuple(w for w in ours.warnings if w not in warnings)
            )
        return verdict

    def _discover(self, api_version: str) -> dict[str, tuple[str, bool]] | None:
        if api_version not in self._resources:
            path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
            status, _, data = raw_request(self.api, "GET", path)
            if status == 404:
                self._resources[api_version] = None
            elif status >= 300:
                raise ServerCheckError(f"discovery of {api_version}: HTTP {status}")
            else:
                self._resources[api_version] = {
                    resource["kind"]: (resource["name"], bool(resource.get("namespaced")))
                    for resource in json.loads(data).get("resources", ())
                    if "/" not in resource["name"]
                }
        return self._resources[api_version]


def _denied(status: int, headers: Any, data: bytes) -> Verdict:
    try:
        message = json.loads(data or b"{}").get("message") or f"HTTP {status}"
    except (ValueError, AttributeError):
        message = f"HTTP {status}"
    findings = Findings()
    findings.deny("(server)", " ".join(str(message).split()))
    for warning in _warnings(headers):
        findings.warn(warning)
    return findings.verdict()


def _warnings(headers: Any) -> list[str]:
    """The texts of the apiserver's `Warning: 299 - "text"` headers."""
    if headers is None:
        return []
    values = headers.getlist("Warning") if hasattr(headers, "getlist") else [headers.get("Warning", "")]
    out = []
    for value in values:
        match = _WARNING.match(value.strip())
        if match:
            out.append(match.group(1).replace('\\"', '"'))
    return out
