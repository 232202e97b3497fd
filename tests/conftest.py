import io
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from tests.ci import on_ci

# The tests import their shared helpers as `tests.<module>` whether pytest runs from the repo root or elsewhere.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from relay.logs import configure_logging
from tests.flink_job import FlinkUnavailable, ProbeFailed, build_probes
from tests.helm import HelmError, HelmUnavailable, helm_binary

# Tiers by marker, most specific first: a test is in the first tier whose marker it carries, else "unit".
TIERS = ("karmada", "flink", "envtest")
_TIER_SECONDS: dict[str, float] = {}
_TIER_TESTS: dict[str, set[str]] = {}
_TIER_OF: dict[str, str] = {}


def _tier(item: pytest.Item) -> str:
    # By marker, not by keyword: keywords also hold node and parameter names, and a unit test named for Karmada
    # (tests/relay/test_check_karmada.py) would count as the Karmada tier.
    markers = {marker.name for marker in item.iter_markers()}
    return next((tier for tier in TIERS if tier in markers), "unit")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Unit tests first, then envtest, the real-Flink tier and the Karmada tier (stable within each): the fast
    answers come first, and no test runs beside an idle control plane that a session fixture keeps until the end of
    the run (timing-sensitive unit tests were slowed by the Karmada tier's ten processes idling behind them)."""
    rank = {"unit": 0, "envtest": 1, "flink": 2, "karmada": 3}
    _TIER_OF.update((item.nodeid, _tier(item)) for item in items)
    items.sort(key=lambda item: rank[_TIER_OF[item.nodeid]])


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Add setup, call and teardown of each test to its tier's wall time (session fixtures such as a control plane
    start-up land in the first test that needs them, so they count for that tier)."""
    tier = _TIER_OF.get(report.nodeid, "unit")
    _TIER_SECONDS[tier] = _TIER_SECONDS.get(tier, 0.0) + report.duration
    _TIER_TESTS.setdefault(tier, set()).add(report.nodeid)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _TIER_SECONDS:
        terminalreporter.section("tier wall time")
        for tier in ("unit", *reversed(TIERS)):
            if tier in _TIER_SECONDS:
                terminalreporter.write_line(f"{tier}: {_TIER_SECONDS[tier]:.1f} s ({len(_TIER_TESTS[tier])} tests)")


@pytest.fixture(scope="session")
def helm_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The helm client of hack/build-helm.sh (tests/helm.py), for the chart tests of every tier: built when missing;
    locally a skip with one line when there is no Go to build it, on CI (``CI=true``) a failure."""
    try:
        return helm_binary(tmp_path_factory.getbasetemp() / "build-helm.log")
    except HelmUnavailable as error:
        if on_ci():
            pytest.fail(f"CI must run the chart tests: {error}", pytrace=False)
        pytest.skip(str(error))
    except HelmError as error:
        pytest.fail(str(error), pytrace=False)


@pytest.fixture(scope="session")
def flink_probes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Flink probe of hack/build-flink-probe.sh (tests/flink_job.py), for the real-Flink tier and the Karmada
    tier's jobs: built once per session; locally a skip without Java or Maven, on CI (``CI=true``) a failure."""
    try:
        return build_probes(tmp_path_factory.getbasetemp() / "build-flink-probe.log")
    except FlinkUnavailable as error:
        if on_ci():
            pytest.fail(f"CI must run the real-Flink jobs: {error}", pytrace=False)
        pytest.skip(str(error))
    except ProbeFailed as error:
        pytest.fail(str(error), pytrace=False)


@pytest.fixture
def json_lines() -> Iterator[io.StringIO]:
    """The relay's JSON log lines (relay/logs.py, as `serve --log-format json` writes them) in a stream, for the tests
    that read what a component logged; the logging set-up of the session is restored afterwards."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    stream = io.StringIO()
    configure_logging("json", stream=stream)
    # Module-level loggers (relay/serve.py's) would otherwise cache this set-up for the rest of the session, and later
    # tests that capture logs (structlog.testing.capture_logs) would see nothing.
    structlog.configure(cache_logger_on_first_use=False)
    try:
        yield stream
    finally:
        structlog.reset_defaults()
        root.handlers, root.level = handlers, level
