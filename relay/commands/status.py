"""`failover-relay status [WORKLOAD]`: where each workload under a stateful failover policy stands in its failover
lifecycle; with `--cluster NAME`, every workload of one member cluster and its phase in a move away from it
(`failover.views.storm`). Reads the Karmada apiserver (bindings, Clusters, the resource template, Works) and the
checkpoint storage with the relay's own settings; changes nothing. The view is computed by
`failover.views.status_view`; this module fetches it and prints it (as a table: status_tables.py). Exit 0, or 2
with one line for bad input (unknown workload, unreachable server, a server that does not serve Karmada's APIs, bad
kubeconfig or config).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, TextIO, cast

import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from controllers.access.fence_store import FenceStore
from controllers.access.kube import NoClusterConfig, load_api_client
from failover.admission.registry import group_kind_of
from failover.core import binding as b
from failover.core.api import (
    CLUSTER_RESOURCE_BINDINGS,
    CLUSTERS,
    EXECUTION_NAMESPACE_PREFIX,
    FLINK_RESOURCES,
    RESOURCE_BINDINGS,
    WORKS,
    Resource,
)
from failover.core.cluster import is_ready
from failover.core.loop_settings import DecisionSettings
from failover.core.names import is_dns_label, object_key
from failover.fence.fence_files import FenceAck, FenceRecord, Heartbeat
from failover.reconcile.brake import Brake, brake
from failover.state.checkpoints import CheckpointStore, LookupResult
from failover.state.preserved_state import owning_binding
from failover.state.profiles import InjectionProfile
from failover.state.restore import find_restore_point
from failover.state.savepoint import plan_lookup
from failover.views.status_view import RestoreSubject, is_stateful, restore_subject, workload_name, workload_view
from failover.views.storm import workload_phase_rows
from relay.commands.karmada_reads import NotKarmada, require_karmada, stored_objects
from relay.commands.status_tables import render_cluster_table, render_table
from relay.connection_errors import connection_problem
from relay.kube_requests import Unreachable
from relay.settings import SavepointSettings, SettingsError, open_injection

EXIT_OK, EXIT_BAD_INPUT = 0, 2
REQUEST_TIMEOUT_SECONDS = 10
TEMPLATES = {resource.group_kind: resource for resource in FLINK_RESOURCES}


class StatusError(Exception):
    """Bad input or an unreachable server: the one line the command prints before exiting 2."""


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
        raise StatusError(str(error)) from None
    return Storage(profiles, (store, *allowed_roots))


def collect(
    api_client: client.ApiClient,
    storage: Storage | None,
    settings: SavepointSettings,
    workload: str | None,
    namespace: str | None,
    now: datetime,
    decisions: DecisionSettings | None = None,
) -> list[dict[str, Any]]:
    """The view of every stateful workload (or of the one named), sorted by name."""
    bindings = [
        binding
        for resource in (RESOURCE_BINDINGS, CLUSTER_RESOURCE_BINDINGS)
        for binding in listed(api_client, resource)
        if is_stateful(binding)
    ]
    if workload is not None:
        bindings = [binding for binding in bindings if named(binding, workload, namespace)]
        if not bindings:
            where = f" in namespace {namespace}" if namespace else ""
            raise StatusError(f"no workload {workload}{where} under a stateful failover policy")
    elif namespace:
        bindings = [binding for binding in bindings if b.metadata(binding).get("namespace") == namespace]
    clusters = {str(b.metadata(cluster).get("name")): cluster for cluster in listed(api_client, CLUSTERS)}
    fences = _fence_records(storage, clusters)
    relays = member_relays(storage)
    views = []
    for binding in sorted(bindings, key=workload_name):
        views.append(_view(api_client, binding, clusters, storage, settings, now, decisions, fences, relays))
    return views


def _fence_records(
    storage: Storage | None, clusters: Mapping[str, Any]
) -> dict[str, list[tuple[FenceRecord, FenceAck | None]]]:
    """The storage fence's records and acknowledgements of each cluster that is not Ready (docs/design.md, "The
    storage fence"); none without a checkpoint root, and none of a cluster whose records cannot be read."""
    if storage is None:
        return {}
    fences = FenceStore(storage.roots[0])
    found: dict[str, list[tuple[FenceRecord, FenceAck | None]]] = {}
    for name, cluster in clusters.items():
        if is_ready(cluster):
            continue
        try:
            held = fences.read(name)
        except Exception:  # noqa: BLE001  status reads only: a storage error hides the fence state, nothing else
            continue
        found[name] = [(record, held.acks.get(fence_id)) for fence_id, record in sorted(held.records.items())]
    return found


