"""Validation of WorkloadRebalancer (apps.karmada.io/v1alpha1).

Karmada has no admission webhook for WorkloadRebalancer (docs/design.md, "Policy admission"): one naming the same
workload twice, or a workload without a name, is accepted and then reported Failed one entry at a time. These rules
refuse it at `kubectl apply` time instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from failover.admission.rules import Rule
from failover.core.fields import list_at, non_negative_int32_at, required_spec, str_at
from failover.core.verdict import Findings, Verdict

REQUIRED_WORKLOAD_FIELDS = ("apiVersion", "kind", "name")
# An example of each required field, for the denial that asks for it.
WORKLOAD_FIELD_EXAMPLES = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"}


def validate_rebalancer(rebalancer: Mapping[str, Any]) -> Verdict:
    findings = Findings()
    spec = required_spec(
        findings,
        rebalancer,
        "a WorkloadRebalancer",
        "is required, with at least one entry in spec.workloads",
        Rule.REBALANCER_SPEC,
    )
    if spec is None:
        return findings.verdict()
    workloads = list_at(findings, spec, "workloads", "spec.workloads")
    if not workloads and not (workloads is None and spec.get("workloads") is not None):
        findings.deny(
            "spec.workloads", "needs at least one workload (apiVersion, kind, name, namespace)", Rule.NO_WORKLOADS
        )
    seen: dict[tuple[str, ...], int] = {}
    for index, workload in enumerate(workloads or ()):
        path = f"spec.workloads[{index}]"
        if not isinstance(workload, dict):
            findings.deny(path, "must be an object with apiVersion, kind, name and namespace", Rule.WORKLOAD_SHAPE)
            continue
        key = _workload_key(findings, workload, path)
        if key is None:
            continue
        if key in seen:
            findings.deny(
                path, f"duplicates spec.workloads[{seen[key]}]; list each workload once", Rule.DUPLICATE_WORKLOAD
            )
        else:
            seen[key] = index
    non_negative_int32_at(
        findings,
        spec,
        "ttlSecondsAfterFinished",
        "spec.ttlSecondsAfterFinished",
        "to keep the rebalancer after it finishes",
        Rule.NEGATIVE_TTL,
    )
    return findings.verdict()


def _workload_key(findings: Findings, workload: Mapping[str, Any], path: str) -> tuple[str, ...] | None:
    values: list[str] = []
    complete = True
    for field in REQUIRED_WORKLOAD_FIELDS:
        value = str_at(findings, workload, field, f"{path}.{field}")
        if not value:
            if workload.get(field) is None or value == "":
                findings.deny(
                    f"{path}.{field}",
                    f"is required; set the workload's {field}, e.g. {WORKLOAD_FIELD_EXAMPLES[field]}",
                    Rule.WORKLOAD_FIELD_REQUIRED,
                )
            complete = False
            continue
        values.append(value)
    namespace = str_at(findings, workload, "namespace", f"{path}.namespace")
    if not complete:
        return None
    return (*values, namespace or "")
