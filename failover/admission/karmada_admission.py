"""Karmada's own admission of (Cluster)PropagationPolicy, for `check`: its mutating defaults and validating rules.

Ported from Karmada v1.19: `pkg/webhook/propagationpolicy/mutating.go` and `.../clusterpropagationpolicy/mutating.go`
(with `pkg/util/helper/policy.go`), and `pkg/util/validation/validation.go` `ValidatePropagationSpec`, which both
validating webhooks call. Only what decides accept or refuse is ported; the permanent-id label and the finalizer the
mutating webhook adds on CREATE are bookkeeping that the validating webhook then finds present.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from failover.core.api import DEFAULT_GRACE_PERIOD_SECONDS  # helper.SetDefaultGracePeriodSeconds
from failover.core.binding import as_list
from failover.core.labels import label_key_problems
from failover.core.verdict import Findings

# helper.ContainsServiceImport: kind ServiceImport of the MCS API (sigs.k8s.io/mcs-api GroupVersion).
SERVICE_IMPORT = ("multicluster.x-k8s.io/v1alpha1", "ServiceImport")
FIELD_SELECTOR_KEYS = ("provider", "region", "zone")


def _quoted(value: Any) -> str:
    """A value as Go's %q / field.Invalid print it."""
    return json.dumps(value, ensure_ascii=False)


def karmada_mutated(policy: Mapping[str, Any], namespace: str) -> dict[str, Any]:
    """The policy after Karmada's mutating webhook; `namespace` is the request's ("" for a ClusterPropagationPolicy)."""
    result = copy.deepcopy(dict(policy))
    spec = result.get("spec")
    if not isinstance(spec, dict):
        return result
    selectors = spec.get("resourceSelectors")
    if namespace:
        for selector in as_list(selectors):
            if isinstance(selector, dict) and not selector.get("namespace"):
                selector["namespace"] = namespace
    placement = spec.get("placement")
    if isinstance(placement, dict):
        for constraint in as_list(placement.get("spreadConstraints")):
            if isinstance(constraint, dict):
                if not constraint.get("spreadByLabel") and not constraint.get("spreadByField"):
                    constraint["spreadByField"] = "cluster"
                if not constraint.get("minGroups"):
                    constraint["minGroups"] = 1
        scheduling = placement.get("replicaScheduling")
        if (
            isinstance(scheduling, dict)
            and scheduling.get("replicaSchedulingType") == "Divided"
            and not scheduling.get("replicaDivisionPreference")
        ):
            scheduling["replicaDivisionPreference"] = "Weighted"
    if any(isinstance(s, dict) and (s.get("apiVersion"), s.get("kind")) == SERVICE_IMPORT for s in as_list(selectors)):
        spec["propagateDeps"] = True
    failover = spec.get("failover")
    application = failover.get("application") if isinstance(failover, dict) else None
    if (
        isinstance(application, dict)
        and application.get("purgeMode") == "Gracefully"
        and application.get("gracePeriodSeconds") is None
    ):
        application["gracePeriodSeconds"] = DEFAULT_GRACE_PERIOD_SECONDS
    for section in ("application", "cluster"):
        behavior = failover.get(section) if isinstance(failover, dict) else None
        _zero_rule_fields(behavior.get("statePreservation") if isinstance(behavior, dict) else None)
    return result


def _zero_rule_fields(preservation: Any) -> None:
    """What Karmada's answer does to a statePreservation rule: its webhook decodes the policy, marshals it again and
    answers with the difference as a patch (`pkg/webhook/propagationpolicy/mutating.go`,
    `admission.PatchResponseFromRaw`), so a field without `omitempty` comes back with its zero value.
    StatePreservationRule's `aliasLabelName` and `jsonPath` have none (`pkg/apis/policy/v1alpha1/propagation_types.go`):
    a rule without a jsonPath is stored with `""`, which satisfies the CRD's `required` (mutating webhooks run before
    the schema validates), and the relay then warns about it instead of the schema refusing it."""
    rules = preservation.get("rules") if isinstance(preservation, dict) else None
    for rule in as_list(rules):
        if isinstance(rule, dict):
            for field in ("aliasLabelName", "jsonPath"):
                if rule.get(field) is None:
                    rule[field] = ""