def member_relays(storage: Storage | None) -> dict[str, Heartbeat] | None:
    """The member relays' heartbeats, by cluster: which members a relay watches; None without a checkpoint root or
    when the storage cannot be read (nothing is said then)."""
    if storage is None:
        return None
    try:
        return FenceStore(storage.roots[0]).read_heartbeats()
    except Exception:  # noqa: BLE001  status reads only: a storage error hides what it would say, nothing else
        return None


def collect_cluster(
    api_client: client.ApiClient, cluster: str, namespace: str | None, decisions: DecisionSettings | None = None
) -> tuple[list[dict[str, Any]], Brake]:
    """`--cluster`: every workload `cluster` runs or is being evicted from, and its phase there (one LIST of the
    bindings and one of the Works in the cluster's execution namespace); and the brake over every cluster."""
    if not is_dns_label(cluster):
        raise StatusError(f"--cluster {cluster!r} is not a cluster name")
    clusters = {str(b.metadata(found).get("name")): found for found in listed(api_client, CLUSTERS)}
    held = brake(clusters, (decisions or DecisionSettings()).unhealthy_cluster_threshold)
    if cluster not in clusters:
        raise StatusError(f"no cluster {cluster} in Karmada (clusters: {', '.join(sorted(clusters)) or 'none'})")
    bindings = [
        {"apiVersion": resource.api_version, "kind": resource.kind, **binding}
        for resource in (RESOURCE_BINDINGS, CLUSTER_RESOURCE_BINDINGS)
        for binding in listed(api_client, resource)
        if not namespace or b.metadata(binding).get("namespace") == namespace
    ]
    works: dict[tuple[str, str], set[str]] = {}
    for work in listed(api_client, WORKS, f"{EXECUTION_NAMESPACE_PREFIX}{cluster}"):
        ref = owning_binding(work)[0]
        if ref is not None:
            works.setdefault((ref.kind.kind, object_key(ref.namespace, ref.name)), set()).add(cluster)
    return workload_phase_rows(bindings, works, cluster), held


def run_status(
    kubeconfig: Path | None,
    settings: SavepointSettings,
    workload: str | None,
    namespace: str | None,
    output: str,
    watch: bool,
    interval: float,
    out: TextIO,
    err: TextIO,
    decisions: DecisionSettings | None = None,
    cluster: str | None = None,
) -> int:
    logging.getLogger("urllib3").setLevel(logging.ERROR)  # its retry warnings; the failure is said in one line
    try:
        storage = open_storage(settings)
        api_client = load_api_client(kubeconfig)
        require_karmada(api_client, RESOURCE_BINDINGS, CLUSTER_RESOURCE_BINDINGS, CLUSTERS)
    except (StatusError, NoClusterConfig, NotKarmada, Unreachable) as error:
        print(f"failover-relay: {error}", file=err)
        return EXIT_BAD_INPUT
    try:
        while True:
            now = datetime.now(UTC)
            if cluster is not None:
                rows, held = collect_cluster(api_client, cluster, namespace, decisions)
                brake_line = held.message() if held.engaged else None
                text = (
                    render_cluster_table(cluster, rows, now, brake_line) if output == "table" else render(rows, output)
                )
            else:
                text = render(collect(api_client, storage, settings, workload, namespace, now, decisions), output)
            print(text, file=out, end="" if output == "table" else "\n")
            if not watch:
                return EXIT_OK
            out.flush()
            time.sleep(interval)
            print("---", file=out)
    except StatusError as error:
        print(f"failover-relay: {error}", file=err)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return EXIT_OK


