"""Verdict bookkeeping (denials, deduplicated and clipped warnings) and the kind → rules table."""

from __future__ import annotations

import pytest

from failover.admission.policy import mutate_policy, validate_policy
from failover.admission.rebalancer_rules import validate_rebalancer
from failover.admission.registry import DEFAULTERS, VALIDATORS, defaulters_for
from failover.core.api import (
    CLUSTER_PROPAGATION_POLICY,
    PROPAGATION_POLICY,
    WORKLOAD_REBALANCER,
    GroupKind,
    group_kind_of,
)
from failover.core.verdict import ALLOWED, MAX_WARNING_LENGTH, Finding, Findings, Verdict, clip


@pytest.mark.parametrize(
    ("text", "clipped"),
    [
        ("short", "short"),
        ("x" * MAX_WARNING_LENGTH, "x" * MAX_WARNING_LENGTH),
        ("x" * (MAX_WARNING_LENGTH + 1), "x" * (MAX_WARNING_LENGTH - 1) + "…"),
        ("é" * 500, "é" * (MAX_WARNING_LENGTH - 1) + "…"),
        ("", ""),
    ],
)
def test_clip(text: str, clipped: str) -> None:
    assert clip(text) == clipped
    assert len(clip(text)) <= MAX_WARNING_LENGTH


def test_findings_keep_order_and_deduplicate_warnings_whole() -> None:
    findings = Findings()
    findings.warn("b")
    findings.warn("a")
    findings.warn("b")
    findings.warn("y" * 500)
    findings.deny("spec.x", "is wrong")

    verdict = findings.verdict()

    assert verdict.warnings == ("b", "a", "y" * 500), "whole: only the AdmissionReview response clips"
    assert verdict.denials == (Finding("spec.x", "is wrong"),)
    assert findings.denied


def test_verdict_message_joins_denials_like_kubectl_shows_them() -> None:
    verdict = Verdict(denials=(Finding("spec.a", "must be true"), Finding("spec.b", "is required")))

    assert not verdict.allowed
    assert verdict.message == "spec.a: must be true; spec.b: is required"


def test_merged_verdicts_add_up() -> None:
    first = Verdict(denials=(Finding("spec.a", "x"),), warnings=("w1",), audit={"k": "1"})
    second = Verdict(warnings=("w2",), patch=({"op": "add", "path": "/a", "value": 1},), audit={"k": "2", "j": "3"})

    merged = first.merged(second)

    assert merged.denials == first.denials
    assert merged.warnings == ("w1", "w2")
    assert merged.patch == second.patch
    assert merged.audit == {"k": "2", "j": "3"}
    assert ALLOWED.allowed and ALLOWED.message == ""


def test_rules_table_covers_the_three_kinds() -> None:
    assert VALIDATORS == {
        PROPAGATION_POLICY: validate_policy,
        CLUSTER_PROPAGATION_POLICY: validate_policy,
        WORKLOAD_REBALANCER: validate_rebalancer,
    }
    assert DEFAULTERS == {PROPAGATION_POLICY: mutate_policy, CLUSTER_PROPAGATION_POLICY: mutate_policy}
    assert defaulters_for("new") is DEFAULTERS
    legacy = defaulters_for("legacy")
    assert legacy.keys() == DEFAULTERS.keys()
    empty_section = {"spec": {"failover": {"application": {"decisionConditions": {"tolerationSeconds": 60}}}}}
    assert legacy[PROPAGATION_POLICY](empty_section).patch[0]["value"] == "Graciously"


@pytest.mark.parametrize(
    ("api_version", "kind", "group_kind"),
    [
        ("policy.karmada.io/v1alpha1", "PropagationPolicy", PROPAGATION_POLICY),
        ("policy.karmada.io/v1alpha1", "ClusterPropagationPolicy", CLUSTER_PROPAGATION_POLICY),
        ("apps.karmada.io/v1alpha1", "WorkloadRebalancer", WORKLOAD_REBALANCER),
        # The rebalancing guide prints WorkloadRebalancer under policy.karmada.io: that kind does not exist there.
        ("policy.karmada.io/v1alpha1", "WorkloadRebalancer", GroupKind("policy.karmada.io", "WorkloadRebalancer")),
        ("v1", "ConfigMap", GroupKind("", "ConfigMap")),
        ("", "Thing", GroupKind("", "Thing")),
    ],
)
def test_group_kind_of(api_version: str, kind: str, group_kind: GroupKind) -> None:
    assert group_kind_of(api_version, kind) == group_kind


def test_rebalancer_under_the_wrong_group_is_not_judged_as_one() -> None:
    assert group_kind_of("policy.karmada.io/v1alpha1", "WorkloadRebalancer") not in VALIDATORS
