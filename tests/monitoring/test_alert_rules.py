"""`promtool test rules` on manifests/monitoring/prometheus-rules.yaml, with input series taken from a real scrape.

Every input series of the generated promtool test is a series the exercised relay really exported
(tests/monitoring/exported.py), found by its name and label values: a renamed metric, label or label value fails
here with the name of what is missing, before promtool runs. Each alert gets a test where it fires (its labels and
annotations as Prometheus renders them) and all alerts get one where the scraped relay, left as it is, fires none.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from relay.commands.manifests.monitoring import RULES_FILE
from tests.ci import on_ci
from tests.monitoring.exported import Series, parse

# The target labels Prometheus adds to every scraped series (the ServiceMonitor names the job after the Service).
TARGET = {"job": "failover-relay", "instance": "10.0.0.7:9443"}


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        message = "promtool is not installed: `make test` installs it (hack/install-promtool.sh)"
        if on_ci():
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return found


@dataclass(frozen=True)
class Input:
    """Scraped series named ``name`` with at least the label values of ``having``, given promtool ``values``.
    ``every`` takes all matches (a histogram's buckets), each given ``values(series)``."""

    name: str
    having: dict[str, str] = field(default_factory=dict)
    values: Any = "0x60"
    every: bool = False


@dataclass(frozen=True)
class Firing:
    alert: str
    inputs: tuple[Input, ...]
    at: str
    labels: dict[str, str]  # the alert's labels besides those of the rule
    up: str | None = "1x60"  # the replica's `up` series (None: no target discovered at all)


def _slower_than_one_second(series: Series) -> str:
    return "0x60" if float(series.label_dict["le"]) <= 1.0 else "0+60x60"


FIRING = (
    Firing("FailoverRelayDown", (), "5m", {}, up="0x60"),
    Firing("FailoverRelayDown", (), "5m", {}, up=None),
    Firing(
        "FailoverRelayCertificateExpiresSoon",
        (Input("failover_relay_certificate_expiry_timestamp_seconds", values=f"{10 * 86400}x60"),),
        "1m",
        TARGET,
    ),
    Firing(
        "FailoverRelayCaBundleNotSynced",
        (
            Input(
                "failover_relay_cabundle_syncs_total",
                {"configuration": "MutatingWebhookConfiguration/failover-relay", "result": "error"},
                "0+1x60",
            ),
        ),
        "40m",
        {"configuration": "MutatingWebhookConfiguration/failover-relay"},
    ),
    Firing(
        "FailoverRelayAdmissionErrors",
        (Input("failover_relay_admission_errors_total", {"endpoint": "validate"}, "0+60x60"),),
        "30m",
        {},
    ),
    Firing(
        "FailoverRelaySlowAdmission",
        (
            Input(
                "failover_relay_admission_latency_seconds_bucket",
                {"endpoint": "mutate"},
                _slower_than_one_second,
                every=True,
            ),
        ),
        "30m",
        {"endpoint": "mutate"},
    ),
    Firing(
        "FailoverRelaySavepointLookupsFailing",
        (Input("failover_relay_savepoint_lookups_total", {"outcome": "storage-error"}, "0+1x60"),),
        "40m",
        {},
    ),
    Firing(
        "FailoverRelayReconcileErrors",
        (Input("failover_relay_reconcile_total", {"controller": "resourcebindings", "result": "api-error"}, "0+6x60"),),
        "40m",
        {"controller": "resourcebindings"},
    ),
    Firing(
        "FailoverRelayWorkloadsWaitingForACluster",
        (Input("failover_relay_bindings_waiting_for_cluster", values="1x60"),),
        "20m",
        TARGET,
    ),
    Firing(
        "FailoverRelayWorkloadKeptOnLastCluster",
        (Input("failover_relay_workloads_kept_on_last_cluster", {"member_cluster": "member3"}, "1x60"),),
        "20m",
        {"member_cluster": "member3"},
    ),
    Firing(
        "FailoverRelayClusterFailoverBraked",
        (Input("failover_relay_cluster_failover_braked", values="1x60"),),
        "5m",
        {},
    ),
    Firing(
        "FailoverRelayJobWithoutItsState",
        (Input("failover_relay_copies_without_state", {"outcome": "parked"}, "1x60"),),
        "5m",
        {"outcome": "parked"},
    ),
    Firing(
        "FailoverRelayClusterWorkloadsNotRestored",
        (Input("failover_relay_workloads_waiting", {"member_cluster": "member1", "phase": "restoring"}, "3x60"),),
        "20m",
        {"member_cluster": "member1"},
    ),
    Firing(
        "FailoverRelayQueueBacklog",
        (Input("failover_relay_queue_depth", {"controller": "resourcebindings"}, "150x60"),),
        "20m",
        {"controller": "resourcebindings"},
    ),
)


def rules() -> dict[str, dict[str, Any]]:
    return {
        rule["alert"]: rule
        for group in yaml.safe_load(RULES_FILE.read_text())["groups"]
        for rule in group["rules"]
        if "alert" in rule
    }


def matching(scraped: list[Series], wanted: Input) -> list[Series]:
    found = [one for one in scraped if one.name == wanted.name and wanted.having.items() <= one.label_dict.items()]
    if not found:
        offered = sorted(one.promql() for one in scraped if one.name == wanted.name) or ["no series of that name"]
        pytest.fail(
            f"the relay exports no {wanted.name} with {wanted.having}; the scrape has: {offered}", pytrace=False
        )
    return found if wanted.every else found[:1]


def input_series(scraped: list[Series], inputs: tuple[Input, ...]) -> list[dict[str, str]]:
    series = []
    for wanted in inputs:
        for one in matching(scraped, wanted):
            values = wanted.values(one) if callable(wanted.values) else wanted.values
            series.append({"series": one.promql(TARGET), "values": values})
    return series


def expanded(template: str, labels: dict[str, str]) -> str:
    return re.sub(r"\{\{\s*\$labels\.(\w+)\s*\}\}", lambda match: labels[match.group(1)], template)


def firing_test(scraped: list[Series], case: Firing) -> dict[str, Any]:
    rule = rules()[case.alert]
    labels = case.labels | rule.get("labels", {})
    return {
        "interval": "1m",
        "input_series": input_series(scraped, case.inputs)
        + ([] if case.up is None else [{"series": Series("up", ()).promql(TARGET), "values": case.up}]),
        "alert_rule_test": [
            {
                "eval_time": case.at,
                "alertname": case.alert,
                "exp_alerts": [
                    {
                        "exp_labels": labels,
                        "exp_annotations": {key: expanded(value, labels) for key, value in rule["annotations"].items()},
                    }
                ],
            }
        ],
    }


def healthy_test(scraped: list[Series]) -> dict[str, Any]:
    """Every scraped series held at its scraped value for an hour: nothing fires."""
    series = [{"series": one.promql(TARGET), "values": f"{one.value}x60"} for one in scraped]
    series.append({"series": Series("up", ()).promql(TARGET), "values": "1x60"})
    return {
        "interval": "1m",
        "input_series": series,
        "alert_rule_test": [
            {"eval_time": at, "alertname": alert, "exp_alerts": []} for alert in rules() for at in ("30m", "60m")
        ],
    }


def run_promtool(tmp_path: Path, tests: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    test_file = tmp_path / "alerts_test.yaml"
    test_file.write_text(
        yaml.safe_dump({"rule_files": [str(RULES_FILE)], "evaluation_interval": "1m", "tests": tests}, sort_keys=False)
    )
    return subprocess.run([promtool(), "test", "rules", str(test_file)], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def scraped(exposition: str) -> list[Series]:
    return parse(exposition)


def test_every_alert_has_a_firing_case() -> None:
    assert {case.alert for case in FIRING} == set(rules())


def test_promtool_checks_the_rules_file() -> None:
    result = subprocess.run([promtool(), "check", "rules", str(RULES_FILE)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("case", FIRING, ids=lambda case: case.alert)
def test_alert_fires_on_the_series_the_relay_exports(case: Firing, scraped: list[Series], tmp_path: Path) -> None:
    result = run_promtool(tmp_path, [firing_test(scraped, case)])
    assert result.returncode == 0, result.stdout + result.stderr


def test_no_alert_fires_on_a_healthy_relay(scraped: list[Series], tmp_path: Path) -> None:
    result = run_promtool(tmp_path, [healthy_test(scraped)])
    assert result.returncode == 0, result.stdout + result.stderr
