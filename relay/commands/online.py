"""What every online command works with, as kubectl's `cmd/util` Factory is what each of its commands is built on:
`status`, `readiness`, `drill`, `drain` and `undrain` run in an `Online` context (`connect`), and
`legacy-purge-modes` takes its client and listings from here too. It holds:

- the Karmada apiserver's client, refused when the server does not serve Karmada's APIs (`require_karmada`): a
  listing of a group that is not served is empty, which pointed at a member cluster would read as an all-clear;
- the checkpoint storage the relay's savepoint settings name, opened for a restore lookup (`Storage`,
  `open_storage`), and the member relays' heartbeats kept there (`heartbeats`);
- the reads of Karmada: every stored object of a kind page by page (`stored_objects`), a listing, one object, the
  Clusters and the bindings (`Online`), which binding a WORKLOAD argument names (`named`);
- the one line a failure is said in before exit 2 (`OnlineError`; `requesting`, a request's failure as that line;
  `BAD_INPUT`, every failure a command says so).

The flags that feed it are conventions.py's (`add_online_flags`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from controllers.access.fence_store import FenceStore
from controllers.access.kube import NoClusterConfig, load_api_client
from failover.core import binding as b
from failover.core.api import CLUSTER_RESOURCE_BINDINGS, CLUSTERS, PROPAGATION_POLICIES, RESOURCE_BINDINGS, Resource
from failover.core.names import object_key
from failover.fence.fence_files import Heartbeat
from failover.state.checkpoints import CheckpointStore, LookupResult
from failover.state.profiles import InjectionProfile
from failover.state.restore import find_restore_point
from failover.state.savepoint import plan_lookup
from relay.connection_errors import connection_problem
from relay.kube_requests import Unreachable, raw_request
from relay.settings import SavepointSettings, Settings, SettingsError, open_injection

# Objects per LIST page: kubectl's default --chunk-size.
PAGE_SIZE = 500
LIST_TIMEOUT_SECONDS = 30
REQUEST_TIMEOUT_SECONDS = 10


class OnlineError(Exception):
    """Bad input or an unreachable server: the one line the command prints before exiting 2."""


class RequestFailed(OnlineError):
    """The server answered a request with an error status (`requesting`): the line says which."""


class NotKarmada(OnlineError):
    """The apiserver does not serve a Karmada API group a command reads: the one line the command prints."""


# What an online command says in one line and exits 2 with: bad input, no kubeconfig, no answer, not Karmada.
BAD_INPUT = (OnlineError, NoClusterConfig, Unreachable)


@dataclass
class Storage:
    """The relay's restore lookup as `serve` configures it: profiles by kind and the allowed roots."""

    profiles: Mapping[Any, InjectionProfile]
    roots: tuple[CheckpointStore, ...]

    def look_up(
        self, profile: InjectionProfile, obj: Mapping[str, Any], namespace: str
    ) -> tuple[LookupResult | None, str]:
        """(the lookup result, the storage root its path lies in) for `obj` as a new copy; (None, why) without
        a query."""
        plan = plan_lookup(profile, obj, "CREATE", None, namespace)
        if plan.result is not None or plan.query is None:
            return plan.result, ""
        result = find_restore_point(self.roots, profile.layouts, profile.savepoint_layouts, plan.query)
        storage = next(
            (root.url_root for root in self.roots if result.path and result.path.startswith(root.url_root)),
            self.roots[0].url_root,
        )
        return result, storage


def open_storage(settings: SavepointSettings) -> Storage | None:
    """None when no checkpoint root is configured (the relay injects nothing then either)."""
    if not settings.checkpoint_root:
        return None
    try:
        profiles, store, allowed_roots = open_injection(settings)
    except SettingsError as error:
        raise OnlineError(str(error)) from None
    return Storage(profiles, (store, *allowed_roots))


def heartbeats(storage: Storage | None) -> tuple[dict[str, Heartbeat] | None, str]:
    """The member relays' heartbeats by cluster (which members a relay watches), and why the storage could not be
    read ("" when it could); None without a checkpoint root or when it cannot be read."""
    if storage is None:
        return None, ""
    try:
        return FenceStore(storage.roots[0]).read_heartbeats(), ""
    except Exception as error:  # noqa: BLE001  reads only: a storage error hides what it would say, and is named
        return None, f"{type(error).__name__}: {error}"


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
                _request_timeout=LIST_TIMEOUT_SECONDS,
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


