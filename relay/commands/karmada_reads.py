"""What the read-only commands (`status`, `legacy-purge-modes`) need of a Karmada apiserver: that it serves Karmada's
APIs at all (`require_karmada`), and every stored object of a kind, page by page (`stored_objects`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, cast

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from failover.core.api import PROPAGATION_POLICIES, Resource
from relay.kube_requests import raw_request

# Objects per LIST page: kubectl's default --chunk-size.
PAGE_SIZE = 500
REQUEST_TIMEOUT_SECONDS = 30


class NotKarmada(Exception):
    """The apiserver does not serve a Karmada API group a command reads: the one line the command prints."""


def require_karmada(api_client: client.ApiClient, *resources: Resource) -> None:
    """Raise NotKarmada unless discovery serves policy.karmada.io/v1alpha1 and the group version of each of
    `resources`. A listing of a group that is not served is empty (`stored_objects` takes a 404 for "nothing
    stored"), which pointed at a member cluster would read as an all-clear. Only a 404 is taken for "not served":
    any other answer is left to the listing to report. Unreachable when the server does not answer."""
    wanted = dict.fromkeys(f"{r.group}/{r.version}" for r in (PROPAGATION_POLICIES, *resources))
    for group_version in wanted:
        status, _, _ = raw_request(api_client, "GET", f"/apis/{group_version}")
        if status == 404:
            raise NotKarmada(
                f"{api_client.configuration.host} does not serve Karmada's APIs ({group_version} not found): "
                "point --kubeconfig at the karmada-apiserver"
            )


def stored_objects(api_client: client.ApiClient, resource: Resource) -> Iterator[Mapping[str, Any]]:
    """Every stored object of `resource`, across namespaces, page by page."""
    api = client.CustomObjectsApi(api_client)
    token: str | None = None
    while True:
        try:
            page = api.list_cluster_custom_object(
                resource.group,
                resource.version,
                resource.plural,
                limit=PAGE_SIZE,
                _continue=token,
                _request_timeout=REQUEST_TIMEOUT_SECONDS,
            )
        except ApiException as error:
            if error.status == 404:  # this kind is not installed: nothing of it is stored
                return
            raise
        listed = cast(Mapping[str, Any], page)  # the client types it `object`: a JSON list object, decoded
        yield from listed.get("items") or ()
        token = (listed.get("metadata") or {}).get("continue")
        if not token:
            return
