"""A planned move's eviction said where operators look: the counter by cluster, reason and way, and the
`planned_move_evicted` line (docs/design.md, "Planned moves"). The binding pipeline's `handoff` step and the Cluster
controller's passes both report through it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import structlog

from controllers.loop.loop_metrics import LoopMetrics
from failover.moves.handoff import Handoff

log = structlog.get_logger("failover_relay.planned_moves")


def report_move(metrics: LoopMetrics, move: Handoff) -> None:
    """Count `move`, whose eviction was just written, and log it with how long its old copy took to stop."""
    metrics.planned_moves.labels(move.source, move.reason, move.way).inc()
    fields: dict[str, Any] = {"target_cluster": move.target} if move.target else {}
    log.info(
        "planned_move_evicted",
        member_cluster=move.source,
        reason=move.reason,
        handoff=move.way,
        why=move.why,
        savepoint=move.savepoint,
        stopping_seconds=_seconds(move.started_at, move.stopped_at),
        **fields,
    )


def _seconds(start: datetime, end: datetime | None) -> float | None:
    return None if end is None else round((end - start).total_seconds(), 3)
