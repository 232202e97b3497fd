"""Bindings with a failover history (failover/state/history.py), for the history tests and the status view: the
loop's passes that record it, and a failover recorded through them."""

from __future__ import annotations

from typing import Any

from failover.core.loop_settings import DecisionSettings
from failover.reconcile.application_failover import decide_application_failover
from failover.state.history import decide_history
from failover.state.last_state import decide_last_state
from tests.failover.binding_builders import JOB_ID, at, flink_binding, set_health
from tests.patches import merge_patch

# The id of the run that followed JOB_ID's on member1, and the path that run started from.
ROTATED = "0123456789abcdef0123456789abcdef"
RESTORE = f"file:///state/default/{JOB_ID}/chk-41"
SETTINGS = DecisionSettings()


def reconcile(binding: dict[str, Any], now: float, works: list[dict[str, Any]] = ()) -> dict[str, Any]:
    """The loop's passes that matter here, in its order, each applied as the apiserver would."""
    binding = merge_patch(binding, decide_application_failover(binding, SETTINGS, at(now)).patch)
    binding = merge_patch(binding, decide_last_state(binding, at(now)))
    return merge_patch(binding, decide_history(binding, works, at(now)))


def failed_over() -> dict[str, Any]:
    """member1 ran JOB_ID, then a rotated run started (its id in the status) that went Unhealthy; evicted at 70 s."""
    binding = reconcile(flink_binding(), 0)
    set_health(
        binding,
        "member1",
        "Unhealthy",
        {"jobStatus": {"jobId": ROTATED, "state": "RECONCILING", "upgradeSavepointPath": RESTORE}},
    )
    binding = reconcile(binding, 5)
    return reconcile(binding, 70)
