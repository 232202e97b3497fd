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
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import quote

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from controllers.kube import NoClusterConfig, load_api_client
from failover.rules import VALIDATORS, group_kind_of
from failover.verdict import Findings, Verdict

FIELD_MANAGER = "failover-relay-check"
REQUEST_TIMEOUT_SECONDS = 15
_WARNING = re.compile(r'^\d{3} \S+ "((?:[^"\\]|\\.)*)"')


class ServerCheckError(Exception):
    """The cluster cannot be reached or used; the message says which and why."""


class ServerCheck:
    """Dry-run writes of objects to one apiserver, with the API discovery they need cached."""

    def __init__(self, kubeconfig: Path | None) -> None:
        try:
            self.api = load_api_client(kubeconfig)
        except NoClusterConfig as error:
            raise ServerCheckError(str(error)) from None
        self._resources: dict[str, dict[str, tuple[str, bool]] | None] = {}

    def __call__(self, obj: Mapping[str, Any], namespace: str) -> tuple[str, Verdict | str]:
        """("unknown", reason) for a kind the server does not serve, else ("checked", verdict)."""
        api_version = obj.get("apiVersion") if isinstance(obj.get("apiVersion"), str) else ""
        kind = obj.get("kind") if isinstance(obj.get("kind"), str) else ""
        served = self._discover(api_version)
        if served is None or kind not in served:
            return "unknown", f"{api_version or '?'} {kind or '?'}: the server serves no such kind"
        plural, namespaced = served[kind]
        metadata = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
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
        try:
            response = self.api.call_api(
                path, method, query_params=query, header_params={"Content-Type": content_type,
                                                                 "Accept": "application/json"},
                body=json.dumps(body), auth_settings=["BearerToken"], _preload_content=False,
                _request_timeout=REQUEST_TIMEOUT_SECONDS)
        except ApiException as error:
            if error.status in (0, None):
                raise ServerCheckError(f"{self.api.configuration.host}: {error.reason}") from None
            return "checked", _denied(error)
        except Exception as error:  # connection refused, TLS, DNS: the cluster does not answer
            raise ServerCheckError(f"{self.api.configuration.host} does not answer: "
                                   f"{type(error).__name__}: {' '.join(str(error).split())[:160]}") from None
        raw = response[0] if isinstance(response, tuple) else response
        stored = json.loads(raw.data or b"{}")
        warnings = tuple(_warnings(raw.headers))
        verdict = Verdict(warnings=warnings)
        validator = VALIDATORS.get(group_kind_of(api_version, kind))
        if validator is not None:
            ours = validator(stored)
            verdict = Verdict(denials=ours.denials,
                              warnings=warnings + tuple(w for w in ours.warnings if w not in warnings))
        return "checked", verdict

    def _discover(self, api_version: str) -> dict[str, tuple[str, bool]] | None:
        if api_version not in self._resources:
            path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
            try:
                response = self.api.call_api(path, "GET", header_params={"Accept": "application/json"},
                                             auth_settings=["BearerToken"], _preload_content=False,
                                             _request_timeout=REQUEST_TIMEOUT_SECONDS)
                raw = response[0] if isinstance(response, tuple) else response
                listing = json.loads(raw.data)
                self._resources[api_version] = {
                    resource["kind"]: (resource["name"], bool(resource.get("namespaced")))
                    for resource in listing.get("resources", ()) if "/" not in resource["name"]}
            except ApiException as error:
                if error.status == 404:
                    self._resources[api_version] = None
                else:
                    raise ServerCheckError(f"discovery of {api_version}: HTTP {error.status} {error.reason}") from None
            except Exception as error:
                raise ServerCheckError(f"{self.api.configuration.host} does not answer: "
                                       f"{type(error).__name__}: {' '.join(str(error).split())[:160]}") from None
        return self._resources[api_version]


def _denied(error: ApiException) -> Verdict:
    try:
        status = json.loads(error.body or "{}")
        message = status.get("message") or f"HTTP {error.status} {error.reason}"
    except ValueError:
        message = f"HTTP {error.status} {error.reason}"
    findings = Findings()
    findings.deny("(server)", " ".join(str(message).split()))
    for warning in _warnings(error.headers):
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

