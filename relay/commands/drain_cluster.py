"""`failover-relay drain CLUSTER` and `undrain CLUSTER`: put on (or take off) the Cluster taint the relay's loop drains
a cluster by (failover/moves/cluster_drain.py), and follow the moves it makes until none of the cluster's stateful
workloads is left there. The command writes only the taint, on the resourceVersion it read: the leader does every move,
so a relay restarted mid-drain goes on, and the command can be stopped and run again at any time. `--dry-run` lists
what would move and how, and changes nothing. Exit 0 when drained (or undrained), 1 when `--timeout` ran out first,
2 with one line for bad input.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, TextIO

from kubernetes import client

from controllers.access.binding_writes import write_on_version_now
from failover.core import binding as b
from failover.core import work as w
from failover.core.annotations import parse_time
from failover.core.api import CLUSTER_RESOURCE_BINDINGS, CLUSTERS, RESOURCE_BINDINGS, WORKS
from failover.core.names import is_dns_label
from failover.fence.control_plane import watched_by_relay
from failover.moves.cluster_drain import (
    CHECKPOINT,
    IN_FLIGHT,
    STAYS,
    DrainItem,
    drain_plan,
    drain_taint,
    drained_since,
    is_drained,
    without_drain_taint,
)
from failover.moves.handoff import handoff_view
from failover.state.preserved_state import owning_binding
from relay.commands.conventions import refuse
from relay.commands.online import (
    BAD_INPUT,
    Online,
    OnlineError,
    connect,
    heartbeats,
    requesting,
)
from relay.settings import Settings

EXIT_OK, EXIT_TIMED_OUT = 0, 1


def run_drain(
    settings: Settings,
    cluster: str,
    undo: bool,
    dry_run: bool,
    wait: bool,
    timeout: float,
    interval: float,
    out: TextIO,
    err: TextIO,
) -> int:
    try:
        if not is_dns_label(cluster):
            raise OnlineError(f"cluster name {cluster!r} is not a DNS label")
        online = connect(settings, RESOURCE_BINDINGS, CLUSTER_RESOURCE_BINDINGS, CLUSTERS, WORKS)
        target = _cluster(online, cluster)
        if dry_run:
            _print_plan(online, cluster, undo, out)
            return EXIT_OK
        _taint(online.api_client, target, undo, out)
        if undo or not wait:
            return EXIT_OK
        since = drained_since(_cluster(online, cluster))
        return _follow(online, cluster, since, timeout, interval, out)
    except BAD_INPUT as error:
        return refuse(error, err)
    except KeyboardInterrupt:
        return EXIT_OK


def _taint(api_client: client.ApiClient, cluster: Mapping[str, Any], undo: bool, out: TextIO) -> None:
    name = str(b.metadata(cluster)["name"])
    if undo:
        if not is_drained(cluster):
            print(f"cluster {name} is not drained", file=out)
            return
        taints = without_drain_taint(cluster)
    else:
        if is_drained(cluster):
            print(f"cluster {name} is drained already; following its moves", file=out)
            return
        taints = [*(dict(t) for t in (b.spec(cluster).get("taints") or [])), drain_taint(datetime.now(UTC))]
    changed = f"cluster {name} changed while the taint was written: run the command again"
    with requesting(api_client, f"patch cluster {name}", {409: changed}):
        write_on_version_now(api_client, CLUSTERS, name, {"spec": {"taints": taints}}, b.resource_version(cluster))
    if undo:
        print(
            f"cluster {name} undrained: Karmada may place workloads there again; those whose policy opts in to"
            " failback move back after failbackSettleSeconds, by savepoint handoff",
            file=out,
        )
    else:
        print(
            f"cluster {name} drained (taint failover-relay.io/drain:NoSchedule); the relay moves its workloads",
            file=out,
        )


def _print_plan(online: Online, cluster: str, undo: bool, out: TextIO) -> None:
    if undo:
        print(f"would take the drain taint off cluster {cluster}; nothing else changes", file=out)
        return
    items = _plan(online, cluster)
    print(f"would drain cluster {cluster}: {len(items)} stateful workload(s) there", file=out)
    for item in items:
        why = f": {item.why}" if item.why else ""
        if item.how == CHECKPOINT and online.storage is None:
            why = ": unless a member relay watches it (give --checkpoint-root or --config to tell)"
        print(f"  {item.name}: {item.how}{why}", file=out)


def _follow(online: Online, cluster: str, since: datetime | None, timeout: float, interval: float, out: TextIO) -> int:
    """Print each workload's move as it changes, until no stateful workload of the cluster is left there. Moves
    begun before the drain (`since`, the taint's timeAdded) are an earlier drain's, and not this one's."""
    deadline = time.monotonic() + timeout
    said: dict[str, str] = {}
    watched_moves: set[str] = set()
    while True:
        bindings = online.bindings()
        items = drain_plan(cluster, bindings, lambda _: (), frozenset(), datetime.now(UTC))
        for item in items:
            watched_moves.add(item.name)
        lines = {}
        for binding in bindings:
            name = DrainItem(binding, "").name
            view = handoff_view(binding)
            if name in watched_moves and view is not None and view["from"] == cluster and _since(view, since):
                lines[name] = _progress(view)
        for item in items:
            if item.how == STAYS:
                lines[item.name] = f"stays: {item.why}"
            elif item.name not in lines:
                lines[item.name] = "waiting for its turn" if item.how != IN_FLIGHT else "moving"
        for name, line in sorted(lines.items()):
            if said.get(name) != line:
                print(f"  {name}: {line}", file=out, flush=True)
                said[name] = line
        moving = [item for item in items if item.how != STAYS]
        if not moving and not any(line.startswith(IN_PROGRESS) for line in lines.values()):
            stays = sum(1 for item in items if item.how == STAYS)
            print(f"cluster {cluster} drained: {len(watched_moves) - stays} moved, {stays} stay", file=out)
            return EXIT_OK
        if time.monotonic() > deadline:
            print(
                f"cluster {cluster}: still moving after {timeout:.0f} s: {', '.join(i.name for i in moving)}", file=out
            )
            return EXIT_TIMED_OUT
        time.sleep(interval)


# The taint's time is this machine's clock, a move's the relay's: a minute of skew between them is allowed for.
CLOCK_SKEW = timedelta(minutes=1)


def _since(view: Mapping[str, Any], since: datetime | None) -> bool:
    started = parse_time(view.get("startedAt"))
    return since is None or (started is not None and started >= since - CLOCK_SKEW)


# The progress lines of a move not over yet (`_progress`).
IN_PROGRESS = ("stopping", "savepoint taken", "new copy")


def _progress(view: Mapping[str, Any]) -> str:
    """One workload's move as the drain follows it: its phase, then which way it went."""
    if view["phase"] == "stopping":
        return "stopping with savepoint"
    if view.get("handoff") == "savepoint":
        how = f"by savepoint {view['savepoint']}"
    else:
        how = f"from the newest checkpoint ({view.get('why')})"
    return f"{'moved' if view['phase'] == 'done' else view['phaseText']}, {how}"


def _plan(online: Online, cluster: str) -> list[DrainItem]:
    now = datetime.now(UTC)
    beats = heartbeats(online.storage)[0]  # None: no storage given, or it cannot be read ("unknown")
    watched = None if beats is None else watched_by_relay([cluster], beats, now)
    by_binding: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    for work in online.listed(WORKS, w.execution_namespace(cluster)):
        ref = owning_binding(work)[0]
        if ref is not None:
            by_binding.setdefault((ref.kind.kind, ref.namespace, ref.name), []).append(work)

    def works_of(binding: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        ref = b.object_ref(binding)
        return by_binding.get((ref.kind, ref.namespace, ref.name), [])

    return drain_plan(cluster, online.bindings(), works_of, watched, now)


def _cluster(online: Online, name: str) -> Mapping[str, Any]:
    return online.get(CLUSTERS, name, said={404: f"no cluster {name} in Karmada"})
