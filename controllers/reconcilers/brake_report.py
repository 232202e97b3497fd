"""The brake said where operators look: the gauge, a log line when it engages or comes off, and an Event on each
cluster it is about (failover/reconcile/brake.py decides; the binding pipeline holds the evictions)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from controllers.access.events import EventRecorder
from controllers.loop.loop_metrics import LoopMetrics
from failover.core.decision import NORMAL, WARNING, Event, clip_message
from failover.reconcile.brake import EVENT_BRAKED, EVENT_RELEASED, OFF, Brake, brake

log = structlog.get_logger("failover_relay.brake")


class BrakeReport:
    """Run on every Cluster change: the brake over all Clusters, reported when it changes."""

    def __init__(self, recorder: EventRecorder, metrics: LoopMetrics, threshold: float) -> None:
        self.recorder, self.metrics, self.threshold = recorder, metrics, threshold
        self.last: Brake = OFF

    async def __call__(self, clusters: Mapping[str, Mapping[str, Any]]) -> Brake:
        now = brake(clusters, self.threshold)
        self.metrics.brake.set(1 if now.engaged else 0)
        before, self.last = self.last, now
        if now.engaged:
            if not before.engaged or before.released != now.released:
                log.warning("cluster_failover_braked", not_ready=list(now.not_ready), released=list(now.released))
            event = Event(WARNING, EVENT_BRAKED, clip_message(now.message()))
            for name in now.not_ready:
                await self.recorder.record(clusters[name], (event,))
        elif before.engaged:
            log.info("cluster_failover_brake_released", not_ready=list(now.not_ready))
            event = Event(NORMAL, EVENT_RELEASED, clip_message(now.message()))
            for name in before.not_ready:
                if name in clusters:
                    await self.recorder.record(clusters[name], (event,))
        return now
