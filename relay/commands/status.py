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
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from functools import partial
from typing import Any, TextIO

import yaml

from controllers.access.fence_store import FenceStore
from failover.core import binding as b
from failover.core.api import (
    CLUSTER_RESOURCE_BINDINGS,
    CLUSTERS,
    EXECUTION_NAMESPACE_PREFIX,
    RESOURCE_BINDINGS,
    WORKS,
)
from failover.core.cluster import is_ready
from failover.core.names import is_dns_label, object_key
from failover.fence.fence_files import FenceAck, FenceRecord, Heartbeat
from failover.reconcile.brake import Brake, brake
from failover.state.preserved_state import owning_binding
from failover.views.status_view import is_stateful, workload_name, workload_view
from failover.views.storm import workload_phase_rows
from relay.commands.conventions import refuse
from relay.commands.online import BAD_INPUT, Online, OnlineError, Storage, connect, heartbeats, named
from relay.commands.restore_lookup import restore_lookup
from relay.commands.status_tables import render_cluster_table, render_table
from relay.settings import Settings

EXIT_OK = 0


def collect(online: Online, workload: str | None, namespace: str | None, now: datetime) -> list[dict[str, Any]]:
    """The view of every stateful workload (or of the one named), sorted by name."""
    bindings = [binding for binding in online.bindings() if is_stateful(binding)]
    if workload is not None:
        bindings = [binding for binding in bindings if named(binding, workload, namespace)]
        if not bindings:
            where = f" in namespace {namespace}" if namespace else ""
            raise OnlineError(f"no workload {workload}{where} under a stateful failover policy")
    elif namespace:
        bindings = [binding for binding in bindings if b.metadata(binding).get("namespace") == namespace]
    clusters = online.clusters()
    fences = _fence_records(online.storage, clusters)
    relays = heartbeats(online.storage)[0]
    return [_view(online, binding, clusters, now, fences, relays) for binding in sorted(bindings, key=workload_name)]


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


def collect_cluster(online: Online, cluster: str, namespace: str | None) -> tuple[list[dict[str, Any]], Brake]:
    """`--cluster`: every workload `cluster` runs or is being evicted from, and its phase there (one LIST of the
    bindings and one of the Works in the cluster's execution namespace); and the brake over every cluster."""
    if not is_dns_label(cluster):
        raise OnlineError(f"--cluster {cluster!r} is not a cluster name")
    clusters = online.clusters()
    held = brake(clusters, online.settings.controllers.decisions.unhealthy_cluster_threshold)
    if cluster not in clusters:
        raise OnlineError(f"no cluster {cluster} in Karmada (clusters: {', '.join(sorted(clusters)) or 'none'})")
    bindings = [
        binding for binding in online.bindings() if not namespace or b.metadata(binding).get("namespace") == namespace
    ]
    works: dict[tuple[str, str], set[str]] = {}
    for work in online.listed(WORKS, f"{EXECUTION_NAMESPACE_PREFIX}{cluster}"):
        ref = owning_binding(work)[0]
        if ref is not None:
            works.setdefault((ref.kind.kind, object_key(ref.namespace, ref.name)), set()).add(cluster)
    return workload_phase_rows(bindings, works, cluster), held


def run_status(
    settings: Settings,
    workload: str | None,
    namespace: str | None,
    output: str,
    watch: bool,
    interval: float,
    out: TextIO,
    err: TextIO,
    cluster: str | None = None,
) -> int:
    try:
        online = connect(settings, RESOURCE_BINDINGS, CLUSTER_RESOURCE_BINDINGS, CLUSTERS)
        while True:
            now = datetime.now(UTC)
            if cluster is not None:
                rows, held = collect_cluster(online, cluster, namespace)
                brake_line = held.message() if held.engaged else None
                text = (
                    render_cluster_table(cluster, rows, now, brake_line) if output == "table" else render(rows, output)
                )
            else:
                text = render(collect(online, workload, namespace, now), output)
            print(text, file=out, end="" if output == "table" else "\n")
            if not watch:
                return EXIT_OK
            out.flush()
            time.sleep(interval)
            print("---", file=out)
    except BAD_INPUT as error:
        return refuse(error, err)
    except KeyboardInterrupt:
        return EXIT_OK


def render(views: list[dict[str, Any]], output: str) -> str:
    if output == "json":
        return json.dumps(views, indent=2)
    if output == "yaml":
        return yaml.safe_dump(views, sort_keys=False).rstrip("\n")
    return render_table(views)


def _view(
    online: Online,
    binding: Mapping[str, Any],
    clusters: Mapping[str, Any],
    now: datetime,
    fences: Mapping[str, list[tuple[FenceRecord, FenceAck | None]]],
    relays: Mapping[str, Heartbeat] | None,
) -> dict[str, Any]:
    view = partial(
        workload_view,
        binding,
        clusters,
        now,
        decisions=online.settings.controllers.decisions,
        fence_records=fences,
        member_relays=relays,
    )
    lookup = restore_lookup(online, binding)
    if lookup.problem:
        return view(restore_problem=lookup.problem)
    return view(lookup.subject, lookup.result, lookup.storage)
