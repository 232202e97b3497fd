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
    blocks = []
    for view in views:
        lines = [
            f"{view['workload']} ({view.get('kind') or '?'})  placed on: "
            f"{', '.join(view['placement']) or 'nothing (being rescheduled)'}"
            f"  toleration: {_or(view.get('tolerationSeconds'))}s  purge: {_or(view.get('purgeMode'))}"
        ]
        rows: list[tuple[str, ...]] = [
            ("TARGET", "CLUSTER", "HEALTH", "JOB", "JOB STATE", "UNHEALTHY SINCE", "EVICTION AT")
        ]
        for target in view["targets"]:
            eviction = target["evictionAt"]
            if eviction and target["evictionIn"] is not None:
                eviction += f" (in {target['evictionIn']}s)" if target["evictionIn"] > 0 else " (due)"
            if target.get("keptOnLastCluster"):
                eviction = f"{eviction}, kept: no other cluster can take it"
            elif target.get("restoringUntil"):
                eviction = f"not before {target['restoringUntil']} (restoring)"
            rows.append(
                (
                    target["cluster"],
                    "Ready" if target["clusterReady"] else "NotReady",
                    target["health"],
                    _short(target["jobId"]),
                    _or(target["jobState"]),
                    _or(target["unhealthySince"]),
                    _or(eviction),
                )
            )
        lines += _columns(rows)
        for target in view["targets"]:
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
        if view["evictions"]:
            rows = [("EVICTION FROM", "REASON", "PURGE", "PRESERVED STATE", "SINCE")]
            for task in view["evictions"]:
                state = ", ".join(
                    f"{key.rpartition('/')[2]}={_short(value)}"
                    for key, value in sorted((task["preservedState"] or {}).items())
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
            lines += _columns(rows)
        else:
            lines.append("  no eviction in flight")
        for fence in view.get("fences") or ():
            if fence["state"] == "fenced":
                copies = ", ".join(fence["copies"])
                when = "its agent reconnects (Pull)" if fence.get("pull") else "it answers"
                lines.append(f"  fence: {fence['cluster']} fenced; its old copy {copies} is deleted when {when}")
            elif fence["state"] == "acknowledged":
                savepoint = f", savepoint {fence['savepoint']}" if fence.get("savepoint") else ""
                lines.append(
                    f"  fence: {fence['cluster']} acknowledged at {_or(fence['acknowledgedAt'])}: its member relay"
                    f" suspended the old copy{savepoint}; released now"
                )
            else:
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
                lines.append(
                    f"  fence: {fence['cluster']} not Ready since {_or(fence['since'])}{asked}; the old copy is fenced"
                    f" at {_or(fence['fenceAt'])} unless the cluster answers first{unwatched}"
                )
        move = view.get("plannedMove")
        if move:
            lines.append(f"  {planned_move_line(move)}")
        restore = view["restore"]
        if restore.get("path"):
            fallback = f", fallback {restore['fallback']}" if restore.get("fallback") else ""
            lines.append(f"  restore now: {restore['source']} {restore['path']}")
            lines.append(
                f"    job {_short(restore.get('jobId'))} ({restore.get('jobIdFrom')}), storage "
                f"{restore.get('storage') or NONE}{fallback}"
            )
        else:
            lines.append(f"  restore now: nothing ({restore.get('reason') or 'no job id known'})")
        if view["history"]:
            rows = [("HISTORY AT", "MOVE", "FROM", "TO", "JOB", "RESTORED FROM")]
            for move in view["history"]:
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
            lines += _columns(rows)
        else:
            lines.append("  no failover recorded")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


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