def karmada_findings(findings: Findings, policy: Mapping[str, Any], namespace: str) -> None:
    """`ValidatePropagationSpec(spec, namespace)` on a schema-valid, Karmada-mutated policy."""
    spec = policy.get("spec") or {}
    placement = spec.get("placement") or {}
    _placement(findings, placement)
    failover = spec.get("failover") or {}
    application = failover.get("application")
    if application is not None and not spec.get("propagateDeps"):
        findings.deny(
            "spec.propagateDeps", "Invalid value: false: application failover is set, propagateDeps must be true"
        )
    if application is not None:
        _application(findings, application)
    for section in ("application", "cluster"):
        rules = ((failover.get(section) or {}).get("statePreservation") or {}).get("rules") or ()
        for index, rule in enumerate(rules):
            for problem in label_key_problems(rule.get("aliasLabelName", "")):
                findings.deny(
                    f"spec.failover.{section}.statePreservation.rules[{index}].aliasLabelName",
                    f"Invalid value: {_quoted(rule.get('aliasLabelName'))}: {problem}",
                )
    selectors = spec.get("resourceSelectors") or ()
    if namespace:
        for index, selector in enumerate(selectors):
            if selector.get("namespace", "") != namespace:
                findings.deny(
                    f"spec.resourceSelectors[{index}].namespace",
                    f"Invalid value: {_quoted(selector.get('namespace', ''))}: namespace of resource "
                    "selector "
                    "must be the same as the namespace of the policy",
                )
    if spec.get("preemption") == "Always":
        for index, selector in enumerate(selectors):
            if not selector.get("name"):
                findings.deny(
                    f"spec.resourceSelectors[{index}].name",
                    'Invalid value: "": name cannot be empty if preemption is Always',
                )
    suspension = spec.get("suspension") or {}
    if suspension.get("dispatching") and ((suspension.get("dispatchingOnClusters") or {}).get("clusterNames")):
        findings.deny(
            "spec.suspension.suspension",
            "Invalid value: suspension dispatching cannot co-exist with dispatchingOnClusters.clusterNames",
        )


def _application(findings: Findings, application: Mapping[str, Any]) -> None:
    path = "spec.failover.application"
    toleration = (application.get("decisionConditions") or {}).get("tolerationSeconds")
    if isinstance(toleration, (int, float)) and toleration < 0:
        findings.deny(
            f"{path}.decisionConditions.tolerationSeconds",
            f"Invalid value: {int(toleration)}: must be greater than or equal to 0",
        )
    purge_mode, grace = application.get("purgeMode"), application.get("gracePeriodSeconds")
    if purge_mode != "Gracefully" and grace is not None:
        findings.deny(
            f"{path}.gracePeriodSeconds", f"Invalid value: {grace}: only takes effect when purgeMode is gracefully"
        )
    if purge_mode == "Gracefully" and grace is None:
        findings.deny(
            f"{path}.gracePeriodSeconds", "Invalid value: null: should not be empty when purgeMode is gracefully"
        )
    if isinstance(grace, (int, float)) and grace <= 0:
        findings.deny(f"{path}.gracePeriodSeconds", f"Invalid value: {int(grace)}: must be greater than 0")


