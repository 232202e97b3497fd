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

import argparse
import re
from typing import Any, TextIO

import yaml

from failover.admission.cel.checks import KUBERNETES_VERSION_FOR_POLICIES, CelMutation, CelValidation
from failover.admission.registry import ADMITTED_OPERATIONS, WEBHOOKS, Decider, Webhook
from failover.core.api import FailurePolicy
from failover.core.names import is_dns_label
from relay.commands.manifests.webhooks import (
    DEFAULT_NAMESPACE,
    EXIT_OK,
    EXIT_USAGE,
    ManifestError,
    namespace_selector,
)

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


def _version(text: str) -> tuple[int, int]:
    """`1.36`, `v1.36.2` or `1.36.0-rc.1` as (1, 36); ManifestError for anything else."""
    match = re.fullmatch(r"v?(\d{1,3})\.(\d{1,3})(?:\.\d{1,5})?(?:[-+][0-9A-Za-z.-]{1,64})?", text.strip())
    if match is None:
        raise ManifestError(f"--kubernetes-version {text[:40]!r}: expected MAJOR.MINOR, e.g. 1.36")
    return int(match[1]), int(match[2])


def check_kubernetes_version(text: str) -> None:
    """Refuse an apiserver older than KUBERNETES_VERSION_FOR_POLICIES, with what to do instead."""
    if _version(text) < _version(KUBERNETES_VERSION_FOR_POLICIES):
        raise ManifestError(
            f"Kubernetes {text} serves no MutatingAdmissionPolicy v1 (GA in {KUBERNETES_VERSION_FOR_POLICIES}): "
            "keep the policy rules in the webhook (manifests webhook --admission-mode webhook)"
        )


def run_admission_policies(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """`failover-relay manifests admission-policies`: print (or write) them; exit 2 with one line on a bad flag."""
    namespace = args.namespace or DEFAULT_NAMESPACE
    try:
        check_kubernetes_version(args.kubernetes_version or KUBERNETES_VERSION_FOR_POLICIES)
        if not is_dns_label(namespace):
            raise ManifestError(f"--namespace {namespace[:80]!r}: not a valid Kubernetes name")
    except ManifestError as error:
        print(f"failover-relay: {error}", file=err)
        return EXIT_USAGE
    rendered = render_admission_policies(namespace)
    if args.output_file is None:
        out.write(rendered)
        return EXIT_OK
    try:
        args.output_file.write_text(rendered)
    except OSError as error:
        print(f"failover-relay: cannot write {args.output_file}: {error.strerror}", file=err)
        return EXIT_USAGE
    return EXIT_OK
