"""What every reconciler of the loop is built from: `LoopParts`, made once per term by controllers/manager.py."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from controllers.access.client import KarmadaClient
from controllers.access.events import EventRecorder
from controllers.loop.cache import Cache
from controllers.loop.loop_metrics import LoopMetrics
from controllers.reconcilers.restore_watch import RestoreWatch
from controllers.reconcilers.storage_fence import StorageFence
from failover.core.loop_settings import DecisionSettings

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class LoopParts:
    """What every reconciler of the loop is built from (controllers/manager.py builds them once per term)."""

    client: KarmadaClient
    cache: Cache
    recorder: EventRecorder
    settings: DecisionSettings
    metrics: LoopMetrics
    storage_fence: StorageFence | None = None  # the storage fence, when `fence.storage` is on
    restore_watch: RestoreWatch | None = None  # the checkpoint storage, when there is a checkpoint root
    clock: Clock = utc_now
