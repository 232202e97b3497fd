"""manifests/monitoring/: the PrometheusRule is the rendering of the rules file, and every metric and label the
alerts and the dashboard name is one the relay exports (checked against a real scrape, tests/monitoring/exported.py).

The PromQL is read the simple way our expressions are written: a metric name, optionally followed by ``{matchers}``,
and ``by (...)`` / ``without (...)`` clauses naming labels of the metrics in the same expression.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
import yaml

from relay.commands.manifests.monitoring import MONITORING, PROMETHEUS_RULE_FILE, RULES_FILE, render_prometheus_rule
from tests.monitoring.exported import exported_names, parse

DASHBOARD = MONITORING / "grafana-dashboard.json"
# Added by Prometheus to every scraped series, not by the relay; `up` is Prometheus's own series of a target.
TARGET_LABELS = {"job", "instance"}
PROMETHEUS_SERIES = {"up"}
_METRIC = re.compile(r"\b([a-z_][a-z0-9_]*)\s*(\{[^}]*\})?")
_MATCHER = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)")
_GROUPING = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")
_TEMPLATE_LABEL = re.compile(r"\{\{\s*(?:\$labels\.)?([a-zA-Z_]\w*)\s*\}\}")


def alert_rules() -> list[dict]:
    return [rule for group in yaml.safe_load(RULES_FILE.read_text())["groups"] for rule in group["rules"]]


def dashboard_targets() -> Iterator[tuple[str, dict]]:
    for panel in json.loads(DASHBOARD.read_text())["panels"]:
        for target in panel["targets"]:
            yield panel["title"], target


def references(expression: str) -> tuple[dict[str, set[str]], set[str]]:
    """The metrics an expression names (with the labels of their matchers) and the labels it groups by."""
    metrics: dict[str, set[str]] = {}
    for match in _METRIC.finditer(expression):
        name, matchers = match.group(1), match.group(2)
        if name.startswith("failover_relay_") or name in PROMETHEUS_SERIES:
            metrics.setdefault(name, set()).update(_MATCHER.findall(matchers or ""))
    grouped = {
        label.strip() for clause in _GROUPING.findall(expression) for label in clause.split(",") if label.strip()
    }
    return metrics, grouped


@pytest.fixture(scope="module")
def exported(exposition: str) -> tuple[set[str], dict[str, set[str]]]:
    """Series names, and for each the label names seen on it (target labels added, as Prometheus stores them)."""
    labels: dict[str, set[str]] = {}
    for series in parse(exposition):
        labels.setdefault(series.name, set(TARGET_LABELS)).update(series.label_dict)
    return exported_names(exposition), labels


def problems(
    where: str, expression: str, shown_labels: set[str], exported: tuple[set[str], dict[str, set[str]]]
) -> list[str]:
    names, labels = exported
    metrics, grouped = references(expression)
    found = []
    if not any(name.startswith("failover_relay_") for name in metrics) and "up" not in metrics:
        found.append(f"{where}: names no metric of ours: {expression}")
    for name, matched in metrics.items():
        if name in PROMETHEUS_SERIES:
            continue
        if name not in names:
            found.append(f"{where}: {name} is not exported")
            continue
        missing = matched - labels.get(name, set(TARGET_LABELS))
        if missing:
            found.append(f"{where}: {name} has no label {sorted(missing)}")
    available = set().union(TARGET_LABELS, *(labels.get(name, set()) for name in metrics))
    for label in (grouped | shown_labels) - available:
        found.append(f"{where}: label {label} is on none of {sorted(metrics)}")
    return found


def test_prometheus_rule_is_the_rendering_of_the_rules_file() -> None:
    assert PROMETHEUS_RULE_FILE.read_text() == render_prometheus_rule(RULES_FILE.read_text()), (
        "manifests/monitoring/prometheusrule.yaml is stale: "
        "python -m relay.commands.manifests.monitoring > manifests/monitoring/prometheusrule.yaml"
    )


def test_prometheus_rule_carries_the_rules_unchanged() -> None:
    rule = yaml.safe_load(PROMETHEUS_RULE_FILE.read_text())
    assert rule["kind"] == "PrometheusRule"
    assert rule["spec"]["groups"] == yaml.safe_load(RULES_FILE.read_text())["groups"]


def test_kustomization_holds_every_manifest() -> None:
    kustomization = yaml.safe_load((MONITORING / "kustomization.yaml").read_text())
    assert sorted(kustomization["resources"]) == ["prometheusrule.yaml", "servicemonitor.yaml"]
    assert kustomization["configMapGenerator"][0]["files"] == [DASHBOARD.name]


def test_service_monitor_scrapes_the_port_the_service_names() -> None:
    service = yaml.safe_load((MONITORING.parent / "deploy" / "service.yaml").read_text())
    monitor = yaml.safe_load((MONITORING / "servicemonitor.yaml").read_text())
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["namespaceSelector"]["matchNames"] == [service["metadata"]["namespace"]]
    assert [endpoint["port"] for endpoint in monitor["spec"]["endpoints"]] == [
        port["name"] for port in service["spec"]["ports"]
    ]
    # The job label is the Service's name, which FailoverRelayDown selects.
    assert f'job="{service["metadata"]["name"]}"' in alert_rules()[0]["expr"]


def test_alerts_name_only_exported_metrics_and_labels(exported) -> None:
    found = []
    for rule in alert_rules():
        shown = {label for text in rule.get("annotations", {}).values() for label in _TEMPLATE_LABEL.findall(text)}
        found += problems(rule["alert"], rule["expr"], shown, exported)
    assert not found, "\n".join(found)


def test_dashboard_names_only_exported_metrics_and_labels(exported) -> None:
    found = []
    for title, target in dashboard_targets():
        found += problems(
            f"panel {title!r}", target["expr"], set(_TEMPLATE_LABEL.findall(target.get("legendFormat", ""))), exported
        )
    assert not found, "\n".join(found)


def test_dashboard_shows_every_exported_family(exported) -> None:
    names, _ = exported
    shown = {name for _, target in dashboard_targets() for name in references(target["expr"])[0]}
    histograms = {name.removesuffix("_bucket") for name in names if name.endswith("_bucket")}

    def family(name: str) -> str:
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        return base if base in histograms else name

    exported_families = {family(name) for name in names if not name.endswith("_created")}
    assert exported_families - {family(name) for name in shown} == set(), "metrics no panel shows"


def test_the_checks_catch_a_renamed_metric_and_label(exported) -> None:
    assert problems("x", "sum(rate(failover_relay_evictions_totals[5m]))", set(), exported) == [
        "x: failover_relay_evictions_totals is not exported"
    ]
    assert problems("x", 'sum by (controler) (failover_relay_queue_depth{controler="a"})', set(), exported) == [
        "x: failover_relay_queue_depth has no label ['controler']",
        "x: label controler is on none of ['failover_relay_queue_depth']",
    ]


def test_the_operations_guide_lists_exactly_the_exported_metrics(exported) -> None:
    """docs/operations.md's metric table: every metric the relay exports, with the labels it carries."""
    names, labels = exported
    guide = (MONITORING.parent.parent / "docs" / "operations.md").read_text()
    listed = dict(re.findall(r"^\| `(failover_relay_\w+)` \| \w+ \| ([^|]*)\|", guide, flags=re.MULTILINE))
    histograms = {name.removesuffix("_bucket") for name in names if name.endswith("_bucket")}

    assert (
        set(listed)
        == {name for name in names if not name.endswith(("_created", "_sum", "_count", "_bucket"))} | histograms
    )
    for name, cell in listed.items():
        documented = set(re.findall(r"`(\w+)`", re.sub(r"\([^)]*\)", "", cell)))  # (...) holds values
        scraped = labels.get(name + "_bucket" if name in histograms else name, set()) - TARGET_LABELS - {"le"}
        if scraped:  # a labelled family that never moved shows no labels in a scrape
            assert documented == scraped, f"{name}: the guide names {sorted(documented)}, the relay {sorted(scraped)}"
