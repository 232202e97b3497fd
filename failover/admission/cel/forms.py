"""How each admission rule is enforced without the relay's webhook: the one table of failover/admission/rules.py's
names, read by docs/design.md's "Admission without the webhook" and by the tests that hold the CEL policies equal to
the webhook.

- `Cel.DENY`, `Cel.WARN`, `Cel.MUTATE`: the rendered ValidatingAdmissionPolicy denies or warns with the same
  message, or the MutatingAdmissionPolicy makes the same change (failover/admission/cel/policy_rules.py,
  workload_rebalancer.py).
- `Schema`: Karmada's CRD schema refuses such an object before any admission policy or validating webhook sees it
  (a wrong type, a missing required field, a value outside an enum); the rule stays for `check`, which reads files.
- `WebhookOnly`: CEL cannot decide it; `why` says what it needs. In CEL mode the rule is not enforced at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from failover.admission.rules import Rule
from failover.core.verdict import Verdict


class Cel(StrEnum):
    DENY = "CEL deny"
    WARN = "CEL warn"
    MUTATE = "CEL mutate"


@dataclass(frozen=True)
class Schema:
    why: str

    def __str__(self) -> str:
        return "CRD schema"


@dataclass(frozen=True)
class WebhookOnly:
    why: str

    def __str__(self) -> str:
        return "webhook only"


Form = Cel | Schema | WebhookOnly

_JSONPATH = WebhookOnly("needs client-go's JSONPath parser (failover/core/jsonpath.py), which CEL does not have")

FORMS: dict[Rule, Form] = {
    Rule.WRONG_TYPE: Schema("every field the rules read has a type in Karmada's CRDs"),
    Rule.POLICY_SPEC: Schema("spec is required (resourceSelectors)"),
    Rule.PROPAGATE_DEPS: Cel.DENY,
    Rule.NEGATIVE_TOLERATION: Cel.DENY,
    Rule.UNKNOWN_PURGE_MODE: Schema("purgeMode is an enum"),
    Rule.PURGE_MODE_OF_SECTION: Schema("the cluster section's purgeMode enum has no Never"),
    Rule.GRACE_PERIOD_WITHOUT_GRACEFULLY: Cel.DENY,
    Rule.GRACE_PERIOD_NOT_POSITIVE: Cel.DENY,
    Rule.STATE_PRESERVATION_NEEDS_DIRECTLY: Cel.DENY,
    Rule.STATE_PRESERVATION_WITHOUT_RULES: Cel.DENY,
    Rule.RULE_SHAPE: Schema("rules are objects"),
    Rule.ALIAS_REQUIRED: Schema("aliasLabelName is required"),
    Rule.ALIAS_NOT_A_LABEL_KEY: Cel.DENY,
    Rule.ALIAS_DUPLICATE: Cel.DENY,
    Rule.JSONPATH_REQUIRED: Schema("jsonPath is required"),
    Rule.JSONPATH_UNPARSABLE: _JSONPATH,
    Rule.LEGACY_PURGE_MODE: Schema(
        "Karmada v1.19's enum has no legacy name; the mutation rewrites one before the schema is checked"
    ),
    Rule.ZERO_TOLERATION: Cel.WARN,
    Rule.MULTI_CLUSTER_PRESERVATION: Cel.WARN,
    Rule.JOB_ID_TYPO: _JSONPATH,
    Rule.JSONPATH_LABEL_VALUE: _JSONPATH,
    Rule.NO_HEALTH_INTERPRETATION: Cel.WARN,
    Rule.SINGLE_NAMED_CLUSTER: Cel.WARN,
    Rule.TOLERATES_EVERY_NO_EXECUTE: Cel.WARN,
    Rule.FAILBACK_TIE_BREAK: Cel.WARN,
    Rule.STATELESS_FLINK_FAILOVER: _JSONPATH,
    Rule.POLICY_DEFAULTS: Cel.MUTATE,
    # The rewrite is CEL; its warning is not: a MutatingAdmissionPolicy cannot warn, and the validating policies see
    # only the rewritten object.
    Rule.LEGACY_PURGE_MODE_REWRITE: WebhookOnly(
        "the rewrite itself is CEL mutate; its warning needs the object before the rewrite, which no CEL policy sees"
    ),
    Rule.REBALANCER_SPEC: Schema("spec is required"),
    Rule.NO_WORKLOADS: Schema("spec.workloads is required, with at least one item"),
    Rule.WORKLOAD_SHAPE: Schema("workloads are objects"),
    Rule.WORKLOAD_FIELD_REQUIRED: Cel.DENY,
    Rule.DUPLICATE_WORKLOAD: Cel.DENY,
    Rule.NEGATIVE_TTL: Cel.DENY,
}


def expected_without_webhook(verdict: Verdict) -> Verdict:
    """What the CEL policies alone answer for an object the schema accepts, given the webhook's `verdict`: the
    same, less what only the webhook decides."""
    return Verdict(
        denials=tuple(d for d in verdict.denials if FORMS[Rule(d.rule)] is Cel.DENY),
        warnings=tuple(w for w in verdict.warnings if FORMS[Rule(verdict.warning_rules[w])] is Cel.WARN),
        patch=verdict.patch,
    )