def _placement(findings: Findings, placement: Mapping[str, Any]) -> None:
    path = "spec.placement"
    affinity, affinities = placement.get("clusterAffinity"), placement.get("clusterAffinities")
    if affinity is not None and affinities is not None:
        findings.deny(path, "Invalid value: clusterAffinities cannot co-exist with clusterAffinity")
    scheduling = placement.get("replicaScheduling") or {}
    overflow_allowed = scheduling.get("replicaSchedulingType") == "Divided" and (
        scheduling.get("replicaDivisionPreference") == "Aggregated"
        or ((scheduling.get("weightPreference") or {}).get("dynamicWeight"))
    )
    if affinity is not None:
        _field_selector(findings, affinity, f"{path}.clusterAffinity")
    names: set[str] = set()
    for index, term in enumerate(affinities or ()):
        term_path = f"{path}.clusterAffinities[{index}]"
        name = term.get("affinityName", "")
        for problem in label_key_problems(name):
            findings.deny(term_path, f"Invalid value: {_quoted(name)}: {problem}")
        if name in names:
            findings.deny(
                f"{path}.clusterAffinities", "Invalid value: each affinity term in a policy must have a unique name"
            )
        names.add(name)
        _field_selector(findings, term, term_path)
        if term.get("overflowAffinities") is not None and not overflow_allowed:
            findings.deny(
                f"{term_path}.overflowAffinities",
                "Invalid value: overflowAffinities can only be used "
                "together with dynamic weight or aggregated scheduling",
            )
    _spread_constraints(findings, placement.get("spreadConstraints") or (), f"{path}.spreadConstraints")
    for index, toleration in enumerate(placement.get("clusterTolerations") or ()):
        if toleration.get("operator") in ("Lt", "Gt"):
            findings.deny(
                f"{path}.clusterTolerations[{index}].operator",
                f'Unsupported value: {_quoted(toleration["operator"])}: supported values: "", "Exists", "Equal"',
            )
    workload = placement.get("workloadAffinity") or {}
    keys = [
        (side, (workload.get(side) or {}).get("groupByLabelKey"))
        for side in ("affinity", "antiAffinity")
        if workload.get(side) is not None
    ]
    for side, key in keys:
        for problem in label_key_problems(key or ""):
            findings.deny(
                f"{path}.workloadAffinity.{side}.groupByLabelKey", f"Invalid value: {_quoted(key)}: {problem}"
            )
    if len(keys) == 2 and keys[0][1] == keys[1][1]:
        findings.deny(
            f"{path}.workloadAffinity", "Invalid value: affinity and antiAffinity must not use the same groupByLabelKey"
        )


def _field_selector(findings: Findings, affinity: Mapping[str, Any], path: str) -> None:
    for expression in (affinity.get("fieldSelector") or {}).get("matchExpressions") or ():
        if expression.get("key") not in FIELD_SELECTOR_KEYS:
            findings.deny(
                f"{path}.fieldSelector",
                f"Invalid value: unsupported key {_quoted(expression.get('key'))}, must be provider, region, or zone",
            )
        elif expression.get("operator") not in ("In", "NotIn"):
            findings.deny(
                f"{path}.fieldSelector",
                f"Invalid value: unsupported operator {_quoted(expression.get('operator'))}, must be In or NotIn",
            )


def _spread_constraints(findings: Findings, constraints: Any, path: str) -> None:
    by_field: dict[str, int] = {}
    for index, constraint in enumerate(constraints):
        here = f"{path}[{index}]"
        if constraint.get("spreadByField") and constraint.get("spreadByLabel"):
            findings.deny(here, "Invalid value: spreadByLabel should not co-exist with spreadByField")
        low, high = constraint.get("minGroups") or 0, constraint.get("maxGroups") or 0
        if low < 0:
            findings.deny(here, "Invalid value: minGroups lower than 0 is not allowed")
        if high < 0:
            findings.deny(here, "Invalid value: maxGroups lower than 0 is not allowed")
        if high > 0 and high < low:
            findings.deny(here, "Invalid value: maxGroups lower than minGroups is not allowed")
        spread_field = constraint.get("spreadByField")
        if spread_field:
            by_field[spread_field] = by_field.get(spread_field, 0) + 1
            if by_field[spread_field] == 2:
                findings.deny(path, f"Invalid value: multiple {spread_field} spread constraints are not allowed")
    if by_field and "cluster" not in by_field:
        findings.deny(
            path,
            "Invalid value: the cluster spread constraint must be enabled in one of the constraints "
            "in case of SpreadByField is enabled",
        )
