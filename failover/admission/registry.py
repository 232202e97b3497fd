"""The admission registry: which resources reach which endpoint, and what decides for them.

One table (`WEBHOOKS`) serves three readers, as kopf builds its webhook configurations from its handler registry: the
handlers dispatch from it (`VALIDATORS`, `DEFAULTERS` and the kinds a mutator must be wired for), the webhook
configurations are rendered from it (`relay/commands/manifests/webhooks.py`), and the offline `check` applies the same
rules.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum, StrEnum
from typing import Any

from failover.admission.cel.checks import CelMutation, CelValidation
from failover.admission.cel.policy_rules import POLICY_DEFAULTS, POLICY_VALIDATION
from failover.admission.cel.workload_rebalancer import REBALANCER_VALIDATION
from failover.admission.policy import mutate_policy, validate_policy
from failover.admission.rebalancer_rules import validate_rebalancer
from failover.core.api import (
    CLUSTER_PROPAGATION_POLICIES,
    FLINK_RESOURCES,
    PROPAGATION_POLICIES,
    WORKLOAD_REBALANCERS,
    WORKS,
    GroupKind,
    Resource,
)
from failover.core.verdict import Verdict

Validator = Callable[[Mapping[str, Any]], Verdict]
Defaulter = Callable[[Mapping[str, Any]], Verdict]


class Endpoint(str, Enum):
    """The relay's two admission endpoints; the value is the URL path without its slash."""

    VALIDATE = "validate"
    MUTATE = "mutate"

    @property
    def path(self) -> str:
        return "/" + self.value


class AdmissionMode(StrEnum):
    """Who enforces the policy rules (`Decider.RULE`) on the karmada-apiserver (docs/operations.md, "Admission
    without the webhook"). The savepoint and Work mutation stay webhooks in every mode: they read storage and
    bindings."""

    # The relay's webhooks only: a relay outage blocks every policy change (failurePolicy Fail).
    WEBHOOK = "webhook"
    # The apiserver's CEL policies (`manifests admission-policies`) instead of the rule webhooks: the rules only a
    # webhook can judge (failover/admission/cel/forms.py, WebhookOnly) are not enforced.
    CEL = "cel"
    # Both: the CEL policies hold while the relay is down, the webhook adds its JSONPath checks and warnings.
    BOTH = "both"

    @property
    def rule_webhooks(self) -> bool:
        """Whether the rule webhooks are registered (the CEL policies are rendered in every mode but webhook)."""
        return self is not AdmissionMode.CEL


DEFAULT_ADMISSION_MODE = AdmissionMode.WEBHOOK


class Decider(str, Enum):
    """Who decides for a webhook's resources."""

    # A pure function of failover/, named in the webhook's entry: fails closed when the relay is down.
    RULE = "rule"
    # webhook.mutators.SavepointMutator, wired at start-up when a checkpoint root is configured.
    SAVEPOINT = "savepoint"
    # webhook.work_mutator.WorkMutator, wired at start-up when the Karmada apiserver is reachable.
    WORK_LABELS = "work-labels"


@dataclass(frozen=True)
class Webhook:
    """One webhook the relay registers: its name, endpoint, the resources it reviews and who decides for them."""

    name: str
    endpoint: Endpoint
    resources: tuple[Resource, ...]
    decider: Decider
    # For Decider.RULE: a Validator on /validate, a Defaulter on /mutate (both return a Verdict).
    rule: Callable[[Mapping[str, Any]], Any] | None = None
    # For Decider.RULE: the same rule as CEL, for `manifests admission-policies` (failover/admission/cel/).
    cel: CelValidation | CelMutation | None = None


POLICIES = (PROPAGATION_POLICIES, CLUSTER_PROPAGATION_POLICIES)
# The relay has nothing to say about DELETE or CONNECT: every webhook is registered for these two only.
ADMITTED_OPERATIONS = ("CREATE", "UPDATE")

WEBHOOKS = (
    Webhook(
        "policies.validate.failover-relay.io",
        Endpoint.VALIDATE,
        POLICIES,
        Decider.RULE,
        validate_policy,
        POLICY_VALIDATION,
    ),
    Webhook(
        "rebalancers.validate.failover-relay.io",
        Endpoint.VALIDATE,
        (WORKLOAD_REBALANCERS,),
        Decider.RULE,
        validate_rebalancer,
        REBALANCER_VALIDATION,
    ),
    Webhook(
        "policies.mutate.failover-relay.io", Endpoint.MUTATE, POLICIES, Decider.RULE, mutate_policy, POLICY_DEFAULTS
    ),
    Webhook("savepoints.mutate.failover-relay.io", Endpoint.MUTATE, FLINK_RESOURCES, Decider.SAVEPOINT),
    Webhook("works.mutate.failover-relay.io", Endpoint.MUTATE, (WORKS,), Decider.WORK_LABELS),
)


def webhooks_at(endpoint: Endpoint) -> tuple[Webhook, ...]:
    return tuple(webhook for webhook in WEBHOOKS if webhook.endpoint is endpoint)


def _rules_at(endpoint: Endpoint) -> dict[GroupKind, Any]:
    return {
        resource.group_kind: webhook.rule
        for webhook in webhooks_at(endpoint)
        if webhook.decider is Decider.RULE
        for resource in webhook.resources
    }


VALIDATORS: Mapping[GroupKind, Validator] = _rules_at(Endpoint.VALIDATE)
DEFAULTERS: Mapping[GroupKind, Defaulter] = _rules_at(Endpoint.MUTATE)


def _mutate_policy_legacy(policy: Mapping[str, Any]) -> Verdict:
    return mutate_policy(policy, legacy_purge_modes=True)


# For Karmada v1.12-v1.14, whose CRDs know only the legacy purge-mode names (`purgeModeSpelling: legacy`).
LEGACY_DEFAULTERS: Mapping[GroupKind, Defaulter] = {
    group_kind: _mutate_policy_legacy for group_kind, defaulter in DEFAULTERS.items() if defaulter is mutate_policy
}


def defaulters_for(purge_mode_spelling: str) -> Mapping[GroupKind, Defaulter]:
    """The defaulters that write purge modes in `purge_mode_spelling` ("new" or "legacy")."""
    return LEGACY_DEFAULTERS if purge_mode_spelling == "legacy" else DEFAULTERS
