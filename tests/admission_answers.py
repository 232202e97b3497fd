"""An apiserver's answer to one admission case, and what the two admission paths must answer.

Shared by the envtest tier (tests/e2e/test_admission_policies.py: a webhook apiserver beside a CEL one) and the
Karmada tier (tests/karmada/test_admission_policies.py: the real karmada-apiserver, before and after the policies).
"""

from __future__ import annotations

import copy
import re
import time
from dataclasses import dataclass, field
from typing import Any

import jsonpatch

from failover.admission.cel.restore_guard import RESTORE_GUARD_NAME
from failover.admission.registry import DEFAULTERS, VALIDATORS, WEBHOOKS, Decider
from failover.core.api import RESOURCES_BY_GROUP_KIND, group_kind_of
from failover.core.verdict import Verdict
from relay.commands.manifests.admission_policies import WARNING_PREFIX
from tests.kube_api import Api

CASE_NAMESPACE = "default"
SCHEMA_DELAY_SECONDS = 30
RULE_WEBHOOKS = {webhook.name for webhook in WEBHOOKS if webhook.decider is Decider.RULE}
RULE_KINDS = {
    resource.group_kind for webhook in WEBHOOKS if webhook.decider is Decider.RULE for resource in webhook.resources
}
_WEBHOOK_DENIAL = re.compile(r'admission webhook "([^"]+)" denied the request: ')
_POLICY_DENIAL = re.compile(r"ValidatingAdmissionPolicy '([^']+)' with binding '[^']+' denied request: ")
_POLICY_WARNING = re.compile(r"Validation failed for ValidatingAdmissionPolicy '([^']+)' with binding '[^']+': ")
# Set by the apiserver, or differing between two apiservers: not part of what admission decided.
SERVER_FIELDS = ("uid", "creationTimestamp", "resourceVersion", "generation", "managedFields")


@dataclass(frozen=True)
class Answer:
    """`status`: allowed; denied (by the relay's rules or restore guard: `by` is webhook or policy); refused (by
    anything else: the CRD schema, another webhook, the request itself). `warnings` are the webhooks',
    `policy_warnings` the CEL policies' without the apiserver's prefix. `stored`: the object as it would be stored,
    when allowed."""

    status: str
    by: str = ""
    message: str = ""
    warnings: tuple[str, ...] = ()
    policy_warnings: tuple[str, ...] = ()
    stored: dict[str, Any] | None = field(default=None, compare=False)


def is_rule_case(obj: dict[str, Any]) -> bool:
    return group_kind_of(str(obj.get("apiVersion", "")), str(obj.get("kind", ""))) in RULE_KINDS


def case_object(obj: dict[str, Any]) -> dict[str, Any]:
    """The case as it is sent: namespaced kinds in CASE_NAMESPACE."""
    obj = copy.deepcopy(obj)
    if RESOURCES_BY_GROUP_KIND[group_kind_of(obj["apiVersion"], obj["kind"])].namespaced:
        obj["metadata"]["namespace"] = CASE_NAMESPACE
    return obj


def answer(api: Api, obj: dict[str, Any]) -> Answer:
    """The apiserver's answer to a dry-run create of `obj`."""
    resource = RESOURCES_BY_GROUP_KIND[group_kind_of(obj["apiVersion"], obj["kind"])]
    namespace = obj["metadata"].get("namespace", "") if resource.namespaced else ""
    deadline = time.monotonic() + SCHEMA_DELAY_SECONDS
    while True:
        status, body, warnings = api.dry_run_create(resource.path(namespace=namespace), obj)
        if status != 503 or time.monotonic() > deadline:
            break
        # The MutatingAdmissionPolicy's dispatcher answers 503 until it has read the kind's OpenAPI schema
        # (`mutating/dispatcher.go` `dispatchOne`: "There can be a delay between when CustomResourceDefinitions are
        # created and when they are available"), and again while it re-reads it when the apiserver's schemas change.
        time.sleep(0.2)
    ours = tuple(w for w in warnings if not _POLICY_WARNING.match(w))
    from_policies = tuple(_POLICY_WARNING.sub("", w) for w in warnings if _POLICY_WARNING.match(w))
    assert all(_POLICY_WARNING.match(w)[1].startswith(WARNING_PREFIX) for w in warnings if _POLICY_WARNING.match(w))
    if status in (200, 201):
        return Answer("allowed", warnings=ours, policy_warnings=from_policies, stored=body)
    message = body.get("message", "") if isinstance(body, dict) else str(body)
    webhook, policy = _WEBHOOK_DENIAL.search(message), _POLICY_DENIAL.search(message)
    if webhook is not None and webhook[1] in RULE_WEBHOOKS:
        return Answer("denied", "webhook", message[webhook.end() :], ours, from_policies)
    if policy is not None and (policy[1] in RULE_WEBHOOKS or policy[1].endswith(RESTORE_GUARD_NAME)):
        return Answer("denied", "policy", message[policy.end() :], ours, from_policies)
    return Answer("refused", "", message, ours, from_policies)


def webhook_verdict(obj: dict[str, Any]) -> Verdict:
    """What the relay's webhooks conclude: `/mutate`, then `/validate` of the mutated object, as the apiserver calls
    them; with the rewrite's warnings, which kubectl prints before the validation's."""
    group_kind = group_kind_of(obj["apiVersion"], obj["kind"])
    mutated = DEFAULTERS[group_kind](obj) if group_kind in DEFAULTERS else Verdict()
    patched = jsonpatch.apply_patch(obj, list(mutated.patch)) if mutated.patch else obj
    return Verdict(warnings=mutated.warnings, warning_rules=mutated.warning_rules).merged(
        VALIDATORS[group_kind](patched)
    )


def stored(obj: dict[str, Any] | None) -> dict[str, Any] | None:
    """The stored object without what the apiserver sets."""
    if obj is None:
        return None
    obj = copy.deepcopy(obj)
    for name in SERVER_FIELDS:
        obj["metadata"].pop(name, None)
    return obj


def _probes() -> dict[str, dict[str, Any]]:
    from tests.admission_cases import admission_cases
    from tests.policies import flink_policy

    cases = dict(admission_cases())
    zero = flink_policy(decisionConditions={"tolerationSeconds": 0})
    return {
        "deny": case_object(cases["corpus/application-without-propagate-deps"]),
        "warn": case_object(zero),
        "mutate": case_object(cases["corpus/legacy-immediately"]),
    }


def policies_in_force(api: Api) -> bool:
    """Whether the apiserver runs each of the rendered policies: the deny and the warn ValidatingAdmissionPolicy and
    the MutatingAdmissionPolicy, which it picks up one by one, each a moment after it is created."""
    probes = _probes()
    mutated = answer(api, probes["mutate"])
    return (
        answer(api, probes["deny"]).by == "policy"
        and bool(answer(api, probes["warn"]).policy_warnings)
        # Renamed by the MutatingAdmissionPolicy, before the relay's /mutate (if any) could warn about it.
        and mutated.status == "allowed"
        and not any("rewritten to" in warning for warning in mutated.warnings)
    )


def policies_gone(api: Api) -> bool:
    """Whether the apiserver has dropped every rendered policy (with the relay's webhooks registered)."""
    probes = _probes()
    return (
        answer(api, probes["deny"]).by != "policy"
        and not answer(api, probes["warn"]).policy_warnings
        and any("rewritten to" in warning for warning in answer(api, probes["mutate"]).warnings)
    )
