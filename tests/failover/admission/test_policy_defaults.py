"""default_policy: Karmada's defaults as JSONPatch operations, none when nothing is missing, idempotent, and neutral
for validate_policy (which judges the object as it will be after defaulting)."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from failover.admission.policy import default_policy, validate_policy
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
BASE = "/spec/failover/application"


def apply(policy: dict[str, Any], ops: tuple[dict[str, Any], ...]) -> dict[str, Any]:
    return jsonpatch.JsonPatch(list(ops)).apply(copy.deepcopy(policy))


def nginx_with_application(application: Any) -> dict[str, Any]:
    return with_changes(load(DOC_NGINX_EXAMPLE), {APP: application})


@pytest.mark.parametrize(
    ("application", "ops"),
    [
        pytest.param(
            {},
            [
                {"op": "add", "path": f"{BASE}/decisionConditions", "value": {"tolerationSeconds": 300}},
                {"op": "add", "path": f"{BASE}/purgeMode", "value": "Gracefully"},
                {"op": "add", "path": f"{BASE}/gracePeriodSeconds", "value": 600},
            ],
            id="empty-section",
        ),
        pytest.param(
            {"decisionConditions": {}, "purgeMode": "Never"},
            [
                {"op": "add", "path": f"{BASE}/decisionConditions/tolerationSeconds", "value": 300},
            ],
            id="empty-decision-conditions",
        ),
        pytest.param(
            {"decisionConditions": {"tolerationSeconds": None}, "purgeMode": "Never"},
            [
                {"op": "add", "path": f"{BASE}/decisionConditions/tolerationSeconds", "value": 300},
            ],
            id="null-toleration",
        ),
        pytest.param(
            {"decisionConditions": None, "purgeMode": "Directly"},
            [
                {"op": "add", "path": f"{BASE}/decisionConditions", "value": {"tolerationSeconds": 300}},
            ],
            id="null-decision-conditions",
        ),
        pytest.param(
            {"decisionConditions": {"tolerationSeconds": 60}, "purgeMode": "Gracefully"},
            [
                {"op": "add", "path": f"{BASE}/gracePeriodSeconds", "value": 600},
            ],
            id="gracefully-without-grace",
        ),
        pytest.param(
            {"decisionConditions": {"tolerationSeconds": 60}, "purgeMode": "Graciously"},
            [
                {"op": "add", "path": f"{BASE}/gracePeriodSeconds", "value": 600},
            ],
            id="legacy-graciously-without-grace",
        ),
        pytest.param(
            {"decisionConditions": {"tolerationSeconds": 60}, "gracePeriodSeconds": 120},
            [
                {"op": "add", "path": f"{BASE}/purgeMode", "value": "Gracefully"},
            ],
            id="grace-without-purge-mode",
        ),
        pytest.param(
            {"decisionConditions": {"tolerationSeconds": 60}, "purgeMode": None},
            [
                {"op": "add", "path": f"{BASE}/purgeMode", "value": "Gracefully"},
                {"op": "add", "path": f"{BASE}/gracePeriodSeconds", "value": 600},
            ],
            id="null-purge-mode",
        ),
        pytest.param({"decisionConditions": {"tolerationSeconds": 0}, "purgeMode": "Directly"}, [], id="complete"),
        pytest.param(
            {"decisionConditions": {"tolerationSeconds": 60}, "purgeMode": "Immediately"}, [], id="complete-legacy"
        ),
        # Wrong types are left for validation to refuse, not papered over.
        pytest.param({"decisionConditions": [300], "purgeMode": "Never"}, [], id="decision-conditions-list"),
        pytest.param(
            {"decisionConditions": {"tolerationSeconds": "300"}, "purgeMode": "Never"}, [], id="toleration-string"
        ),
        pytest.param({"decisionConditions": {"tolerationSeconds": 60}, "purgeMode": 5}, [], id="purge-mode-number"),
        pytest.param({"decisionConditions": {"tolerationSeconds": 60}, "purgeMode": "Soon"}, [], id="purge-unknown"),
        pytest.param(
            {"decisionConditions": {"tolerationSeconds": 60}, "purgeMode": "Gracefully", "gracePeriodSeconds": "10m"},
            [],
            id="grace-string",
        ),
    ],
)
def test_defaults(application: dict[str, Any], ops: list[dict[str, Any]]) -> None:
    assert list(default_policy(nginx_with_application(application))) == ops


def test_legacy_spelling_defaults_the_purge_mode_as_graciously() -> None:
    # The v1.12-v1.14 CRD enum is Immediately|Graciously|Never: Gracefully would be refused by the apiserver.
    policy = nginx_with_application({})

    ops = default_policy(policy, legacy_purge_modes=True)

    assert {"op": "add", "path": f"{BASE}/purgeMode", "value": "Graciously"} in ops
    assert {"op": "add", "path": f"{BASE}/gracePeriodSeconds", "value": 600} in ops
    assert default_policy(apply(policy, ops), legacy_purge_modes=True) == ()
    assert (
        default_policy(
            nginx_with_application({"decisionConditions": {"tolerationSeconds": 60}, "purgeMode": "Never"}),
            legacy_purge_modes=True,
        )
        == ()
    )


@pytest.mark.parametrize(
    "example",
    [
        DOC_NGINX_EXAMPLE,
        DOC_PURGE_GRACIOUSLY,
        DOC_PURGE_NEVER,
        DOC_FLINK_STATE_PRESERVATION,
        RELEASE_NOTES_FLINK,
        RELEASE_NOTES_NGINX_PP,
    ],
)
def test_documented_examples_that_spell_everything_out_get_no_patch(example: str) -> None:
    assert default_policy(load(example)) == ()


def test_guide_snippet_without_purge_mode_gets_gracefully_and_its_grace_period() -> None:
    policy = load(DOC_DECISION_CONDITIONS)

    assert apply(policy, default_policy(policy))["spec"]["failover"]["application"] == {
        "decisionConditions": {"tolerationSeconds": 300},
        "purgeMode": "Gracefully",
        "gracePeriodSeconds": 600,
    }


@pytest.mark.parametrize("kind", ["PropagationPolicy", "ClusterPropagationPolicy"])
def test_working_flink_policy_gets_no_patch(kind: str) -> None:
    assert default_policy(working_flink_policy(kind)) == ()


@pytest.mark.parametrize(
    "policy",
    [
        pytest.param(with_changes(working_flink_policy(), {f"{APP}": DELETE}), id="cluster-section-only"),
        pytest.param(with_changes(working_flink_policy(), {"spec.failover": DELETE}), id="no-failover"),
        pytest.param(with_changes(working_flink_policy(), {f"{APP}": None}), id="null-application"),
        pytest.param(with_changes(working_flink_policy(), {f"{APP}": "on"}), id="application-string"),
        pytest.param(with_changes(working_flink_policy(), {"spec.failover": []}), id="failover-list"),
        pytest.param({"kind": "PropagationPolicy"}, id="no-spec"),
        pytest.param({"spec": "x"}, id="spec-string"),
        pytest.param([], id="object-is-list"),
        pytest.param(None, id="object-is-null"),
    ],
)
def test_nothing_to_default(policy: Any) -> None:
    assert default_policy(policy) == ()


def test_cluster_section_gets_the_crd_default_purge_mode_as_the_apiserver_stores_it() -> None:
    policy = with_changes(working_flink_policy(), {"spec.failover.cluster": {}})

    ops = default_policy(policy)

    assert [op for op in ops if op["path"].startswith("/spec/failover/cluster")] == [
        {"op": "add", "path": "/spec/failover/cluster/purgeMode", "value": "Gracefully"}
    ]
    assert default_policy(apply(policy, ops)) == ()


@pytest.mark.parametrize("purge_mode", ["Directly", "Gracefully", "Soon", 3])
def test_a_cluster_purge_mode_given_is_left_for_validation(purge_mode: Any) -> None:
    policy = with_changes(working_flink_policy(), {"spec.failover.cluster": {"purgeMode": purge_mode}})

    assert [op for op in default_policy(policy) if op["path"].startswith("/spec/failover/cluster")] == []


# Sections that exercise every default and every wrong type; shared by the idempotence and verdict checks.
SECTIONS = [
    {},
    {"decisionConditions": {}},
    {"decisionConditions": None, "purgeMode": None, "gracePeriodSeconds": None},
    {"purgeMode": "Graciously"},
    {"purgeMode": "Immediately"},
    {"purgeMode": "Never", "gracePeriodSeconds": 30},
    {"gracePeriodSeconds": 0},
    {"gracePeriodSeconds": -1, "decisionConditions": {"tolerationSeconds": -1}},
    {"decisionConditions": {"tolerationSeconds": 0}},
    {"decisionConditions": "300s", "purgeMode": ["Directly"]},
    {"purgeMode": "", "gracePeriodSeconds": True},
    {
        "statePreservation": {
            "rules": [{"aliasLabelName": "application.karmada.io/failover-jobid", "jsonPath": "{ .jobStatus.jobId }"}]
        }
    },
    {"purgeMode": "Directly", "statePreservation": {"rules": [{"aliasLabelName": "a/b/c", "jsonPath": "{"}]}},
]


@pytest.mark.parametrize("section", SECTIONS)
@pytest.mark.parametrize("propagate_deps", [True, DELETE])
def test_defaulting_is_idempotent_and_does_not_change_the_verdict(section: dict[str, Any], propagate_deps: Any) -> None:
    policy = with_changes(working_flink_policy(), {APP: section, "spec.propagateDeps": propagate_deps})

    defaulted = apply(policy, default_policy(policy))

    assert default_policy(defaulted) == ()
    assert validate_policy(defaulted) == validate_policy(policy)


@pytest.mark.parametrize(
    "example",
    [
        DOC_DECISION_CONDITIONS,
        DOC_PURGE_GRACIOUSLY,
        DOC_PURGE_NEVER,
        DOC_NGINX_EXAMPLE,
        DOC_FLINK_STATE_PRESERVATION,
        RELEASE_NOTES_FLINK,
        RELEASE_NOTES_NGINX_PP,
    ],
)
def test_documented_examples_judged_the_same_before_and_after_defaulting(example: str) -> None:
    policy = load(example)

    defaulted = apply(policy, default_policy(policy))

    assert default_policy(defaulted) == ()
    assert validate_policy(defaulted) == validate_policy(policy)


def test_defaulting_does_not_modify_its_input() -> None:
    policy = load(DOC_DECISION_CONDITIONS)
    before = copy.deepcopy(policy)

    default_policy(policy)

    assert policy == before


FIELD_VALUES = st.none() | st.sampled_from(
    [
        "Directly",
        "Gracefully",
        "Never",
        "Immediately",
        "Graciously",
        "Soon",
        "",
        0,
        -1,
        1,
        600,
        2**31,
        True,
        1.5,
        [],
        {},
        "300",
    ]
)


@settings(max_examples=50, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    section=st.fixed_dictionaries(
        {},
        optional={
            "decisionConditions": st.fixed_dictionaries({}, optional={"tolerationSeconds": FIELD_VALUES})
            | FIELD_VALUES,
            "purgeMode": FIELD_VALUES,
            "gracePeriodSeconds": FIELD_VALUES,
        },
    ),
    propagate_deps=st.sampled_from([True, False, None, "true"]),
)
def test_defaulting_property(section: dict[str, Any], propagate_deps: Any) -> None:
    policy = with_changes(load(DOC_NGINX_EXAMPLE), {APP: section, "spec.propagateDeps": propagate_deps})

    defaulted = apply(policy, default_policy(policy))

    assert default_policy(defaulted) == ()
    assert validate_policy(defaulted) == validate_policy(policy)
