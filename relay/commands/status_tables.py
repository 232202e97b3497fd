"""The tables of `failover-relay status` for people (`-o table`, the default): the views that
`failover.views.status_view` computes, one block per workload, and with `--cluster` the phases of
`failover.views.storm`, counted and listed. `-o json` and `-o yaml` print the same views whole."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from failover.core.annotations import parse_time
from failover.views.storm import PHASES

NONE = "-"


def render_table(views: Sequence[Mapping[str, Any]]) -> str:
    """The views as a person reads them: one block per workload, aligned columns, newest moves first."""
    if not views:
        return "no workload under a stateful failover policy\n"
    return "\n\n".join("\n".join(_workload_block(view)) for view in views) + "\n"


def _workload_block(view: Mapping[str, Any]) -> list[str]:
    """One workload: where it is placed, its targets, what is in flight, the restore it would get, its history."""
    lines = [
        f"{view['workload']} ({view.get('kind') or '?'})  placed on: "
        f"{', '.join(view['placement']) or 'nothing (being rescheduled)'}"
        f"  toleration: {_or(view.get('tolerationSeconds'))}s  purge: {_or(view.get('purgeMode'))}"
    ]
    lines += _targets(view["targets"])
    lines += _evictions(view["evictions"])
    lines += [_fence_line(fence) for fence in view.get("fences") or ()]
    move = view.get("plannedMove")
    if move:
        lines.append(f"  {planned_move_line(move)}")
    lines += _restore(view["restore"])
    lines += _history(view["history"])
    return lines


def _targets(targets: Sequence[Mapping[str, Any]]) -> list[str]:
    """The table of the clusters the workload is placed on, then what a copy restoring or without state says."""
    rows: list[tuple[str, ...]] = [
        ("TARGET", "CLUSTER", "HEALTH", "JOB", "JOB STATE", "UNHEALTHY SINCE", "EVICTION AT")
    ]
    for target in targets:
        rows.append(
            (
                target["cluster"],
                "Ready" if target["clusterReady"] else "NotReady",
                target["health"],
                _short(target["jobId"]),
                _or(target["jobState"]),
                _or(target["unhealthySince"]),
                _or(_eviction_at(target)),
            )
        )
    lines = _columns(rows)
    for target in targets:
        lines += _target_state(target)
    return lines


def _eviction_at(target: Mapping[str, Any]) -> str:
    """When the target is evicted, with how long until then, or why it is not."""
    eviction = target["evictionAt"]
    if eviction and target["evictionIn"] is not None:
        eviction += f" (in {target['evictionIn']}s)" if target["evictionIn"] > 0 else " (due)"
    if target.get("keptOnLastCluster"):
        return f"{eviction}, kept: no other cluster can take it"
    if target.get("restoringUntil"):
        return f"not before {target['restoringUntil']} (restoring)"
    return eviction


def _target_state(target: Mapping[str, Any]) -> list[str]:
    """A copy still restoring (no checkpoint of its own yet), and a copy parked or started without its state."""
    lines = []
    awaiting = target.get("awaitingCheckpoint")
    if awaiting:
        carried = ", ".join(
            f"{key.rpartition('/')[2]}={_short(value)}" for key, value in sorted(awaiting["carried"].items())
        )
        lines.append(
            f"  restoring: {target['cluster']} has no checkpoint of its own since its move from"
            f" {awaiting['from']} at {_or(awaiting['since'])}; a failover now carries {carried}"
        )
    loss = target.get("withoutState")
    if loss:
        what = "PARKED (not running)" if loss["outcome"] == "parked" else "STARTED WITHOUT STATE"
        lines.append(
            f"  {what}: {target['cluster']} since {loss['since']}, job {loss['jobId']}: {loss['reason']};"
            f" restore by hand or accept: annotate the workload {loss['accept']}"
        )
    return lines


def _evictions(evictions: Sequence[Mapping[str, Any]]) -> list[str]:
    """The table of the eviction tasks in flight, each with the state it preserves."""
    if not evictions:
        return ["  no eviction in flight"]
    rows = [("EVICTION FROM", "REASON", "PURGE", "PRESERVED STATE", "SINCE")]
    for task in evictions:
        state = ", ".join(
            f"{key.rpartition('/')[2]}={_short(value)}" for key, value in sorted((task["preservedState"] or {}).items())
        )
        rows.append(
            (
                task["fromCluster"],
                _or(task["reason"]),
                _or(task["purgeMode"]),
                state or NONE,
                _or(task["created"]),
            )
        )
    return _columns(rows)


def _fence_line(fence: Mapping[str, Any]) -> str:
    """Where the old copy on a cluster that is not Ready stands: fenced, acknowledged, or waiting to be."""
    if fence["state"] == "fenced":
        copies = ", ".join(fence["copies"])
        when = "its agent reconnects (Pull)" if fence.get("pull") else "it answers"
        return f"  fence: {fence['cluster']} fenced; its old copy {copies} is deleted when {when}"
    if fence["state"] == "acknowledged":
        savepoint = f", savepoint {fence['savepoint']}" if fence.get("savepoint") else ""
        return (
            f"  fence: {fence['cluster']} acknowledged at {_or(fence['acknowledgedAt'])}: its member relay"
            f" suspended the old copy{savepoint}; released now"
        )
    asked = (
        f"; fence record written {fence['recordWrittenAt']}, waiting for the member relay's acknowledgement"
        if fence["state"] == "fencing"
        else ""
    )
    unwatched = (
        "; no member relay watches it: fenced by time only, its copy runs on through a partition"
        if fence.get("memberRelay") is False
        else ""
    )
    return (
        f"  fence: {fence['cluster']} not Ready since {_or(fence['since'])}{asked}; the old copy is fenced"
        f" at {_or(fence['fenceAt'])} unless the cluster answers first{unwatched}"
    )


def _restore(restore: Mapping[str, Any]) -> list[str]:
    """The state a new copy would restore now, and where it was found."""
    if not restore.get("path"):
        return [f"  restore now: nothing ({restore.get('reason') or 'no job id known'})"]
    fallback = f", fallback {restore['fallback']}" if restore.get("fallback") else ""
    return [
        f"  restore now: {restore['source']} {restore['path']}",
        f"    job {_short(restore.get('jobId'))} ({restore.get('jobIdFrom')}), storage "
        f"{restore.get('storage') or NONE}{fallback}",
    ]


def _history(history: Sequence[Mapping[str, Any]]) -> list[str]:
    """The table of the failovers recorded, newest first."""
    if not history:
        return ["  no failover recorded"]
    rows = [("HISTORY AT", "MOVE", "FROM", "TO", "JOB", "RESTORED FROM")]
    for move in history:
        rows.append(
            (
                move["at"],
                move["kind"],
                move["from"],
                ",".join(move.get("to") or ()) or NONE,
                _short(move.get("jobId")),
                move.get("restore") or NONE,
            )
        )
    return _columns(rows)


def planned_move_line(move: Mapping[str, Any]) -> str:
    """One line for a planned move: where, its phase, which way and why."""
    target = move["to"] or "the scheduler's choice"
    line = f"planned move ({move['reason']}) {move['from']} -> {target}: {move['phaseText']}"
    if move["phase"] == "stopping":
        return f"{line} since {move['startedAt']}"
    if move.get("handoff") == "savepoint":
        line += f"; by savepoint {move['savepoint']}"
    else:
        line += f"; from the newest completed checkpoint: {move.get('why')}"
    return line + (f"; done at {move['doneAt']}" if move.get("doneAt") else "")


def render_cluster_table(cluster: str, rows: list[dict[str, Any]], now: datetime, brake: str | None = None) -> str:
    """The table of `status --cluster`, with a count per phase first, after the brake's line while it holds."""
    counts = {phase: sum(1 for row in rows if row["phase"] == phase) for phase in PHASES}
    summary = ", ".join(f"{count} {phase}" for phase, count in counts.items() if count) or "no workloads"
    lines = [*([brake] if brake else []), f"cluster {cluster}: {summary}"]
    if rows:
        table = [("WORKLOAD", "PHASE", "REASON", "FOR", "NOW ON")]
        for row in rows:
            since = parse_time(row["since"])
            table.append(
                (
                    row["workload"],
                    row["phase"],
                    row["reason"] or "-",
                    f"{int((now - since).total_seconds())}s" if since else "-",
                    ",".join(name for name in row["targets"] if name != cluster) or "-",
                )
            )
        widths = [max(len(line[index]) for line in table) for index in range(len(table[0]))]
        lines += [
            "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip() for line in table
        ]
    return "\n".join(lines) + "\n"


def _short(job_id: Any) -> str:
    """A job id as a person compares it: its first 8 hex digits (`-o json` has it whole)."""
    return f"{job_id[:8]}…" if isinstance(job_id, str) and len(job_id) > 8 else (job_id or NONE)


def _or(value: Any) -> str:
    return NONE if value is None or value == "" else str(value)


def _columns(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    return [
        "  " + "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
