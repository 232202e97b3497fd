"""The names of the relay's admission rules: every denial and warning a policy or WorkloadRebalancer rule gives
carries one (`Findings.deny(..., rule)`, `Findings.warn(..., rule)`).

They are what ties the two ways the rules are enforced together: the webhook runs the Python rules
(failover/admission/policy.py, rebalancer_rules.py, failover_warnings.py), and `failover-relay manifests
admission-policies` renders the same rules as ValidatingAdmissionPolicies and a MutatingAdmissionPolicy
(failover/admission/cel/). `failover.admission.cel.forms.FORMS` says for each name how it is enforced without the
webhook (a CEL denial, warning or mutation, the CRD schema, or the webhook only, with why); a name without a form
fails tests/failover/admission/test_cel_forms.py.
"""

from __future__ import annotations

from enum import StrEnum

from failover.core.verdict import WRONG_TYPE


class Rule(StrEnum):
    # Any object: a field of the wrong type (failover.core.fields).
    WRONG_TYPE = WRONG_TYPE
    # (Cluster)PropagationPolicy, denials.
    POLICY_SPEC = "policy-spec"
    PROPAGATE_DEPS = "propagate-deps"
    NEGATIVE_TOLERATION = "negative-toleration"
    UNKNOWN_PURGE_MODE = "unknown-purge-mode"
    PURGE_MODE_OF_SECTION = "purge-mode-of-section"
    GRACE_PERIOD_WITHOUT_GRACEFULLY = "grace-period-without-gracefully"
    GRACE_PERIOD_NOT_POSITIVE = "grace-period-not-positive"
    STATE_PRESERVATION_NEEDS_DIRECTLY = "state-preservation-needs-directly"
    STATE_PRESERVATION_WITHOUT_RULES = "state-preservation-without-rules"
    RULE_SHAPE = "rule-shape"
    ALIAS_REQUIRED = "alias-required"
    ALIAS_NOT_A_LABEL_KEY = "alias-not-a-label-key"
    ALIAS_DUPLICATE = "alias-duplicate"
    JSONPATH_REQUIRED = "jsonpath-required"
    JSONPATH_UNPARSABLE = "jsonpath-unparsable"
    # (Cluster)PropagationPolicy, warnings.
    LEGACY_PURGE_MODE = "legacy-purge-mode"
    ZERO_TOLERATION = "zero-toleration"
    MULTI_CLUSTER_PRESERVATION = "multi-cluster-preservation"
    JOB_ID_TYPO = "job-id-typo"
    JSONPATH_LABEL_VALUE = "jsonpath-label-value"
    NO_HEALTH_INTERPRETATION = "no-health-interpretation"
    SINGLE_NAMED_CLUSTER = "single-named-cluster"
    TOLERATES_EVERY_NO_EXECUTE = "tolerates-every-no-execute"
    FAILBACK_TIE_BREAK = "failback-tie-break"
    STATELESS_FLINK_FAILOVER = "stateless-flink-failover"
    # (Cluster)PropagationPolicy, mutations (failover/admission/policy.py mutate_policy).
    POLICY_DEFAULTS = "policy-defaults"
    LEGACY_PURGE_MODE_REWRITE = "legacy-purge-mode-rewrite"
    # WorkloadRebalancer, denials.
    REBALANCER_SPEC = "rebalancer-spec"
    NO_WORKLOADS = "no-workloads"
    WORKLOAD_SHAPE = "workload-shape"
    WORKLOAD_FIELD_REQUIRED = "workload-field-required"
    DUPLICATE_WORKLOAD = "duplicate-workload"
    NEGATIVE_TTL = "negative-ttl"
