import sys
import time
from pathlib import Path
from typing import Any

import pytest

# The tests import their shared builders as `tests.support` whether pytest runs from the repo root or elsewhere.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# Tiers by marker, most specific first: a test is in the first tier whose marker it carries, else "unit".
TIERS = ("karmada", "envtest")
_TIER_SECONDS: dict[str, float] = {}
_TIER_TESTS: dict[str, set[str]] = {}


def _tier(keywords: Any) -> str:
    return next((tier for tier in TIERS if tier in keywords), "unit")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Add setup, call and teardown of each test to its tier's wall time (session fixtures such as a control plane
    start-up land in the first test that needs them, so they count for that tier)."""
    tier = _tier(report.keywords)
    _TIER_SECONDS[tier] = _TIER_SECONDS.get(tier, 0.0) + report.duration
    _TIER_TESTS.setdefault(tier, set()).add(report.nodeid)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _TIER_SECONDS:
        terminalreporter.section("tier wall time")
        for tier in ("unit", *reversed(TIERS)):
            if tier in _TIER_SECONDS:
                terminalreporter.write_line(f"{tier}: {_TIER_SECONDS[tier]:.1f} s ({len(_TIER_TESTS[tier])} tests)")
