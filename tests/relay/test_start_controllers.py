"""The state-on-every-path settings reach the decisions (ControllerSettings.decisions, declared in
failover/core/loop_settings.py), and bad values get a clear answer naming the key."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from failover.core.loop_settings import FencingMode
from relay.settings import ControllerSettings, SettingsError, load_settings


def test_defaults_fence_after_a_minute_give_a_restore_five_minutes_and_hold_a_fourth_failover_within_the_hour() -> None:
    decisions = ControllerSettings().decisions
    assert decisions.fence_after == timedelta(seconds=60) and decisions.fencing == FencingMode.NOT_READY
    assert decisions.fences and not decisions.fence_needs_no_execute_taint
    assert decisions.stuck_deletion_after == timedelta(seconds=5)
    assert (decisions.failover_budget, decisions.failover_budget_window) == (3, timedelta(hours=1))
    assert decisions.failover_backoff == timedelta(0) and decisions.restore_grace == timedelta(minutes=5)
    assert decisions.failback_max_in_flight == 5


def test_fencing_modes_map_to_the_decision_settings(tmp_path: Path) -> None:
    path = tmp_path / "relay.yaml"
    path.write_text('controllers:\n  fencing: "off"\n')
    assert not load_settings(path).controllers.decisions.fences
    path.write_text("controllers:\n  fencing: noExecuteTaint\n  fenceAfterSeconds: 30\n")
    taint = load_settings(path).controllers.decisions
    assert taint.fence_after == timedelta(seconds=30) and taint.fences and taint.fence_needs_no_execute_taint


def test_the_config_file_sets_them(tmp_path: Path) -> None:
    path = tmp_path / "relay.yaml"
    path.write_text(
        "controllers:\n  fencing: noExecuteTaint\n  fenceAfterSeconds: 20\n  failoverBudget: 5\n"
        "  restoreGraceSeconds: 90\n  failbackMaxInFlight: 2\n"
    )
    decisions = load_settings(path).controllers.decisions
    assert decisions.fence_after == timedelta(seconds=20) and decisions.fence_needs_no_execute_taint
    assert (decisions.failover_budget, decisions.restore_grace, decisions.failback_max_in_flight) == (
        5,
        timedelta(seconds=90),
        2,
    )


@pytest.mark.parametrize(
    "text, message",
    [
        ("fencing: always", "controllers.fencing 'always': use off, notReady or noExecuteTaint"),
        ("fenceAfterSeconds: -1", "controllers.fenceAfterSeconds must be"),
        ("failoverBudget: 0", "controllers.failoverBudget must be"),
        ("restoreGraceSeconds: -5", "controllers.restoreGraceSeconds must be"),
        ("failbackMaxInFlight: 0", "controllers.failbackMaxInFlight must be"),
    ],
)
def test_bad_values_are_refused_with_the_key_named(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "relay.yaml"
    path.write_text(f"controllers:\n  {text}\n")
    with pytest.raises(SettingsError, match=message):
        load_settings(path)
