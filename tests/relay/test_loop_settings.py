"""The state-on-every-path settings reach the decisions (relay/loop.py), and bad values get a clear answer."""

from __future__ import annotations

from datetime import timedelta

import pytest

from relay.loop import loop_settings
from relay.settings import ControllerSettings, SettingsError, _check_controller_settings


def test_defaults_fence_after_a_minute_and_hold_a_fourth_failover_within_the_hour() -> None:
    decisions = loop_settings(ControllerSettings(lease_namespace="x")).decisions
    assert decisions.fence_after == timedelta(seconds=60) and not decisions.fence_needs_no_execute_taint
    assert decisions.stuck_deletion_after == timedelta(seconds=5)
    assert (decisions.failover_budget, decisions.failover_budget_window) == (3, timedelta(hours=1))
    assert decisions.failover_backoff == timedelta(0) and decisions.restore_grace == timedelta(0)
    assert decisions.failback_max_in_flight == 5


def test_fencing_modes_map_to_the_decision_settings() -> None:
    off = loop_settings(ControllerSettings(lease_namespace="x", fencing="off")).decisions
    assert off.fence_after is None
    taint = loop_settings(ControllerSettings(lease_namespace="x", fencing="noExecuteTaint",
                                             fence_after_seconds=30)).decisions
    assert taint.fence_after == timedelta(seconds=30) and taint.fence_needs_no_execute_taint


@pytest.mark.parametrize("bad, message", [
    ({"fencing": "always"}, "controllers.fencing 'always'"),
    ({"fence_after_seconds": -1}, "controllers.fenceAfterSeconds must be 0 or more"),
    ({"failover_budget": 0}, "failoverBudget"),
    ({"restore_grace_seconds": -5}, "controllers.restoreGraceSeconds must be 0 or more"),
])
def test_bad_values_are_refused_with_the_key_named(bad: dict, message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        _check_controller_settings(ControllerSettings(**bad))
