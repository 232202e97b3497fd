"""A minimal JSON REST client for one apiserver, for polling without a kubectl process per poll."""

from __future__ import annotations

import json
import re
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

HTTP_TIMEOUT_SECONDS = 10.0


def resource_path(
    api_version: str, plural: str, name: str | None = None, namespace: str | None = None, subresource: str | None = None
) -> str:
    """The REST path of a resource: ``resource_path("work.karmada.io/v1alpha2", "resourcebindings", "x", "ns")``."""
    base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    parts = [base] + ([f"namespaces/{namespace}"] if namespace else []) + [plural] + ([name] if name else [])
    return "/".join(parts) + (f"/{subresource}" if subresource else "")


class ApiError(RuntimeError):
    """An apiserver answered with an unexpected status; carries it and the body."""

    def __init__(self, method: str, path: str, status: int, body: str) -> None:
        super().__init__(f"{method} {path}: {status} {body[:1000]}")
        self.status = status
        self.body = body


class Api:
    """A minimal JSON REST client for one apiserver (urllib, no discovery, no proxy)."""

    def __init__(
        self, server: str, ca_file: Path, *, token: str | None = None, client_cert: tuple[Path, Path] | None = None
    ) -> None:
        self.server = server
        context = ssl.create_default_context(cafile=str(ca_file))
        if client_cert:
            context.load_cert_chain(str(client_cert[0]), str(client_cert[1]))
        self._opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=context)
        )
        self._headers = {"Accept": "application/json"} | ({"Authorization": f"Bearer {token}"} if token else {})

    def request(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        headers = dict(self._headers) | ({"Content-Type": content_type} if data is not None else {})
        request = urllib.request.Request(self.server + path, data=data, method=method, headers=headers)
        try:
            with self._opener.open(request, timeout=HTTP_TIMEOUT_SECONDS) as response:
                raw = response.read()
                return response.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as error:
            raw = error.read()
            try:
                return error.code, json.loads(raw)
            except ValueError:
                return error.code, raw.decode(errors="replace")

    def dry_run_create(self, path: str, obj: Mapping[str, Any]) -> tuple[int, Any, list[str]]:
        """A server-side dry-run create, strict about unknown fields as kubectl is (`kubectl create
        --dry-run=server`): the status, the answer (the object as it would be stored, or the Status that refused it)
        and the admission warnings, in order."""
        request = urllib.request.Request(
            self.server + path + "?dryRun=All&fieldValidation=Strict",
            data=json.dumps(obj).encode(),
            method="POST",
            headers=dict(self._headers) | {"Content-Type": "application/json"},
        )
        try:
            with self._opener.open(request, timeout=HTTP_TIMEOUT_SECONDS) as response:
                return response.status, json.loads(response.read()), _warnings(response.headers)
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read()), _warnings(error.headers)

    def _checked(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        ok: Iterable[int] = (200, 201),
    ) -> Any:
        status, answer = self.request(method, path, body, content_type)
        if status not in ok:
            raise ApiError(method, path, status, json.dumps(answer) if not isinstance(answer, str) else answer)
        return answer

    def get(self, path: str) -> dict[str, Any] | None:
        """The object, or None when it does not exist (404)."""
        status, answer = self.request("GET", path)
        if status == 404:
            return None
        if status != 200:
            raise ApiError("GET", path, status, str(answer))
        return answer

    def list(self, path: str) -> list[dict[str, Any]]:
        return list(self._checked("GET", path).get("items") or [])

    def create(self, path: str, obj: Mapping[str, Any]) -> dict[str, Any]:
        return self._checked("POST", path, obj)

    def patch(self, path: str, patch: Any, patch_type: str = "merge") -> dict[str, Any]:
        return self._checked("PATCH", path, patch, f"application/{patch_type}-patch+json")

    def delete(self, path: str) -> None:
        """Delete (background propagation); a missing object is fine."""
        self._checked(
            "DELETE",
            path,
            {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"},
            ok=(200, 202, 404),
        )


def _warnings(headers: Any) -> list[str]:
    """The texts of `Warning: 299 - "text"` headers (RFC 7234: a quoted string with backslash escapes)."""
    texts = []
    for value in headers.get_all("Warning") or ():
        _, _, quoted = value.partition(" - ")
        # http.client decodes header bytes as Latin-1; the apiserver wrote UTF-8.
        text = quoted.strip().encode("latin-1").decode("utf-8", "replace")
        if text.startswith('"') and text.endswith('"'):
            text = re.sub(r"\\(.)", r"\1", text[1:-1])
        texts.append(text)
    return texts
