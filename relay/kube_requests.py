"""One request to a Kubernetes apiserver with a client's credentials, for what the typed client does not do: a
server-side apply dry run (`check --server`), discovery of a group version, a CustomResourceDefinition read as the
JSON it is (the loop's purge-mode spelling). Any HTTP status is an answer, returned as such; a server that does not
answer at all is `Unreachable`, with one readable line (relay/connection_errors.py)."""

from __future__ import annotations

from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from relay.connection_errors import connection_problem

# Each request is one small read or one object's dry run, answered in milliseconds; 15 s leaves a loaded apiserver
# (or its webhooks, on a dry run) room, and a command that cannot reach it fails within that.
REQUEST_TIMEOUT_SECONDS = 15


class Unreachable(Exception):
    """The apiserver did not answer (refused, TLS, DNS, a timeout); the message names it and why."""


def raw_request(
    api: client.ApiClient,
    method: str,
    path: str,
    query: list[tuple[str, str]] | None = None,
    body: Any = None,
    content_type: str | None = None,
) -> tuple[int, Any, bytes]:
    """(status, headers, body) of one request with the client's credentials; Unreachable when the server does not
    answer at all. A 4xx/5xx is an answer, returned as such."""
    headers = {"Accept": "application/json"}
    if content_type:
        headers["Content-Type"] = content_type
    try:
        params = api.param_serialize(
            method, path, query_params=query or [], header_params=headers, body=body, auth_settings=["BearerToken"]
        )
        response = api.call_api(*params, _request_timeout=REQUEST_TIMEOUT_SECONDS)
        return response.status, response.headers, response.read() or b""
    except ApiException as error:
        if not error.status:
            raise Unreachable(f"cannot reach {api.configuration.host}: {connection_problem(error)}") from None
        body_bytes = error.body.encode() if isinstance(error.body, str) else (error.body or b"")
        return error.status, error.headers, body_bytes
    except (HTTPError, OSError) as error:  # connection refused, TLS, DNS (urllib3 wraps them): no answer at all
        raise Unreachable(f"cannot reach {api.configuration.host}: {connection_problem(error)}") from None
