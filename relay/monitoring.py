"""The PrometheusRule of ``manifests/monitoring/``, rendered from the plain rules file beside it.

``manifests/monitoring/prometheus-rules.yaml`` (a Prometheus ``rule_files:`` file) is the one source of the alerts;
the prometheus-operator's PrometheusRule carries the same ``groups`` under ``spec``. Regenerate after editing the
rules with ``python -m relay.monitoring > manifests/monitoring/prometheusrule.yaml``; tests/monitoring/test_files.py
fails while the committed file differs from the rendering.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

MONITORING = Path(__file__).resolve().parent.parent / "manifests" / "monitoring"
RULES_FILE = MONITORING / "prometheus-rules.yaml"
PROMETHEUS_RULE_FILE = MONITORING / "prometheusrule.yaml"
NAME = NAMESPACE = "failover-relay"

HEADER = """\
# Generated from prometheus-rules.yaml by `python -m relay.monitoring`: edit that file, not this one.
# A Prometheus selects PrometheusRules by its ruleSelector (kube-prometheus-stack: the label `release: <its release>`);
# add that label in an overlay.
"""


def prometheus_rule(rules: dict[str, Any]) -> dict[str, Any]:
    """The PrometheusRule holding ``rules``' groups (a parsed rules file)."""
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": {"app.kubernetes.io/name": NAME}},
        "spec": {"groups": rules["groups"]},
    }


def render_prometheus_rule(rules_text: str) -> str:
    rule = prometheus_rule(yaml.safe_load(rules_text))
    return HEADER + yaml.safe_dump(rule, sort_keys=False, width=120, allow_unicode=True)


def main() -> int:
    sys.stdout.write(render_prometheus_rule(RULES_FILE.read_text()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
