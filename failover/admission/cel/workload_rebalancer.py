"""The WorkloadRebalancer rules of failover/admission/rebalancer_rules.py, as CEL.

The CRD schema requires `spec.workloads` with at least one entry, each with apiVersion, kind and name, so what reaches
the policy is an empty string, a duplicate or a negative TTL.
"""

from __future__ import annotations

from failover.admission.cel.checks import CelValidation
from failover.admission.cel.expressions import literal, when
from failover.admission.rebalancer_rules import REQUIRED_WORKLOAD_FIELDS, WORKLOAD_FIELD_EXAMPLES

WORKLOADS = "object.spec.workloads"
_SAME = (
    "v.apiVersion == w.apiVersion && v.kind == w.kind && v.name == w.name"
    " && v.?namespace.orValue('') == w.?namespace.orValue('')"
)
_COMPLETE = " && ".join(f"w.{field} != ''" for field in REQUIRED_WORKLOAD_FIELDS)


def _workload_denials() -> str:
    """One list per workload, flattened: its empty fields, else the entry it duplicates."""
    missing = " + ".join(
        when(
            f"w.{field} == ''",
            "'spec.workloads[' + string(i) + ']' + "
            + literal(f".{field}: is required; set the workload's {field}, e.g. {WORKLOAD_FIELD_EXAMPLES[field]}"),
        )
        for field in REQUIRED_WORKLOAD_FIELDS
    )
    first = f"{WORKLOADS}.transformList(j, v, j < i && {_SAME}, j)"
    duplicate = when(
        f"{_COMPLETE} && size({first}) > 0",
        f"'spec.workloads[' + string(i) + ']: duplicates spec.workloads[' + string({first}[0])"
        " + ']; list each workload once'",
    )
    return f"{WORKLOADS}.transformList(i, w, {missing} + {duplicate}).flatten()"


_TTL = "object.spec.ttlSecondsAfterFinished"

REBALANCER_VALIDATION = CelValidation(
    variables=(),
    denials=(
        f"{_workload_denials()} + "
        + when(
            f"has({_TTL}) && {_TTL} < 0",
            f"'spec.ttlSecondsAfterFinished: must be 0 or more, got ' + string({_TTL})"
            " + '; omit it to keep the rebalancer after it finishes'",
        )
    ),
    warnings="[]",
)
