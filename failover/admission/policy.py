"""Validation and defaulting of the failover fields of PropagationPolicy and ClusterPropagationPolicy.

Karmada's own webhook (`pkg/webhook/propagationpolicy/validating.go`, `pkg/util/validation/validation.go`) accepts
several failover configurations that then silently do nothing. These rules refuse them at `kubectl apply` time
with a message that says how to fix the policy, and warn where a configuration works but probably not as meant.

`validate_policy` judges the object as it will be after `default_policy`'s patch, so the result is the same
whether or not the mutating webhook ran first (and the offline `check` needs no second pass).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from failover.admission.failover_warnings import failover_warnings
from failover.admission.rules import Rule
from failover.core.api import (
    CLUSTER_PURGE_MODES,
    DEFAULT_GRACE_PERIOD_SECONDS,
    DEFAULT_PURGE_MODE,
    DEFAULT_TOLERATION_SECONDS,
    FLINK_GROUP,
    PURGE_MODE_NAMES,
    PurgeMode,
)
from failover.core.fields import (
    bool_at,
    int32_at,
    list_at,
    mapping_at,
    non_negative_int32_at,
    required_spec,
    str_at,
)
from failover.core.jsonpath import JSONPathSyntaxError, parse_template
from failover.core.labels import label_key_problems, shown_label_key
from failover.core.placement import placement_is_single_cluster
from failover.core.verdict import Findings, Verdict

APPLICATION = "spec.failover.application"
CLUSTER = "spec.failover.cluster"

# Kubernetes' operator field is `jobId`; Karmada's documentation and release notes spell it `jobID`, and with
# Karmada's missing-key-is-error evaluation that typo blocks the eviction itself (`buildTaskOptions`).
FLINK_JOB_ID_TYPO = "jobID"


def validate_policy(policy: Mapping[str, Any]) -> Verdict:
    """Every deny and warning of docs/design.md "Policy admission" for one (Cluster)PropagationPolicy."""
    findings = Findings()
    spec = required_spec(
        findings, policy, "a PropagationPolicy or ClusterPropagationPolicy", "is required", Rule.POLICY_SPEC
    )
    if spec is None:
        return findings.verdict()
    failover = mapping_at(findings, spec, "failover", "spec.failover")
    if failover is None:
        return findings.verdict()
    targets_flink = _selects_flink(findings, spec)
    single_cluster = placement_is_single_cluster(spec.get("placement"))
    application = mapping_at(findings, failover, "application", APPLICATION)
    if application is not None:
        _validate_application(findings, spec, application, targets_flink, single_cluster)
    cluster = mapping_at(findings, failover, "cluster", CLUSTER)
    if cluster is not None:
        _validate_cluster(findings, cluster, targets_flink, single_cluster)
    for warning in failover_warnings(policy):  # failover that cannot happen (failover/admission/failover_warnings.py)
        findings.warn(warning.text, warning.rule)
    return findings.verdict()


def default_policy(policy: Mapping[str, Any], legacy_purge_modes: bool = False) -> tuple[dict[str, Any], ...]:
    """JSONPatch operations that fill Karmada's defaults into `spec.failover`; none when nothing is missing.

    tolerationSeconds 300 and both purgeModes Gracefully are Karmada's CRD defaults, the application's
    gracePeriodSeconds 600 comes from its mutating webhook (`SetDefaultGracePeriodSeconds`; the cluster section has
    no grace period). A kube-apiserver fills the CRD defaults before any webhook runs; filling them here too keeps
    `/mutate` of a bare review and `check --rules-only` equal to the stored object. With `legacy_purge_modes` a purge
    mode is written as Graciously, the only spelling the v1.12-v1.14 CRD enum accepts. Fields of the wrong type are
    left alone for validation to refuse.
    """
    spec = policy.get("spec") if isinstance(policy, dict) else None
    failover = spec.get("failover") if isinstance(spec, dict) else None
    if not isinstance(failover, dict):
        return ()
    default_purge_mode = (DEFAULT_PURGE_MODE.legacy if legacy_purge_modes else DEFAULT_PURGE_MODE).value
    ops = _application_defaults(failover.get("application"), default_purge_mode)
    cluster = failover.get("cluster")
    if isinstance(cluster, dict) and cluster.get("purgeMode") is None:
        ops.append({"op": "add", "path": "/spec/failover/cluster/purgeMode", "value": default_purge_mode})
    return tuple(ops)


def _application_defaults(application: Any, default_purge_mode: str) -> list[dict[str, Any]]:
    if not isinstance(application, dict):
        return []
    base = "/spec/failover/application"
    ops: list[dict[str, Any]] = []
    conditions = application.get("decisionConditions")
    if conditions is None:
        ops.append(
            {
                "op": "add",
                "path": f"{base}/decisionConditions",
                "value": {"tolerationSeconds": DEFAULT_TOLERATION_SECONDS},
            }
        )
    elif isinstance(conditions, dict) and conditions.get("tolerationSeconds") is None:
        ops.append(
            {"op": "add", "path": f"{base}/decisionConditions/tolerationSeconds", "value": DEFAULT_TOLERATION_SECONDS}
        )
    purge_mode = application.get("purgeMode")
    if purge_mode is None:
        purge_mode = default_purge_mode
        ops.append({"op": "add", "path": f"{base}/purgeMode", "value": purge_mode})
    if (
        _parse_purge_mode(purge_mode) in (PurgeMode.GRACEFULLY, PurgeMode.GRACIOUSLY)
        and application.get("gracePeriodSeconds") is None
    ):
        ops.append({"op": "add", "path": f"{base}/gracePeriodSeconds", "value": DEFAULT_GRACE_PERIOD_SECONDS})
    return ops


def mutate_policy(policy: Mapping[str, Any], legacy_purge_modes: bool = False) -> Verdict:
    """`/mutate` of a policy: Karmada's defaults (`default_policy`), and legacy purge-mode names rewritten.

    Karmada v1.19 removed `Immediately` and `Graciously` from the CRD enum with no conversion (karmada#7792), while its
    docs still print them; mutating webhooks run before schema validation, so the rewrite keeps such manifests working,
    with a warning asking for the new name. With `legacy_purge_modes` (Karmada v1.12-v1.14, whose enum knows only
    the legacy names) nothing is rewritten.
    """
    patch = list(default_policy(policy, legacy_purge_modes))
    warnings = []
    if not legacy_purge_modes:
        for path, pointer, mode in legacy_purge_modes_in(policy):
            patch.append({"op": "replace", "path": pointer, "value": mode.canonical.value})
            # Within the 120 characters a warning may have: write the new name in the manifest.
            warnings.append(f"{path}: {mode.value} rewritten to {mode.canonical.value} (removed in Karmada v1.19)")
    return Verdict(
        patch=tuple(patch),
        warnings=tuple(warnings),
        warning_rules=dict.fromkeys(warnings, Rule.LEGACY_PURGE_MODE_REWRITE),
    )


def legacy_purge_modes_in(obj: Mapping[str, Any]) -> list[tuple[str, str, PurgeMode]]:
    """(field path, JSON pointer, mode) of every legacy purge-mode name in a policy or binding: its failover sections
    and, in a binding, its graceful eviction tasks (the places Karmada v1.19's CRDs enumerate purge modes)."""
    spec = obj.get("spec") if isinstance(obj, dict) else None
    if not isinstance(spec, dict):
        return []
    found = []
    failover = spec.get("failover")
    for section in ("application", "cluster"):
        behaviour = failover.get(section) if isinstance(failover, dict) else None
        mode = _parse_purge_mode(behaviour.get("purgeMode")) if isinstance(behaviour, dict) else None
        if mode is not None and mode.is_legacy:
            found.append((f"spec.failover.{section}.purgeMode", f"/spec/failover/{section}/purgeMode", mode))
    tasks = spec.get("gracefulEvictionTasks")
    for index, task in enumerate(tasks if isinstance(tasks, list) else ()):
        mode = _parse_purge_mode(task.get("purgeMode")) if isinstance(task, dict) else None
        if mode is not None and mode.is_legacy:
            found.append(
                (
                    f"spec.gracefulEvictionTasks[{index}].purgeMode",
                    f"/spec/gracefulEvictionTasks/{index}/purgeMode",
                    mode,
                )
            )
    return found


def _parse_purge_mode(value: Any) -> PurgeMode | None:
    return PurgeMode(value) if isinstance(value, str) and value in PURGE_MODE_NAMES else None


ALL_PURGE_MODES = frozenset(PurgeMode)


def _names(choices: frozenset[PurgeMode]) -> str:
    return ", ".join(m.value for m in PurgeMode if m in choices and not m.is_legacy)


def _read_purge_mode(
    findings: Findings, section: Mapping[str, Any], path: str, allowed: frozenset[PurgeMode] | None = None
) -> PurgeMode | None:
    if section.get("purgeMode") is None:
        return DEFAULT_PURGE_MODE
    value = str_at(findings, section, "purgeMode", f"{path}.purgeMode")
    if value is None:
        return None
    mode = _parse_purge_mode(value)
    choices = allowed if allowed is not None else ALL_PURGE_MODES
    if mode is None:
        findings.deny(
            f"{path}.purgeMode",
            f"unknown purge mode {value[:40]!r}; use one of {_names(choices)}",
            Rule.UNKNOWN_PURGE_MODE,
        )
        return None
    if mode not in choices:
        findings.deny(
            f"{path}.purgeMode",
            f"{mode.value} is not a purge mode of this section; use one of {_names(choices)}",
            Rule.PURGE_MODE_OF_SECTION,
        )
        return None
    if mode.is_legacy:
        findings.warn(
            f"{path}.purgeMode: {mode.value} is a legacy name removed in Karmada v1.19; use {mode.canonical.value}",
            Rule.LEGACY_PURGE_MODE,
        )
    return mode


def _validate_application(
    findings: Findings,
    spec: Mapping[str, Any],
    application: Mapping[str, Any],
    targets_flink: bool,
    single_cluster: bool,
) -> None:
    """Rules for `spec.failover.application` (Karmada validation rules 3-8, plus the silent traps)."""
    propagate_deps = bool_at(findings, spec, "propagateDeps", "spec.propagateDeps")
    wrong_type = propagate_deps is None and spec.get("propagateDeps") is not None
    if propagate_deps is not True and not wrong_type:
        # Karmada's failover controller skips bindings without propagateDeps: failover would never happen
        # (karmada#3738).
        findings.deny(
            "spec.propagateDeps",
            "must be true when spec.failover.application is set; add propagateDeps: true",
            Rule.PROPAGATE_DEPS,
        )
    conditions = mapping_at(findings, application, "decisionConditions", f"{APPLICATION}.decisionConditions")
    if conditions is not None:
        toleration_path = f"{APPLICATION}.decisionConditions.tolerationSeconds"
        toleration = non_negative_int32_at(
            findings,
            conditions,
            "tolerationSeconds",
            toleration_path,
            f"for the default {DEFAULT_TOLERATION_SECONDS}",
            Rule.NEGATIVE_TOLERATION,
        )
        if toleration == 0:
            findings.warn(f"{toleration_path}: 0 fails over on the first unhealthy report", Rule.ZERO_TOLERATION)

    purge_mode = _read_purge_mode(findings, application, APPLICATION)
    grace_path = f"{APPLICATION}.gracePeriodSeconds"
    grace = int32_at(findings, application, "gracePeriodSeconds", grace_path)
    if grace is not None:
        if purge_mode is not None and not purge_mode.is_gracefully:
            findings.deny(
                grace_path,
                f"only applies to purgeMode Gracefully, not {purge_mode.value}; remove it or set purgeMode: Gracefully",
                Rule.GRACE_PERIOD_WITHOUT_GRACEFULLY,
            )
        elif grace <= 0:
            findings.deny(
                grace_path,
                f"must be greater than 0, got {grace}; omit it for the default {DEFAULT_GRACE_PERIOD_SECONDS}",
                Rule.GRACE_PERIOD_NOT_POSITIVE,
            )

    _validate_state_preservation(findings, application, APPLICATION, purge_mode, targets_flink, single_cluster)


def _validate_cluster(
    findings: Findings, cluster: Mapping[str, Any], targets_flink: bool, single_cluster: bool
) -> None:
    """Rules for `spec.failover.cluster` (v1.15+): purge mode without Never, and the same state preservation rules."""
    purge_mode = _read_purge_mode(findings, cluster, CLUSTER, allowed=CLUSTER_PURGE_MODES)
    _validate_state_preservation(findings, cluster, CLUSTER, purge_mode, targets_flink, single_cluster)


def _validate_state_preservation(
    findings: Findings,
    section: Mapping[str, Any],
    path: str,
    purge_mode: PurgeMode | None,
    targets_flink: bool,
    single_cluster: bool,
) -> None:
    sp_path = f"{path}.statePreservation"
    preservation = mapping_at(findings, section, "statePreservation", sp_path)
    if preservation is None:
        return
    if purge_mode is not None and not purge_mode.is_directly:
        # Karmada accepts this and then never injects (binding controller: only the Directly task is used).
        findings.deny(
            sp_path,
            f"needs purgeMode Directly, but it is {purge_mode.value}: Karmada would accept it "
            "and never inject the preserved state; set purgeMode: Directly",
            Rule.STATE_PRESERVATION_NEEDS_DIRECTLY,
        )
    rules = list_at(findings, preservation, "rules", f"{sp_path}.rules")
    if rules is None and preservation.get("rules") is not None:
        return
    if not rules:
        findings.deny(
            f"{sp_path}.rules",
            "needs at least one rule of aliasLabelName and jsonPath",
            Rule.STATE_PRESERVATION_WITHOUT_RULES,
        )
        return
    if not single_cluster:
        findings.warn(
            f"{sp_path}: placement may pick >1 cluster; injection needs one: set maxGroups: 1",
            Rule.MULTI_CLUSTER_PRESERVATION,
        )
    seen: set[str] = set()
    for index, rule in enumerate(rules):
        rule_path = f"{sp_path}.rules[{index}]"
        if not isinstance(rule, dict):
            findings.deny(rule_path, "must be an object with aliasLabelName and jsonPath", Rule.RULE_SHAPE)
            continue
        _validate_rule(findings, rule, rule_path, seen, targets_flink)


def _validate_rule(
    findings: Findings, rule: Mapping[str, Any], rule_path: str, seen: set[str], targets_flink: bool
) -> None:
    alias = str_at(findings, rule, "aliasLabelName", f"{rule_path}.aliasLabelName")
    if alias is None:
        if rule.get("aliasLabelName") is None:
            findings.deny(
                f"{rule_path}.aliasLabelName", "is required: the label key that carries the state", Rule.ALIAS_REQUIRED
            )
    else:
        problems = label_key_problems(alias)
        if problems:
            findings.deny(
                f"{rule_path}.aliasLabelName",
                f"{shown_label_key(alias)} is not a valid label key: {problems[0]}",
                Rule.ALIAS_NOT_A_LABEL_KEY,
            )
        elif alias in seen:
            findings.deny(
                f"{rule_path}.aliasLabelName",
                f"{alias!r} is used by another rule; label keys must be unique",
                Rule.ALIAS_DUPLICATE,
            )
        seen.add(alias)
    json_path = str_at(findings, rule, "jsonPath", f"{rule_path}.jsonPath")
    if json_path is None:
        if rule.get("jsonPath") is None:
            findings.deny(
                f"{rule_path}.jsonPath", "is required, for example '{ .jobStatus.jobId }'", Rule.JSONPATH_REQUIRED
            )
        return
    try:
        template = parse_template(json_path)
    except JSONPathSyntaxError as error:
        findings.deny(f"{rule_path}.jsonPath", f"does not parse: {error}", Rule.JSONPATH_UNPARSABLE)
        return
    if targets_flink and FLINK_JOB_ID_TYPO in template.field_names():
        findings.warn(f"{rule_path}.jsonPath: use jobId: FlinkDeployment status has no jobID", Rule.JOB_ID_TYPO)
    # Valid for Karmada (client-go's jsonpath evaluates it), but the label value may not be what was meant.
    for problem in template.unusable_as_label():
        findings.warn(f"{rule_path}.jsonPath: {problem}", Rule.JSONPATH_LABEL_VALUE)


def _selects_flink(findings: Findings, spec: Mapping[str, Any]) -> bool:
    selectors = list_at(findings, spec, "resourceSelectors", "spec.resourceSelectors")
    for selector in selectors or ():
        if not isinstance(selector, dict):
            continue
        api_version = selector.get("apiVersion")
        if (
            selector.get("kind") == "FlinkDeployment"
            and isinstance(api_version, str)
            and (api_version.split("/", 1)[0] == FLINK_GROUP)
        ):
            return True
    return False
