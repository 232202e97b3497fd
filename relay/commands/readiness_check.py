"""`failover-relay readiness [WORKLOAD]`: would each workload under the relay come back with its state if its cluster
died or its job failed now? The judgement is `failover.readiness`, its inputs fetched by readiness_report.py (the
karmada-apiserver, karmada-controller-manager's `/metrics` when given, the checkpoint storage, two `--dry-run=server`
policy creates); this module prints the report, and changes nothing.

Exit 0 when nothing is a problem (warnings allowed), 1 when something is, 2 with one line for bad input.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TextIO

import yaml

from failover.core.api import CLUSTER_RESOURCE_BINDINGS, CLUSTERS, RESOURCE_BINDINGS
from failover.readiness.findings import Status
from relay.commands.conventions import refuse
from relay.commands.online import BAD_INPUT, connect
from relay.commands.readiness_report import readiness_report
from relay.settings import Settings

EXIT_READY, EXIT_PROBLEM = 0, 1


def run_readiness(
    settings: Settings,
    workload: str | None,
    namespace: str | None,
    output: str,
    metrics_url: str | None,
    cluster_failure_threshold: float,
    out: TextIO,
    err: TextIO,
) -> int:
    try:
        online = connect(settings, RESOURCE_BINDINGS, CLUSTER_RESOURCE_BINDINGS, CLUSTERS)
        report = readiness_report(online, workload, namespace, metrics_url, cluster_failure_threshold)
    except BAD_INPUT as error:
        return refuse(error, err)
    print(render(report, output), file=out, end="" if output == "table" else "\n")
    return EXIT_PROBLEM if report["summary"][Status.PROBLEM.value] else EXIT_READY


def render(report: Mapping[str, Any], output: str) -> str:
    if output == "json":
        return json.dumps(report, indent=2)
    if output == "yaml":
        return yaml.safe_dump(dict(report), sort_keys=False).rstrip("\n")
    return render_table(report)


def render_table(report: Mapping[str, Any]) -> str:
    lines = ["control plane"]
    lines += _finding_lines(report["controlPlane"])
    for entry in report["workloads"]:
        lines += ["", f"{entry['workload']} ({entry['kind']}) placed on: {', '.join(entry['placedOn']) or '-'}"]
        lines += _finding_lines(entry["checks"])
        rpo, rto = entry["rpo"], entry["rto"]
        if rpo.get("derivation"):
            lines.append(f"  RPO  {rpo['derivation']}")
        for key, label in (("deadCluster", "dead cluster"), ("failingJob", "failing job")):
            if rto.get(key):
                seconds = rto.get(f"{key}Seconds")
                lines.append(f"  RTO  {label}: " + (f"about {seconds} s: " if seconds is not None else "") + rto[key])
    summary = report["summary"]
    lines += ["", ", ".join(f"{summary[status.value]} {status.value}" for status in Status)]
    return "\n".join(lines) + "\n"


def _finding_lines(findings: list[Mapping[str, str]]) -> list[str]:
    width = max((len(finding["check"]) for finding in findings), default=0)
    lines = []
    for finding in findings:
        lines.append(f"  {finding['status']:<8} {finding['check']:<{width}}  {finding['evidence']}")
        if finding.get("fix"):
            lines.append(f"  {'':<8} {'':<{width}}  fix: {finding['fix']}")
    return lines
