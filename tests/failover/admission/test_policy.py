"""validate_policy: each deny and warning of docs/design.md "Policy admission", on documented objects and edge cases."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from failover.admission.policy import validate_policy
from failover.core.verdict import MAX_WARNING_LENGTH
from tests.failover.karmada_examples import (
    DELETE,
    DOC_DECISION_CONDITIONS,
    DOC_FLINK_STATE_PRESERVATION,
    DOC_NGINX_EXAMPLE,
    DOC_PURGE_GRACIOUSLY,
    DOC_PURGE_NEVER,
    RELEASE_NOTES_FLINK,
    RELEASE_NOTES_NGINX_PP,
    load,
    with_changes,
    working_flink_policy,
)

APP = "spec.failover.application"
CLUSTER = "spec.failover.cluster"
APP_RULE = f"{APP}.statePreservation.rules.0"
APP_RULE_PATH = f"{APP}.statePreservation.rules[0]"
CLUSTER_RULE = f"{CLUSTER}.statePreservation.rules.0"
CLUSTER_RULE_PATH = f"{CLUSTER}.statePreservation.rules[0]"

LEGACY = "legacy name removed in Karmada v1.19"
MULTI_CLUSTER = "placement may pick >1 cluster"
JOB_ID_TYPO = "use jobId: FlinkDeployment status has no jobID"
ZERO_TOLERATION = "0 fails over on the first unhealthy report"


def denied_paths(policy: Any) -> list[str]:
    return [denial.path for denial in validate_policy(policy).denials]


def assert_warnings_fit(warnings: tuple[str, ...]) -> None:
    for warning in warnings:
        assert len(warning) <= MAX_WARNING_LENGTH, warning
        assert not warning.endswith("…"), f"warning was clipped, losing its advice: {warning}"


# --- The documented examples ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("example", "denials", "warnings"),
    [
        # The guide's snippets abbreviate the spec, so they lack propagateDeps, which Karmada itself requires.
        pytest.param(DOC_DECISION_CONDITIONS, ["spec.propagateDeps"], [], id="guide-decision-conditions"),
        pytest.param(DOC_PURGE_GRACIOUSLY, ["spec.propagateDeps"], [LEGACY], id="guide-purge-graciously"),
        pytest.param(DOC_PURGE_NEVER, ["spec.propagateDeps"], [], id="guide-purge-never"),
        pytest.param(DOC_NGINX_EXAMPLE, [], [], id="guide-nginx-example"),
        pytest.param(DOC_FLINK_STATE_PRESERVATION, ["spec.propagateDeps"], [LEGACY, JOB_ID_TYPO], id="guide-flink"),
        pytest.param(RELEASE_NOTES_FLINK, ["spec.propagateDeps"], [LEGACY, MULTI_CLUSTER], id="v1.12-notes-flink"),
        pytest.param(RELEASE_NOTES_NGINX_PP, [], [], id="v1.12-notes-preserve-resources"),
    ],
)
def test_documented_examples(example: str, denials: list[str], warnings: list[str]) -> None:
    verdict = validate_policy(load(example))

    assert [denial.path for denial in verdict.denials] == denials
    assert len(verdict.warnings) == len(warnings)
    for expected, warning in zip(warnings, verdict.warnings, strict=True):
        assert expected in warning
    assert_warnings_fit(verdict.warnings)


@pytest.mark.parametrize("example", [DOC_DECISION_CONDITIONS, DOC_PURGE_GRACIOUSLY, DOC_PURGE_NEVER])
def test_documented_snippets_pass_once_propagate_deps_is_added(example: str) -> None:
    assert validate_policy(with_changes(load(example), {"spec.propagateDeps": True})).allowed


@pytest.mark.parametrize("kind", ["PropagationPolicy", "ClusterPropagationPolicy"])
def test_working_flink_policy_is_allowed_without_warnings(kind: str) -> None:
    verdict = validate_policy(working_flink_policy(kind))

    assert verdict.allowed, verdict.message
    assert verdict.warnings == ()


def test_policy_without_failover_is_not_judged() -> None:
    policy = with_changes(working_flink_policy(), {"spec.failover": DELETE, "spec.propagateDeps": DELETE})

    assert validate_policy(policy) == validate_policy(load(RELEASE_NOTES_NGINX_PP)) == validate_policy({"spec": {}})
    assert validate_policy(policy).allowed


# --- Denials --------------------------------------------------------------------------------------------------

HUGE = "x" * 100_000

DENIALS = [
    # propagateDeps (Karmada rule 3; without it the failover controller skips the binding, #3738).
    ("propagate-deps-missing", {"spec.propagateDeps": DELETE}, "spec.propagateDeps", "add propagateDeps: true"),
    ("propagate-deps-false", {"spec.propagateDeps": False}, "spec.propagateDeps", "add propagateDeps: true"),
    ("propagate-deps-null", {"spec.propagateDeps": None}, "spec.propagateDeps", "must be true"),
    ("propagate-deps-string", {"spec.propagateDeps": "true"}, "spec.propagateDeps", "true or false, got a string"),
    ("propagate-deps-int", {"spec.propagateDeps": 1}, "spec.propagateDeps", "true or false, got a number"),
    # tolerationSeconds.
    (
        "toleration-negative",
        {f"{APP}.decisionConditions.tolerationSeconds": -1},
        f"{APP}.decisionConditions.tolerationSeconds",
        "must be 0 or more, got -1; omit it for the default 300",
    ),
    (
        "toleration-int32-min",
        {f"{APP}.decisionConditions.tolerationSeconds": -(2**31)},
        f"{APP}.decisionConditions.tolerationSeconds",
        "must be 0 or more",
    ),
    (
        "toleration-int32-overflow",
        {f"{APP}.decisionConditions.tolerationSeconds": 2**31},
        f"{APP}.decisionConditions.tolerationSeconds",
        "between -2147483648 and 2147483647",
    ),
    (
        "toleration-int64-underflow",
        {f"{APP}.decisionConditions.tolerationSeconds": -(2**63)},
        f"{APP}.decisionConditions.tolerationSeconds",
        "32-bit integer",
    ),
    (
        "toleration-5000-digits",
        {f"{APP}.decisionConditions.tolerationSeconds": 10**5000},
        f"{APP}.decisionConditions.tolerationSeconds",
        "32-bit integer",
    ),
    (
        "toleration-string",
        {f"{APP}.decisionConditions.tolerationSeconds": "300"},
        f"{APP}.decisionConditions.tolerationSeconds",
        "must be an integer, got a string",
    ),
    (
        "toleration-fraction",
        {f"{APP}.decisionConditions.tolerationSeconds": 300.5},
        f"{APP}.decisionConditions.tolerationSeconds",
        "must be an integer, got a number",
    ),
    (
        "toleration-infinity",
        {f"{APP}.decisionConditions.tolerationSeconds": float("inf")},
        f"{APP}.decisionConditions.tolerationSeconds",
        "must be an integer",
    ),
    (
        "toleration-nan",
        {f"{APP}.decisionConditions.tolerationSeconds": float("nan")},
        f"{APP}.decisionConditions.tolerationSeconds",
        "must be an integer",
    ),
    (
        "toleration-bool",
        {f"{APP}.decisionConditions.tolerationSeconds": True},
        f"{APP}.decisionConditions.tolerationSeconds",
        "must be an integer, got a boolean",
    ),
    (
        "toleration-list",
        {f"{APP}.decisionConditions.tolerationSeconds": [300]},
        f"{APP}.decisionConditions.tolerationSeconds",
        "must be an integer, got a list",
    ),
    (
        "decision-conditions-list",
        {f"{APP}.decisionConditions": [{"tolerationSeconds": 300}]},
        f"{APP}.decisionConditions",
        "must be an object, got a list",
    ),
    # gracePeriodSeconds (Karmada rules 5 and 7).
    (
        "grace-with-directly",
        {f"{APP}.statePreservation": DELETE, f"{APP}.gracePeriodSeconds": 600},
        f"{APP}.gracePeriodSeconds",
        "not Directly; remove it or set purgeMode: Gracefully",
    ),
    (
        "grace-with-immediately",
        {f"{APP}.statePreservation": DELETE, f"{APP}.purgeMode": "Immediately", f"{APP}.gracePeriodSeconds": 600},
        f"{APP}.gracePeriodSeconds",
        "not Immediately; remove it or set purgeMode: Gracefully",
    ),
    (
        "grace-with-never",
        {f"{APP}.statePreservation": DELETE, f"{APP}.purgeMode": "Never", f"{APP}.gracePeriodSeconds": 600},
        f"{APP}.gracePeriodSeconds",
        "not Never; remove it or set purgeMode: Gracefully",
    ),
    (
        "grace-zero",
        {f"{APP}.statePreservation": DELETE, f"{APP}.purgeMode": "Gracefully", f"{APP}.gracePeriodSeconds": 0},
        f"{APP}.gracePeriodSeconds",
        "must be greater than 0, got 0; omit it for the default 600",
    ),
    (
        "grace-negative-graciously",
        {f"{APP}.statePreservation": DELETE, f"{APP}.purgeMode": "Graciously", f"{APP}.gracePeriodSeconds": -30},
        f"{APP}.gracePeriodSeconds",
        "must be greater than 0, got -30",
    ),
    (
        "grace-zero-default-purge-mode",
        {f"{APP}.statePreservation": DELETE, f"{APP}.purgeMode": DELETE, f"{APP}.gracePeriodSeconds": 0},
        f"{APP}.gracePeriodSeconds",
        "must be greater than 0",
    ),
    (
        "grace-overflow",
        {f"{APP}.statePreservation": DELETE, f"{APP}.purgeMode": "Gracefully", f"{APP}.gracePeriodSeconds": 2**31},
        f"{APP}.gracePeriodSeconds",
        "32-bit integer",
    ),
    (
        "grace-string",
        {f"{APP}.statePreservation": DELETE, f"{APP}.purgeMode": "Gracefully", f"{APP}.gracePeriodSeconds": "10m"},
        f"{APP}.gracePeriodSeconds",
        "must be an integer",
    ),
    # purgeMode.
    (
        "purge-unknown",
        {f"{APP}.purgeMode": "Soon"},
        f"{APP}.purgeMode",
        "unknown purge mode 'Soon'; use one of Directly, Gracefully, Never",
    ),
    ("purge-wrong-case", {f"{APP}.purgeMode": "directly"}, f"{APP}.purgeMode", "unknown purge mode 'directly'"),
    ("purge-empty", {f"{APP}.purgeMode": ""}, f"{APP}.purgeMode", "unknown purge mode ''"),
    ("purge-number", {f"{APP}.purgeMode": 1}, f"{APP}.purgeMode", "must be a string, got a number"),
    ("purge-map", {f"{APP}.purgeMode": {"mode": "Directly"}}, f"{APP}.purgeMode", "must be a string, got an object"),
    ("purge-huge", {f"{APP}.purgeMode": HUGE}, f"{APP}.purgeMode", "unknown purge mode 'xxxx"),
    (
        "cluster-purge-never",
        {f"{CLUSTER}.purgeMode": "Never"},
        f"{CLUSTER}.purgeMode",
        "Never is not a purge mode of this section; use one of Directly, Gracefully",
    ),
    (
        "cluster-purge-unknown",
        {f"{CLUSTER}.purgeMode": "Later"},
        f"{CLUSTER}.purgeMode",
        "use one of Directly, Gracefully",
    ),
    # statePreservation needs Directly (Karmada accepts the others and silently never injects).
    (
        "state-with-gracefully",
        {f"{APP}.purgeMode": "Gracefully", f"{APP}.gracePeriodSeconds": 600},
        f"{APP}.statePreservation",
        "but it is Gracefully: Karmada would accept it",
    ),
    ("state-with-graciously", {f"{APP}.purgeMode": "Graciously"}, f"{APP}.statePreservation", "but it is Graciously"),
    ("state-with-never", {f"{APP}.purgeMode": "Never"}, f"{APP}.statePreservation", "set purgeMode: Directly"),
    (
        "state-with-default-purge-mode",
        {f"{APP}.purgeMode": DELETE},
        f"{APP}.statePreservation",
        "but it is Gracefully: Karmada would accept it",
    ),
    (
        "cluster-state-with-gracefully",
        {f"{CLUSTER}.purgeMode": "Gracefully"},
        f"{CLUSTER}.statePreservation",
        "set purgeMode: Directly",
    ),
    (
        "cluster-state-with-default-purge-mode",
        {f"{CLUSTER}.purgeMode": DELETE},
        f"{CLUSTER}.statePreservation",
        "but it is Gracefully",
    ),
    (
        "state-preservation-list",
        {f"{APP}.statePreservation": []},
        f"{APP}.statePreservation",
        "must be an object, got a list",
    ),
    # rules.
    (
        "rules-empty",
        {f"{APP}.statePreservation.rules": []},
        f"{APP}.statePreservation.rules",
        "needs at least one rule of aliasLabelName and jsonPath",
    ),
    ("rules-null", {f"{APP}.statePreservation.rules": None}, f"{APP}.statePreservation.rules", "at least one rule"),
    ("rules-missing", {f"{APP}.statePreservation": {}}, f"{APP}.statePreservation.rules", "at least one rule"),
    (
        "cluster-rules-empty",
        {f"{CLUSTER}.statePreservation.rules": []},
        f"{CLUSTER}.statePreservation.rules",
        "at least one rule",
    ),
    (
        "rules-map",
        {f"{APP}.statePreservation.rules": {"aliasLabelName": "a", "jsonPath": "{.a}"}},
        f"{APP}.statePreservation.rules",
        "must be a list, got an object",
    ),
    (
        "rule-string",
        {f"{APP}.statePreservation.rules": ["{ .jobStatus.jobId }"]},
        APP_RULE_PATH,
        "must be an object with aliasLabelName and jsonPath",
    ),
    # aliasLabelName.
    (
        "alias-missing",
        {f"{APP_RULE}.aliasLabelName": DELETE},
        f"{APP_RULE_PATH}.aliasLabelName",
        "is required: the label key that carries the state",
    ),
    ("alias-null", {f"{APP_RULE}.aliasLabelName": None}, f"{APP_RULE_PATH}.aliasLabelName", "is required"),
    (
        "alias-empty",
        {f"{APP_RULE}.aliasLabelName": ""},
        f"{APP_RULE_PATH}.aliasLabelName",
        "'' is not a valid label key: must be a non-empty string",
    ),
    ("alias-number", {f"{APP_RULE}.aliasLabelName": 7}, f"{APP_RULE_PATH}.aliasLabelName", "must be a string"),
    (
        "alias-space",
        {f"{APP_RULE}.aliasLabelName": "failover jobid"},
        f"{APP_RULE_PATH}.aliasLabelName",
        "name part must be alphanumerics",
    ),
    (
        "alias-two-slashes",
        {f"{APP_RULE}.aliasLabelName": "application.karmada.io/failover/state/jobid"},
        f"{APP_RULE_PATH}.aliasLabelName",
        "at most one '/'",
    ),
    (
        "alias-uppercase-prefix",
        {f"{APP_RULE}.aliasLabelName": "Application.Karmada.io/failover-jobid"},
        f"{APP_RULE_PATH}.aliasLabelName",
        "lowercase DNS subdomain",
    ),
    (
        "alias-empty-prefix",
        {f"{APP_RULE}.aliasLabelName": "/failover-jobid"},
        f"{APP_RULE_PATH}.aliasLabelName",
        "prefix before '/' must not be empty",
    ),
    (
        "alias-empty-name",
        {f"{APP_RULE}.aliasLabelName": "application.karmada.io/"},
        f"{APP_RULE_PATH}.aliasLabelName",
        "name part must not be empty",
    ),
    (
        "alias-name-64",
        {f"{APP_RULE}.aliasLabelName": "a" * 64},
        f"{APP_RULE_PATH}.aliasLabelName",
        "at most 63 characters",
    ),
    (
        "alias-unicode",
        {f"{APP_RULE}.aliasLabelName": "application.karmada.io/jöbid"},
        f"{APP_RULE_PATH}.aliasLabelName",
        "name part must be alphanumerics",
    ),
    ("alias-huge", {f"{APP_RULE}.aliasLabelName": HUGE}, f"{APP_RULE_PATH}.aliasLabelName", "not a valid label key"),
    (
        "cluster-alias-invalid",
        {f"{CLUSTER_RULE}.aliasLabelName": "-jobid"},
        f"{CLUSTER_RULE_PATH}.aliasLabelName",
        "not a valid label key",
    ),
    (
        "alias-duplicated",
        {
            f"{APP}.statePreservation.rules": [
                {"aliasLabelName": "application.karmada.io/failover-jobid", "jsonPath": "{ .jobStatus.jobId }"},
                {"aliasLabelName": "application.karmada.io/failover-jobid", "jsonPath": "{ .jobStatus.jobName }"},
            ]
        },
        f"{APP}.statePreservation.rules[1].aliasLabelName",
        "'application.karmada.io/failover-jobid' is used by another rule; label keys must be unique",
    ),
    # jsonPath.
    (
        "json-path-missing",
        {f"{APP_RULE}.jsonPath": DELETE},
        f"{APP_RULE_PATH}.jsonPath",
        "is required, for example '{ .jobStatus.jobId }'",
    ),
    ("json-path-number", {f"{APP_RULE}.jsonPath": 1}, f"{APP_RULE_PATH}.jsonPath", "must be a string"),
    (
        "json-path-unclosed",
        {f"{APP_RULE}.jsonPath": "{ .jobStatus.jobId"},
        f"{APP_RULE_PATH}.jsonPath",
        "does not parse: unclosed action",
    ),
    (
        "json-path-bad-subscript",
        {f"{APP_RULE}.jsonPath": "{ .jobStatus[jobId] }"},
        f"{APP_RULE_PATH}.jsonPath",
        "invalid array index jobId",
    ),
    (
        "json-path-end-without-range",
        {f"{APP_RULE}.jsonPath": "{ .a }{end}"},
        f"{APP_RULE_PATH}.jsonPath",
        "{end} without a {range}",
    ),
    (
        "json-path-bad-filter",
        {f"{APP_RULE}.jsonPath": "{ .jobs[?(@.state == ] }"},
        f"{APP_RULE_PATH}.jsonPath",
        "does not parse",
    ),
    ("json-path-huge", {f"{APP_RULE}.jsonPath": "{ .a }" + HUGE}, f"{APP_RULE_PATH}.jsonPath", "longer than 1024"),
    (
        "cluster-json-path-bad",
        {f"{CLUSTER_RULE}.jsonPath": "{ jobStatus.jobId }"},
        f"{CLUSTER_RULE_PATH}.jsonPath",
        "a path starts with '.'",
    ),
    # Shapes.
    ("failover-list", {"spec.failover": [{"application": {}}]}, "spec.failover", "must be an object, got a list"),
    ("application-string", {f"{APP}": "enabled"}, APP, "must be an object, got a string"),
    ("cluster-list", {f"{CLUSTER}": ["Directly"]}, CLUSTER, "must be an object, got a list"),
    (
        "resource-selectors-map",
        {"spec.resourceSelectors": {"kind": "FlinkDeployment"}},
        "spec.resourceSelectors",
        "must be a list, got an object",
    ),
]


@pytest.mark.parametrize(("changes", "path", "message"), [case[1:] for case in DENIALS], ids=[c[0] for c in DENIALS])
def test_denial(changes: dict[str, Any], path: str, message: str) -> None:
    verdict = validate_policy(with_changes(working_flink_policy(), changes))

    assert not verdict.allowed
    matching = [denial for denial in verdict.denials if denial.path == path]
    assert matching, f"no denial at {path}: {verdict.message}"
    assert any(message in denial.message for denial in matching), verdict.message
    # The deny line kubectl prints names the field: `spec.x.y: message`.
    assert f"{path}: " in verdict.message
    # Huge or hostile values are never echoed whole.
    assert all(len(denial.message) < 300 for denial in verdict.denials), verdict.message


@pytest.mark.parametrize("kind", ["PropagationPolicy", "ClusterPropagationPolicy"])
def test_both_policy_kinds_get_the_same_denials(kind: str) -> None:
    policy = with_changes(working_flink_policy(kind), {"spec.propagateDeps": False, f"{APP}.purgeMode": "Never"})

    assert denied_paths(policy) == ["spec.propagateDeps", f"{APP}.statePreservation"]


def test_every_problem_of_one_policy_is_reported_at_once() -> None:
    policy = with_changes(
        working_flink_policy(),
        {
            "spec.propagateDeps": DELETE,
            f"{APP}.decisionConditions.tolerationSeconds": -5,
            f"{APP}.purgeMode": "Never",
            f"{APP}.gracePeriodSeconds": 0,
            f"{APP_RULE}.jsonPath": "{ .jobStatus.jobId",
            f"{CLUSTER}.purgeMode": "Never",
        },
    )

    assert denied_paths(policy) == [
        "spec.propagateDeps",
        f"{APP}.decisionConditions.tolerationSeconds",
        f"{APP}.gracePeriodSeconds",
        f"{APP}.statePreservation",
        f"{APP_RULE_PATH}.jsonPath",
        f"{CLUSTER}.purgeMode",
    ]


def test_duplicated_alias_is_reported_once_per_repeat() -> None:
    rule = {"aliasLabelName": "application.karmada.io/failover-jobid", "jsonPath": "{ .jobStatus.jobId }"}
    policy = with_changes(working_flink_policy(), {f"{APP}.statePreservation.rules": [rule, rule, rule]})

    assert denied_paths(policy) == [
        f"{APP}.statePreservation.rules[1].aliasLabelName",
        f"{APP}.statePreservation.rules[2].aliasLabelName",
    ]


def test_same_alias_in_application_and_cluster_sections_is_allowed() -> None:
    alias = "application.karmada.io/failover-jobid"
    policy = with_changes(working_flink_policy(), {f"{CLUSTER_RULE}.aliasLabelName": alias})

    assert validate_policy(policy).allowed


def test_different_aliases_are_allowed() -> None:
    policy = with_changes(
        working_flink_policy(),
        {
            f"{APP}.statePreservation.rules": [
                {"aliasLabelName": "application.karmada.io/failover-jobid", "jsonPath": "{ .jobStatus.jobId }"},
                {"aliasLabelName": "example.com/job-name", "jsonPath": "job-{ .jobStatus.jobName }"},
            ]
        },
    )

    assert validate_policy(policy).allowed


@pytest.mark.parametrize(
    ("policy", "path"),
    [
        pytest.param({"kind": "PropagationPolicy"}, "spec", id="missing-spec"),
        pytest.param({"spec": None}, "spec", id="null-spec"),
        pytest.param({"spec": []}, "spec", id="list-spec"),
        pytest.param({"spec": "failover"}, "spec", id="string-spec"),
        pytest.param([], "(object)", id="object-is-list"),
        pytest.param("PropagationPolicy", "(object)", id="object-is-string"),
        pytest.param(None, "(object)", id="object-is-null"),
    ],
)
def test_malformed_objects_are_denied_not_raised(policy: Any, path: str) -> None:
    assert denied_paths(policy) == [path]


@pytest.mark.parametrize(
    "changes",
    [
        pytest.param({"spec.failover": None}, id="failover-null"),
        pytest.param({"spec.failover": {}}, id="failover-empty"),
        pytest.param({f"{APP}": None, f"{CLUSTER}": None}, id="sections-null"),
        pytest.param({f"{APP}.statePreservation": None, f"{CLUSTER}.statePreservation": None}, id="state-null"),
        pytest.param({f"{APP}.decisionConditions.tolerationSeconds": 2**31 - 1}, id="toleration-int32-max"),
        pytest.param({f"{APP}.decisionConditions.tolerationSeconds": 300.0}, id="toleration-integral-float"),
        pytest.param({f"{APP}.decisionConditions.tolerationSeconds": None}, id="toleration-null"),
        pytest.param({f"{APP}.decisionConditions": None}, id="decision-conditions-null"),
        pytest.param(
            {f"{APP}.statePreservation": DELETE, f"{APP}.purgeMode": "Gracefully", f"{APP}.gracePeriodSeconds": 1},
            id="grace-one-second",
        ),
        pytest.param(
            {f"{APP}.statePreservation": DELETE, f"{APP}.purgeMode": DELETE, f"{APP}.gracePeriodSeconds": 2**31 - 1},
            id="grace-int32-max-default-mode",
        ),
        pytest.param({f"{APP}.statePreservation": DELETE, f"{APP}.purgeMode": "Never"}, id="never-alone"),
        pytest.param({f"{APP_RULE}.aliasLabelName": "jobid"}, id="alias-without-prefix"),
        pytest.param({f"{APP_RULE}.aliasLabelName": "a" * 253 + "/" + "b" * 63}, id="alias-longest"),
        pytest.param({f"{APP_RULE}.jsonPath": "{ .jobStatus['jobId'] }"}, id="bracket-notation"),
        pytest.param({f"{APP_RULE}.jsonPath": "constant-{ .jobStatus.state }"}, id="literal-text"),
        pytest.param({f"{APP_RULE}.jsonPath": "{.jobStatus.jobId}"}, id="no-spaces"),
        pytest.param({f"{APP_RULE}.jsonPath": "{ $.jobStatus.jobId }"}, id="dollar-root"),
        pytest.param({f"{APP_RULE}.jsonPath": '{ .jobs[?(@.state == "RUNNING")].jobId }'}, id="filter"),
    ],
)
def test_allowed_variations(changes: dict[str, Any]) -> None:
    verdict = validate_policy(with_changes(working_flink_policy(), changes))

    assert verdict.allowed, verdict.message


# --- Warnings -------------------------------------------------------------------------------------------------

SINGLE_CLUSTER_PLACEMENTS = [
    pytest.param(
        {
            "clusterAffinity": {"clusterNames": ["member1", "member2"]},
            "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 1, "minGroups": 1}],
        },
        id="spread-by-cluster-max-1",
    ),
    # Karmada's mutating webhook defaults spreadByField to cluster when neither spreadBy* is set.
    pytest.param({"spreadConstraints": [{"maxGroups": 1, "minGroups": 1}]}, id="spread-defaults-to-cluster"),
    pytest.param(
        {
            "spreadConstraints": [
                {"spreadByField": "region", "maxGroups": 2},
                {"spreadByField": "cluster", "maxGroups": 1},
            ]
        },
        id="second-constraint",
    ),
    pytest.param(
        {
            "clusterAffinities": [
                {"affinityName": "primary", "clusterNames": ["member1"]},
                {"affinityName": "backup", "clusterNames": ["member2"]},
            ]
        },
        id="affinity-groups-of-one",
    ),
]

MULTI_CLUSTER_PLACEMENTS = [
    pytest.param(DELETE, id="no-placement"),
    pytest.param(None, id="null-placement"),
    pytest.param([], id="placement-list"),
    pytest.param({}, id="empty-placement"),
    pytest.param({"clusterAffinity": {"clusterNames": ["member1", "member2"]}}, id="two-cluster-names"),
    pytest.param({"clusterAffinity": {"labelSelector": {"matchLabels": {"tier": "gold"}}}}, id="label-selector"),
    pytest.param({"spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 2}]}, id="max-groups-2"),
    pytest.param({"spreadConstraints": [{"spreadByField": "region", "maxGroups": 1}]}, id="one-region"),
    pytest.param({"spreadConstraints": [{"spreadByLabel": "zone", "maxGroups": 1}]}, id="one-label-group"),
    pytest.param({"spreadConstraints": [{"spreadByField": "cluster", "maxGroups": True}]}, id="max-groups-true"),
    pytest.param({"spreadConstraints": [{"spreadByField": "cluster", "maxGroups": "1"}]}, id="max-groups-string"),
    pytest.param({"spreadConstraints": {"spreadByField": "cluster", "maxGroups": 1}}, id="constraints-map"),
    pytest.param(
        {"clusterAffinities": [{"clusterNames": ["member1"]}, {"clusterNames": ["m2", "m3"]}]},
        id="one-affinity-group-of-two",
    ),
    pytest.param({"clusterAffinities": []}, id="no-affinity-groups"),
]


@pytest.mark.parametrize("placement", SINGLE_CLUSTER_PLACEMENTS)
def test_single_cluster_placement_does_not_warn(placement: Any) -> None:
    verdict = validate_policy(with_changes(working_flink_policy(), {"spec.placement": placement}))

    assert verdict.allowed
    assert verdict.warnings == ()


def test_a_placement_of_one_named_cluster_warns_only_that_failover_has_nowhere_to_go() -> None:
    """Single-cluster, so no injection warning; but a failover has no other cluster (#5803)."""
    verdict = validate_policy(
        with_changes(working_flink_policy(), {"spec.placement": {"clusterAffinity": {"clusterNames": ["member1"]}}})
    )

    assert verdict.allowed
    assert verdict.warnings == ("spec.placement names only member1: a failover has no other cluster to go to (#5803)",)


@pytest.mark.parametrize("placement", MULTI_CLUSTER_PLACEMENTS)
def test_multi_cluster_placement_warns_once_per_section(placement: Any) -> None:
    verdict = validate_policy(with_changes(working_flink_policy(), {"spec.placement": placement}))

    assert verdict.allowed
    assert verdict.warnings == (
        f"{APP}.statePreservation: placement may pick >1 cluster; injection needs one: set maxGroups: 1",
        f"{CLUSTER}.statePreservation: placement may pick >1 cluster; injection needs one: set maxGroups: 1",
    )


def test_multi_cluster_placement_without_state_preservation_does_not_warn() -> None:
    verdict = validate_policy(with_changes(load(DOC_NGINX_EXAMPLE), {"spec.placement": DELETE}))

    assert verdict.allowed
    assert verdict.warnings == ()


@pytest.mark.parametrize(
    ("changes", "warning"),
    [
        pytest.param(
            {f"{APP}.purgeMode": "Immediately"},
            f"{APP}.purgeMode: Immediately is a legacy name removed in Karmada v1.19; use Directly",
            id="application-immediately",
        ),
        pytest.param(
            {f"{APP}.statePreservation": DELETE, f"{APP}.purgeMode": "Graciously"},
            f"{APP}.purgeMode: Graciously is a legacy name removed in Karmada v1.19; use Gracefully",
            id="application-graciously",
        ),
        pytest.param(
            {f"{CLUSTER}.purgeMode": "Immediately"},
            f"{CLUSTER}.purgeMode: Immediately is a legacy name removed in Karmada v1.19; use Directly",
            id="cluster-immediately",
        ),
        pytest.param(
            {f"{CLUSTER}.statePreservation": DELETE, f"{CLUSTER}.purgeMode": "Graciously"},
            f"{CLUSTER}.purgeMode: Graciously is a legacy name removed in Karmada v1.19; use Gracefully",
            id="cluster-graciously",
        ),
        pytest.param(
            {f"{APP}.decisionConditions.tolerationSeconds": 0},
            f"{APP}.decisionConditions.tolerationSeconds: 0 fails over on the first unhealthy report",
            id="toleration-zero",
        ),
        pytest.param(
            {f"{APP}.decisionConditions.tolerationSeconds": 0.0},
            f"{APP}.decisionConditions.tolerationSeconds: 0 fails over on the first unhealthy report",
            id="toleration-zero-float",
        ),
        pytest.param(
            {f"{APP_RULE}.jsonPath": "{ .jobStatus.jobID }"},
            f"{APP_RULE_PATH}.jsonPath: use jobId: FlinkDeployment status has no jobID",
            id="job-id-typo",
        ),
        pytest.param(
            {f"{APP_RULE}.jsonPath": "{.jobStatus['jobID']}"},
            f"{APP_RULE_PATH}.jsonPath: {JOB_ID_TYPO}",
            id="job-id-typo-bracket",
        ),
        pytest.param(
            {f"{CLUSTER_RULE}.jsonPath": "flink-{ .jobStatus.jobID }"},
            f"{CLUSTER_RULE_PATH}.jsonPath: {JOB_ID_TYPO}",
            id="job-id-typo-cluster",
        ),
    ],
)
def test_warning(changes: dict[str, Any], warning: str) -> None:
    verdict = validate_policy(with_changes(working_flink_policy(), changes))

    assert verdict.allowed, verdict.message
    assert verdict.warnings == (warning,)
    assert_warnings_fit(verdict.warnings)


# The FlinkDeployment's job id is then not kept either (failover/admission/failover_warnings.py): a second warning.
NO_JOB_ID = f"{APP}.statePreservation: no rule keeps {{ .jobStatus.jobId }}: FlinkDeployments restart without state"


@pytest.mark.parametrize(
    ("changes", "warning"),
    [
        # Valid for client-go's jsonpath (Karmada evaluates them), but not one usable label value: warned.
        pytest.param(
            {f"{APP_RULE}.jsonPath": ""},
            f"{APP_RULE_PATH}.jsonPath: no {{...}} action: always the same literal text",
            id="json-path-empty",
        ),
        pytest.param(
            {f"{APP_RULE}.jsonPath": "true"},
            f"{APP_RULE_PATH}.jsonPath: no {{...}} action: always the same literal text",
            id="json-path-constant-karmada-5788",
        ),
        pytest.param(
            {f"{APP_RULE}.jsonPath": "{range .items[0]}{.id}{end}"},
            f"{APP_RULE_PATH}.jsonPath: a range loop joins values into one string",
            id="json-path-range",
        ),
    ],
)
def test_warning_of_an_unusable_json_path(changes: dict[str, Any], warning: str) -> None:
    verdict = validate_policy(with_changes(working_flink_policy(), changes))

    assert verdict.allowed, verdict.message
    assert verdict.warnings == (warning, NO_JOB_ID)
    assert_warnings_fit(verdict.warnings)


def test_job_id_typo_in_a_recursive_path_warns_twice() -> None:
    verdict = validate_policy(with_changes(working_flink_policy(), {f"{APP_RULE}.jsonPath": "{ ..jobID }"}))

    assert verdict.allowed, verdict.message
    assert verdict.warnings[0] == f"{APP_RULE_PATH}.jsonPath: {JOB_ID_TYPO}"
    assert "several values" in verdict.warnings[1]


@pytest.mark.parametrize("kind", ["PropagationPolicy", "ClusterPropagationPolicy"])
def test_job_id_typo_warns_for_both_policy_kinds(kind: str) -> None:
    policy = with_changes(working_flink_policy(kind), {f"{APP_RULE}.jsonPath": "{ .jobStatus.jobID }"})

    assert validate_policy(policy).warnings == (f"{APP_RULE_PATH}.jsonPath: {JOB_ID_TYPO}",)


@pytest.mark.parametrize(
    "selectors",
    [
        pytest.param([{"apiVersion": "apps/v1", "kind": "Deployment", "name": "batch"}], id="deployment"),
        pytest.param([{"apiVersion": "example.com/v1", "kind": "FlinkDeployment", "name": "x"}], id="other-group"),
        pytest.param([{"kind": "FlinkDeployment", "name": "x"}], id="no-api-version"),
        pytest.param([{"apiVersion": 1, "kind": "FlinkDeployment"}], id="api-version-number"),
        pytest.param(["flink.apache.org/v1beta1"], id="selector-string"),
        pytest.param(DELETE, id="no-selectors"),
    ],
)
def test_job_id_typo_is_only_flagged_for_flink_deployments(selectors: Any) -> None:
    policy = with_changes(
        working_flink_policy(), {"spec.resourceSelectors": selectors, f"{APP_RULE}.jsonPath": "{ .status.jobID }"}
    )

    assert validate_policy(policy).warnings == ()


def test_job_id_typo_is_found_among_several_selectors() -> None:
    policy = with_changes(working_flink_policy(), {f"{APP_RULE}.jsonPath": "{ .jobStatus.jobID }"})
    policy["spec"]["resourceSelectors"].insert(0, {"apiVersion": "v1", "kind": "ConfigMap", "name": "foo-config"})

    assert validate_policy(policy).warnings == (f"{APP_RULE_PATH}.jsonPath: {JOB_ID_TYPO}",)


def test_every_warning_together_stays_within_the_length_limit() -> None:
    rules = [{"aliasLabelName": f"example.com/state-{i}", "jsonPath": "{ .jobStatus.jobID }"} for i in range(12)]
    policy = with_changes(
        working_flink_policy(),
        {
            "spec.placement": DELETE,
            f"{APP}.purgeMode": "Immediately",
            f"{APP}.decisionConditions.tolerationSeconds": 0,
            f"{APP}.statePreservation.rules": rules,
            f"{CLUSTER}.purgeMode": "Immediately",
        },
    )

    verdict = validate_policy(policy)

    assert verdict.allowed
    assert len(verdict.warnings) == 2 + 1 + 2 + 12  # legacy, toleration 0, multi-cluster, jobID
    assert_warnings_fit(verdict.warnings)


def test_warnings_of_a_thousand_rules_are_clipped_to_the_limit() -> None:
    rules = [{"aliasLabelName": f"example.com/s{i}", "jsonPath": "{ .jobStatus.jobID }"} for i in range(1000)]
    verdict = validate_policy(with_changes(working_flink_policy(), {f"{APP}.statePreservation.rules": rules}))

    assert verdict.allowed
    assert len(verdict.warnings) == 1000
    assert all(len(warning) <= MAX_WARNING_LENGTH for warning in verdict.warnings)


def test_unicode_and_huge_values_do_not_break_messages() -> None:
    policy = with_changes(
        working_flink_policy(),
        {
            f"{APP}.purgeMode": "Directly\u200b",
            f"{APP_RULE}.aliasLabelName": "故障/jobid",
            f"{APP_RULE}.jsonPath": "{ .jobStatus." + "é" * 2000 + " }",
        },
    )

    verdict = validate_policy(policy)

    assert [denial.path for denial in verdict.denials] == [
        f"{APP}.purgeMode",
        f"{APP_RULE_PATH}.aliasLabelName",
        f"{APP_RULE_PATH}.jsonPath",
    ]
    assert all(len(denial.message) < 200 for denial in verdict.denials)


# --- Property -------------------------------------------------------------------------------------------------

JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | st.text(max_size=20)
    | st.sampled_from(
        [
            "Directly",
            "Gracefully",
            "Never",
            "Immediately",
            "Graciously",
            "application.karmada.io/failover-jobid",
            "{ .jobStatus.jobID }",
            "cluster",
        ]
    )
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=12,
)