def render(views: list[dict[str, Any]], output: str) -> str:
    if output == "json":
        return json.dumps(views, indent=2)
    if output == "yaml":
        return yaml.safe_dump(views, sort_keys=False).rstrip("\n")
    return render_table(views)


def _view(
    api_client: client.ApiClient,
    binding: Mapping[str, Any],
    clusters: Mapping[str, Any],
    storage: Storage | None,
    settings: SavepointSettings,
    now: datetime,
    decisions: DecisionSettings | None = None,
    fences: Mapping[str, list[tuple[FenceRecord, FenceAck | None]]] | None = None,
    relays: Mapping[str, Heartbeat] | None = None,
) -> dict[str, Any]:
    view = partial(
        workload_view, binding, clusters, now, decisions=decisions, fence_records=fences, member_relays=relays
    )
    lookup = restore_lookup(api_client, storage, binding)
    if lookup.problem:
        return view(restore_problem=lookup.problem)
    return view(lookup.subject, lookup.result, lookup.storage)


@dataclass(frozen=True)
class RestoreLookup:
    """The restore lookup a new copy of a binding's workload would get now: the template it was made from, the copy
    as the relay would see it, the result and the storage root it lies in; or `problem`, why none was made."""

    template: Mapping[str, Any] | None = None
    subject: RestoreSubject | None = None
    result: LookupResult | None = None
    storage: str = ""
    problem: str = ""


def restore_lookup(api_client: client.ApiClient, storage: Storage | None, binding: Mapping[str, Any]) -> RestoreLookup:
    if storage is None:
        return RestoreLookup(problem="no checkpoint root configured (--checkpoint-root or savepoint in --config)")
    resource = b.spec(binding).get("resource")
    resource = resource if isinstance(resource, dict) else {}
    group_kind = group_kind_of(str(resource.get("apiVersion") or ""), str(resource.get("kind") or ""))
    profile, template_resource = storage.profiles.get(group_kind), TEMPLATES.get(group_kind)
    if profile is None or template_resource is None:
        return RestoreLookup(problem=f"no injection profile for {group_kind}")
    template = _get(api_client, template_resource, str(resource.get("namespace") or ""), str(resource.get("name")))
    subject = restore_subject(binding, template, profile.label)
    if subject is None:
        return RestoreLookup(template, problem="no job id known: the workload has not reported one")
    result, root = storage.look_up(profile, subject.obj, str(resource.get("namespace") or ""))
    return RestoreLookup(template, subject, result, root)


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


def listed(api_client: client.ApiClient, resource: Resource, namespace: str = "") -> Iterable[Mapping[str, Any]]:
    try:
        if namespace:
            api = client.CustomObjectsApi(api_client)
            listing = api.list_namespaced_custom_object(
                resource.group, resource.version, namespace, resource.plural, _request_timeout=REQUEST_TIMEOUT_SECONDS
            )
            items = cast(Mapping[str, Any], listing).get("items") or ()  # the client types it `object`: decoded JSON
            return [{"apiVersion": resource.api_version, "kind": resource.kind, **item} for item in items]
        return list(stored_objects(api_client, resource))
    except ApiException as error:
        if not error.status:  # the client's own wrapping of a TLS failure
            raise StatusError(f"cannot reach {api_client.configuration.host}: {connection_problem(error)}") from None
        raise StatusError(f"cannot list {resource.plural}: HTTP {error.status} {error.reason}") from None
    except (HTTPError, OSError) as error:
        raise StatusError(f"cannot reach {api_client.configuration.host}: {connection_problem(error)}") from None


def _get(api_client: client.ApiClient, resource: Resource, namespace: str, name: str) -> Mapping[str, Any] | None:
    api = client.CustomObjectsApi(api_client)
    try:
        found = api.get_namespaced_custom_object(
            resource.group, resource.version, namespace, resource.plural, name, _request_timeout=REQUEST_TIMEOUT_SECONDS
        )
        return cast(Mapping[str, Any], found)  # the client types a custom object as `object`: it is decoded JSON
    except ApiException:
        return None  # a template being deleted: shown without a restore
    except (HTTPError, OSError) as error:
        raise StatusError(f"cannot reach {api_client.configuration.host}: {connection_problem(error)}") from None
