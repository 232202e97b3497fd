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
from failover.admission.cel.restore_guard import restore_guards
from failover.admission.registry import WEBHOOKS, Decider, Webhook
from failover.core.api import DEFAULT_JOB_ID_LABEL, FailurePolicy, Resource
from failover.core.labels import label_key_problems
from failover.core.names import is_dns_label
from failover.state.profiles import trigger_labels
from relay.commands.manifests.webhooks import (
    DEFAULT_NAMESPACE,
    EXIT_OK,
    EXIT_USAGE,
    ManifestError,
    namespace_selector,
    rules_for,
)

API_VERSION = "admissionregistration.k8s.io/v1"
LABELS = {"app.kubernetes.io/name": "failover-relay"}
WARNING_PREFIX = "warn."
# Warnings one object can get from the CEL policies: one policy gets at most 7 (tests/admission_cases.py
# `most_warnings`, held below this by tests/failover/admission/test_cel_forms.py).
WARNING_SLOTS = 10
DENIALS, WARNINGS = "denials", "warnings"


def _spec(resources: tuple[Resource, ...], namespace: str, variables: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    """What every policy shares: it fails closed, matches the webhook's rules and namespaces, and names its
    variables."""
    return {
        "failurePolicy": str(FailurePolicy.FAIL),
        "matchConstraints": {"resourceRules": rules_for(resources), "namespaceSelector": namespace_selector(namespace)},
        "variables": [{"name": name, "expression": expression} for name, expression in variables],
    }


def _object(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": {"name": name, "labels": dict(LABELS)}, "spec": spec}


def _validating(name: str, resources: tuple[Resource, ...], cel: CelValidation, namespace: str) -> list[dict[str, Any]]:
    deny_spec = _spec(resources, namespace, (*cel.variables, (DENIALS, cel.denials))) | {
        "validations": [
            {
                "expression": f"size(variables.{DENIALS}) == 0",
                "messageExpression": f"variables.{DENIALS}.join('; ')",
                "message": f"refused by {name}",
                "reason": "Invalid",
            }
        ],
    }
    documents = [
        _object("ValidatingAdmissionPolicy", name, deny_spec),
        _binding("ValidatingAdmissionPolicyBinding", name, namespace, ["Deny"]),
    ]
    if cel.warnings != "[]":
        warn_name = WARNING_PREFIX + name
        warn_spec = _spec(resources, namespace, (*cel.variables, (WARNINGS, cel.warnings))) | {
            "validations": [
                {
                    "expression": f"size(variables.{WARNINGS}) <= {slot}",
                    "messageExpression": f"variables.{WARNINGS}[{slot}]",
                    "message": f"a warning of {name}",
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
    spec = _spec(webhook.resources, namespace, cel.variables) | {
        "matchConditions": [{"name": "applies", "expression": cel.applies_to}],
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
    """Every policy and binding for the karmada-apiserver, in the registry's order."""
    documents: list[dict[str, Any]] = []
    for webhook in WEBHOOKS:
        if webhook.decider is not Decider.RULE:
            continue
        if isinstance(webhook.cel, CelValidation):
            documents += _validating(webhook.name, webhook.resources, webhook.cel, namespace)
        elif isinstance(webhook.cel, CelMutation):
            documents += _mutating(webhook, webhook.cel, namespace)
        else:
            raise ValueError(f"{webhook.name}: a rule without its CEL form (failover/admission/cel/)")
    return documents


def member_policies(
    namespace: str = DEFAULT_NAMESPACE, job_id_label: str = DEFAULT_JOB_ID_LABEL
) -> list[dict[str, Any]]:
    """The restore guard of a member cluster (failover/admission/cel/restore_guard.py)."""
    return [
        document
        for name, resources, rule in restore_guards(trigger_labels(job_id_label))
        for document in _validating(name, resources, rule, namespace)
    ]


def render_admission_policies(
    namespace: str = DEFAULT_NAMESPACE, *, member: bool = False, job_id_label: str = DEFAULT_JOB_ID_LABEL
) -> str:
    command = "manifests admission-policies" + (" --member" if member else "")
    header = f"# Rendered by `failover-relay {command}`; re-render rather than edit.\n"
    documents = member_policies(namespace, job_id_label) if member else admission_policies(namespace)
    return header + yaml.safe_dump_all(documents, sort_keys=False, explicit_start=True, width=1 << 16)


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
    job_id_label = args.job_id_label or DEFAULT_JOB_ID_LABEL
    try:
        if label_key_problems(job_id_label):
            raise ManifestError(f"--job-id-label {job_id_label[:80]!r}: {label_key_problems(job_id_label)[0]}")
    except ManifestError as error:
        print(f"failover-relay: {error}", file=err)
        return EXIT_USAGE
    rendered = render_admission_policies(namespace, member=args.member, job_id_label=job_id_label)
    if args.output_file is None:
        out.write(rendered)
        return EXIT_OK
    try:
        args.output_file.write_text(rendered)
    except OSError as error:
        print(f"failover-relay: cannot write {args.output_file}: {error.strerror}", file=err)
        return EXIT_USAGE
    return EXIT_OK