def _policy_shaped(leaf: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Objects with the right keys and arbitrary values, so the walk reaches deep before meeting a wrong type."""
    rule = st.fixed_dictionaries({}, optional={"aliasLabelName": leaf, "jsonPath": leaf})
    preservation = st.fixed_dictionaries({}, optional={"rules": st.lists(rule | leaf, max_size=3) | leaf})
    section = st.fixed_dictionaries(
        {},
        optional={
            "decisionConditions": st.fixed_dictionaries({}, optional={"tolerationSeconds": leaf}) | leaf,
            "purgeMode": leaf,
            "gracePeriodSeconds": leaf,
            "statePreservation": preservation | leaf,
        },
    )
    selector = st.fixed_dictionaries({}, optional={"apiVersion": leaf, "kind": leaf})
    constraint = st.fixed_dictionaries({}, optional={"spreadByField": leaf, "spreadByLabel": leaf, "maxGroups": leaf})
    placement = st.fixed_dictionaries(
        {},
        optional={
            "clusterAffinity": st.fixed_dictionaries({}, optional={"clusterNames": st.lists(leaf, max_size=2) | leaf}),
            "clusterAffinities": st.lists(
                st.fixed_dictionaries({"clusterNames": st.lists(leaf, max_size=2)}), max_size=2
            ),
            "spreadConstraints": st.lists(constraint | leaf, max_size=2) | leaf,
        },
    )
    spec = st.fixed_dictionaries(
        {},
        optional={
            "propagateDeps": leaf,
            "resourceSelectors": st.lists(selector | leaf, max_size=2) | leaf,
            "placement": placement | leaf,
            "failover": st.fixed_dictionaries({}, optional={"application": section | leaf, "cluster": section | leaf})
            | leaf,
        },
    )
    return st.fixed_dictionaries({"spec": spec | leaf}) | leaf


@settings(max_examples=80, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(_policy_shaped(JSON_VALUES))
def test_validate_policy_never_raises_and_warnings_fit(policy: Any) -> None:
    verdict = validate_policy(policy)

    assert all(len(warning) <= MAX_WARNING_LENGTH for warning in verdict.warnings)
    assert all(denial.path and denial.message for denial in verdict.denials)
