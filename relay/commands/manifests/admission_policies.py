"""`failover-relay manifests admission-policies`: the relay's policy rules as ValidatingAdmissionPolicies and a
MutatingAdmissionPolicy, which the apiserver runs itself: no call, no timeout, no certificate, nothing to fail open.

Rendered from the admission registry (``failover.admission.registry.WEBHOOKS``): every webhook a rule of
``failover/`` decides becomes, from the CEL form beside its rule (failover/admission/cel/), policies for the same
resources and operations, with the webhook's name. A validating rule becomes two policies, because a binding's
actions hold for all of a policy's validations:

- ``NAME``, bound with ``Deny``: one validation that fails with every denial of the rule, joined by "; ", as the
  webhook's message;
- ``warn.NAME``, bound with ``Warn``: one validation per warning slot (``WARNING_SLOTS``), the i-th failing with the
  i-th warning, so kubectl prints each as the webhook's.

A defaulting rule becomes one MutatingAdmissionPolicy with a JSON Patch. All fail closed (``failurePolicy: Fail``):
an expression that cannot be evaluated refuses the object rather than let it through unchecked. The namespace
selector is the webhooks': kube-system and the relay's namespace are left alone.
"""

from __future__ import annotations

from typing import Any

import yaml

from failover.admission.cel.checks import CelMutation, CelValidation
from failover.admission.registry import ADMITTED_OPERATIONS, WEBHOOKS, Decider, Webhook
from failover.core.api import FailurePolicy
from relay.commands.manifests.webhooks import DEFAULT_NAMESPACE, namespace_selector

API_VERSION = "admissionregistration.k8s.io/v1"
LABELS = {"app.kubernetes.io/name": "failover-relay"}
WARNING_PREFIX = "warn."
# Warnings one object can get from the CEL policies; the rules give at most 7 today (tests/failover/admission).
WARNING_SLOTS = 10
DENIALS, WARNINGS = "denials", "warnings"


def _match_constraints(webhook: Webhook, namespace: str) -> dict[str, Any]:
    return {
        "resourceRules": [
            {
                "apiGroups": [resource.group],
                "apiVersions": [resource.version],
                "operations": list(ADMITTED_OPERATIONS),
                "resources": [resource.plural],
                "scope": resource.scope,
            }
            for resource in webhook.resources
        ],
        "namespaceSelector": namespace_selector(namespace),
    }


def _variables(pairs: tuple[tuple[str, str], ...]) -> list[dict[str, str]]:
    return [{"name": name, "expression": expression} for name, expression in pairs]


def _object(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": {"name": name, "labels": dict(LABELS)}, "spec": spec}


def _validating(webhook: Webhook, cel: CelValidation, namespace: str) -> list[dict[str, Any]]:
    deny_spec = {
        "failurePolicy": str(FailurePolicy.FAIL),
        "matchConstraints": _match_constraints(webhook, namespace),
        "variables": _variables((*cel.variables, (DENIALS, cel.denials))),
        "validations": [
            {
                "expression": f"size(variables.{DENIALS}) == 0",
                "messageExpression": f"variables.{DENIALS}.join('; ')",
                "message": f"refused by {webhook.name}",
                "reason": "Invalid",
            }
        ],
    }
    documents = [
        _object("ValidatingAdmissionPolicy", webhook.name, deny_spec),
        _binding("ValidatingAdmissionPolicyBinding", webhook.name, namespace, ["Deny"]),
    ]
    if cel.warnings != "[]":
        warn_name = WARNING_PREFIX + webhook.name
        warn_spec = {
            "failurePolicy": str(FailurePolicy.FAIL),
            "matchConstraints": _match_constraints(webhook, namespace),
            "variables": _variables((*cel.variables, (WARNINGS, cel.warnings))),
            "validations": [
                {
                    "expression": f"size(variables.{WARNINGS}) <= {slot}",
                    "messageExpression": f"variables.{WARNINGS}[{slot}]",
                    "message": f"a warning of {webhook.name}",
                }
                for slot in range(WARNING_SLOTS)
            ],
        }
        documents += [
            _object("ValidatingAdmissionPolicy", warn_name, warn_spec),
            _binding("ValidatingAdmissionPolicyBinding", warn_name, namespace, ["Warn"]),
        ]
    return documents


def _mutating(webhook: Webhook, cel: CelMutation, namespace: str) -> list[dict[str, Any]]:
    spec = {
        "failurePolicy": str(FailurePolicy.FAIL),
        "matchConstraints": _match_constraints(webhook, namespace),
        "matchConditions": [{"name": "applies", "expression": cel.applies_to}],
        "variables": _variables(cel.variables),
        "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": cel.patch}}],
        # The patch only adds what is missing and renames legacy values: a second run would change nothing.
        "reinvocationPolicy": "Never",
    }
    return [
        _object("MutatingAdmissionPolicy", webhook.name, spec),
        _binding("MutatingAdmissionPolicyBinding", webhook.name, namespace, None),
    ]


def _binding(kind: str, policy: str, namespace: str, actions: list[str] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"policyName": policy}
    if actions is not None:
        spec["validationActions"] = actions
    return _object(kind, policy, spec)


def admission_policies(namespace: str = DEFAULT_NAMESPACE) -> list[dict[str, Any]]:
    """Every policy and binding, in the registry's order."""
    documents: list[dict[str, Any]] = []
    for webhook in WEBHOOKS:
        if webhook.decider is not Decider.RULE:
            continue
        if isinstance(webhook.cel, CelValidation):
            documents += _validating(webhook, webhook.cel, namespace)
        elif isinstance(webhook.cel, CelMutation):
            documents += _mutating(webhook, webhook.cel, namespace)
        else:
            raise ValueError(f"{webhook.name}: a rule without its CEL form (failover/admission/cel/)")
    return documents


def render_admission_policies(namespace: str = DEFAULT_NAMESPACE) -> str:
    header = "# Rendered by `failover-relay manifests admission-policies`; re-render rather than edit.\n"
    return header + yaml.safe_dump_all(
        admission_policies(namespace), sort_keys=False, explicit_start=True, width=1 << 16
    )