@contextmanager
def requesting(
    api_client: client.ApiClient, what: str, said: Mapping[int, str] | None = None, *, in_its_words: bool = False
) -> Iterator[None]:
    """Requests whose failure is the command's one line: RequestFailed with `said[status]` for an answer the caller
    names (a 404, a 409), else "cannot {what}: HTTP {status} {reason}" (`in_its_words`: the apiserver's own message
    in place of the reason); OnlineError "cannot reach {server}: {why}" when the server does not answer."""
    try:
        yield
    except ApiException as error:
        if not error.status:  # the client's own wrapping of a TLS failure
            raise OnlineError(f"cannot reach {api_client.configuration.host}: {connection_problem(error)}") from None
        words = status_message(error.body) if in_its_words else error.reason
        raise RequestFailed((said or {}).get(error.status) or f"cannot {what}: HTTP {error.status} {words}") from None
    except (HTTPError, OSError) as error:  # refused, TLS, DNS (urllib3 wraps them)
        raise OnlineError(f"cannot reach {api_client.configuration.host}: {connection_problem(error)}") from None


def status_message(body: bytes | str | None) -> str:
    """The apiserver's own words for a failed request (a Status object's message), else the start of its body."""
    raw = body.encode() if isinstance(body, str) else (body or b"")
    try:
        decoded = json.loads(raw)
    except ValueError:
        decoded = None
    if isinstance(decoded, dict) and isinstance(decoded.get("message"), str):
        return decoded["message"]
    return raw[:200].decode("utf-8", "replace")


@dataclass(frozen=True)
class Online:
    """An online command's context: its settings, the Karmada apiserver's client, the checkpoint storage (None
    without a checkpoint root); and the reads of Karmada every such command makes."""

    settings: Settings
    api_client: client.ApiClient
    storage: Storage | None

    def listed(self, resource: Resource, namespace: str = "") -> list[Mapping[str, Any]]:
        """Every object of `resource` (in `namespace`, when given), each with its apiVersion and kind."""
        with requesting(self.api_client, f"list {resource.plural}"):
            if namespace:
                listing = client.CustomObjectsApi(self.api_client).list_namespaced_custom_object(
                    resource.group,
                    resource.version,
                    namespace,
                    resource.plural,
                    _request_timeout=REQUEST_TIMEOUT_SECONDS,
                )
                items = cast(Mapping[str, Any], listing).get("items") or ()  # the client types it `object`: JSON
            else:
                items = list(stored_objects(self.api_client, resource))
        return [{"apiVersion": resource.api_version, "kind": resource.kind, **item} for item in items]

    def get(
        self, resource: Resource, name: str, namespace: str = "", said: Mapping[int, str] | None = None
    ) -> Mapping[str, Any]:
        """One object of `resource`; a failure said as `requesting` says it (`said`: the lines for the answers the
        caller names)."""
        api, r = client.CustomObjectsApi(self.api_client), resource
        with requesting(self.api_client, f"read {r.kind.lower()} {object_key(namespace, name)}", said):
            if r.namespaced:
                found = api.get_namespaced_custom_object(
                    r.group, r.version, namespace, r.plural, name, _request_timeout=REQUEST_TIMEOUT_SECONDS
                )
            else:
                found = api.get_cluster_custom_object(
                    r.group, r.version, r.plural, name, _request_timeout=REQUEST_TIMEOUT_SECONDS
                )
        return cast(Mapping[str, Any], found)  # the client types a custom object as `object`: it is decoded JSON

    def clusters(self) -> dict[str, Mapping[str, Any]]:
        """Every member cluster Karmada has, by name."""
        return {str(b.metadata(cluster).get("name")): cluster for cluster in self.listed(CLUSTERS)}

    def bindings(self) -> list[Mapping[str, Any]]:
        """Every ResourceBinding, then every ClusterResourceBinding."""
        return [
            binding for resource in (RESOURCE_BINDINGS, CLUSTER_RESOURCE_BINDINGS) for binding in self.listed(resource)
        ]


def connect(settings: Settings, *resources: Resource) -> Online:
    """The context of a command that reads `resources` of Karmada: the storage opened first (a bad root is said
    before any request), then the client of the settings' kubeconfig, on a server that serves them."""
    logging.getLogger("urllib3").setLevel(logging.ERROR)  # its retry warnings; the failure is said in one line
    storage = open_storage(settings.savepoint)
    kubeconfig = settings.controllers.kubeconfig
    api_client = load_api_client(Path(kubeconfig) if kubeconfig else None)
    require_karmada(api_client, *resources)
    return Online(settings, api_client, storage)


def named(binding: Mapping[str, Any], workload: str, namespace: str | None) -> bool:
    """`workload` is NAME, NAMESPACE/NAME or KIND/NAME of the resource template (or the binding's name)."""
    resource = b.spec(binding).get("resource")
    resource = resource if isinstance(resource, dict) else {}
    meta = b.metadata(binding)
    if namespace and (resource.get("namespace") or meta.get("namespace")) != namespace:
        return False
    prefix, _, name = workload.rpartition("/")
    if name not in (resource.get("name"), meta.get("name")):
        return False
    return not prefix or prefix in (
        resource.get("namespace"),
        str(resource.get("kind") or "").lower(),
        resource.get("kind"),
    )
