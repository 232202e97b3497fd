"""validate_rebalancer: the WorkloadRebalancer rules of docs/design.md "Policy admission" (Karmada has no webhook
for this kind)."""

from __future__ import annotations

from typing import Any

import pytest

from failover.admission.rebalancer_rules import validate_rebalancer
from tests.failover.karmada_examples import (
    DELETE,
    DOC_REBALANCER_BATCH,
    DOC_REBALANCER_BATCH_AS_PRINTED,
    DOC_REBALANCER_TTL,
    load,
    with_changes,
)

NGINX = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx", "namespace": "default"}


def rebalancer(**changes: Any) -> dict[str, Any]:
    return with_changes(load(DOC_REBALANCER_TTL), {key.replace("__", "."): value for key, value in changes.items()})


@pytest.mark.parametrize("example", [DOC_REBALANCER_TTL, DOC_REBALANCER_BATCH])
def test_documented_rebalancers_are_allowed(example: str) -> None:
    verdict = validate_rebalancer(load(example))

    assert verdict.allowed, verdict.message
    assert verdict.warnings == ()


def test_guide_batch_example_as_printed_is_denied_for_its_missing_workloads() -> None:
    verdict = validate_rebalancer(load(DOC_REBALANCER_BATCH_AS_PRINTED))

    assert [str(denial) for denial in verdict.denials] == [
        "spec.workloads: needs at least one workload (apiVersion, kind, name, namespace)"
    ]


@pytest.mark.parametrize(
    ("obj", "path", "message"),
    [
        pytest.param(
            {"kind": "WorkloadRebalancer"},
            "spec",
            "is required, with at least one entry in spec.workloads",
            id="missing-spec",
        ),
        pytest.param({"spec": None}, "spec", "is required", id="null-spec"),
        pytest.param({"spec": ["x"]}, "spec", "must be an object, got a list", id="spec-list"),
        pytest.param([NGINX], "(object)", "must be a WorkloadRebalancer object", id="object-is-list"),
        pytest.param(
            rebalancer(spec__workloads=DELETE), "spec.workloads", "needs at least one workload", id="missing-workloads"
        ),
        pytest.param(
            rebalancer(spec__workloads=None), "spec.workloads", "needs at least one workload", id="null-workloads"
        ),
        pytest.param(
            rebalancer(spec__workloads=[]), "spec.workloads", "needs at least one workload", id="empty-workloads"
        ),
        pytest.param(
            rebalancer(spec__workloads=NGINX), "spec.workloads", "must be a list, got an object", id="workloads-map"
        ),
        pytest.param(
            rebalancer(spec__workloads="nginx"), "spec.workloads", "must be a list, got a string", id="workloads-string"
        ),
        pytest.param(
            rebalancer(spec__workloads=["nginx"]),
            "spec.workloads[0]",
            "must be an object with apiVersion, kind, name and namespace",
            id="workload-string",
        ),
        pytest.param(
            rebalancer(spec__workloads=[NGINX, None]), "spec.workloads[1]", "must be an object", id="workload-null"
        ),
        pytest.param(
            rebalancer(spec__workloads__0__name=DELETE),
            "spec.workloads[0].name",
            "is required; set the workload's name, e.g. nginx",
            id="missing-name",
        ),
        pytest.param(rebalancer(spec__workloads__0__name=""), "spec.workloads[0].name", "is required", id="empty-name"),
        pytest.param(
            rebalancer(spec__workloads__0__name=None), "spec.workloads[0].name", "is required", id="null-name"
        ),
        pytest.param(
            rebalancer(spec__workloads__0__name=42),
            "spec.workloads[0].name",
            "must be a string, got a number",
            id="name-number",
        ),
        pytest.param(
            rebalancer(spec__workloads__0__kind=DELETE),
            "spec.workloads[0].kind",
            "is required; set the workload's kind, e.g. Deployment",
            id="missing-kind",
        ),
        pytest.param(
            rebalancer(spec__workloads__0__kind=["Deployment"]),
            "spec.workloads[0].kind",
            "must be a string, got a list",
            id="kind-list",
        ),
        pytest.param(
            rebalancer(spec__workloads__0__apiVersion=DELETE),
            "spec.workloads[0].apiVersion",
            "is required; set the workload's apiVersion, e.g. apps/v1",
            id="missing-api-version",
        ),
        pytest.param(
            rebalancer(spec__workloads__0__namespace=7),
            "spec.workloads[0].namespace",
            "must be a string, got a number",
            id="namespace-number",
        ),
        pytest.param(
            rebalancer(spec__workloads=[NGINX, dict(NGINX)]),
            "spec.workloads[1]",
            "duplicates spec.workloads[0]; list each workload once",
            id="duplicate",
        ),
        pytest.param(
            rebalancer(spec__workloads=[{**NGINX, "namespace": ""}, {**NGINX, "namespace": None}]),
            "spec.workloads[1]",
            "duplicates spec.workloads[0]",
            id="duplicate-cluster-scoped",
        ),
        pytest.param(
            rebalancer(spec__ttlSecondsAfterFinished=-1),
            "spec.ttlSecondsAfterFinished",
            "must be 0 or more, got -1; omit it to keep the rebalancer after it finishes",
            id="negative-ttl",
        ),
        pytest.param(
            rebalancer(spec__ttlSecondsAfterFinished=2**31),
            "spec.ttlSecondsAfterFinished",
            "32-bit integer",
            id="ttl-overflow",
        ),
        pytest.param(
            rebalancer(spec__ttlSecondsAfterFinished="60s"),
            "spec.ttlSecondsAfterFinished",
            "must be an integer, got a string",
            id="ttl-string",
        ),
        pytest.param(
            rebalancer(spec__ttlSecondsAfterFinished=True),
            "spec.ttlSecondsAfterFinished",
            "must be an integer, got a boolean",
            id="ttl-bool",
        ),
        pytest.param(
            rebalancer(spec__ttlSecondsAfterFinished=1.5),
            "spec.ttlSecondsAfterFinished",
            "must be an integer",
            id="ttl-fraction",
        ),
    ],
)
def test_denial(obj: Any, path: str, message: str) -> None:
    verdict = validate_rebalancer(obj)

    assert not verdict.allowed
    assert any(denial.path == path and message in denial.message for denial in verdict.denials), verdict.message


@pytest.mark.parametrize(
    "changes",
    [
        pytest.param({"spec__ttlSecondsAfterFinished": 0}, id="ttl-zero-deletes-at-once"),
        pytest.param({"spec__ttlSecondsAfterFinished": DELETE}, id="no-ttl-keeps-it"),
        pytest.param({"spec__ttlSecondsAfterFinished": None}, id="null-ttl"),
        pytest.param({"spec__ttlSecondsAfterFinished": 60.0}, id="ttl-integral-float"),
        pytest.param({"spec__ttlSecondsAfterFinished": 2**31 - 1}, id="ttl-int32-max"),
        pytest.param({"spec__workloads__0__namespace": DELETE}, id="cluster-scoped-workload"),
        pytest.param({"spec__workloads": [NGINX, {**NGINX, "namespace": "staging"}]}, id="same-name-other-namespace"),
        pytest.param({"spec__workloads": [NGINX, {**NGINX, "kind": "StatefulSet"}]}, id="same-name-other-kind"),
        pytest.param({"spec__workloads": [NGINX, {**NGINX, "apiVersion": "apps/v1beta2"}]}, id="other-version"),
        pytest.param({"spec__workloads": [{**NGINX, "name": "nginx-ü"}]}, id="unicode-name-left-to-apiserver"),
    ],
)
def test_allowed_variations(changes: dict[str, Any]) -> None:
    verdict = validate_rebalancer(rebalancer(**changes))

    assert verdict.allowed, verdict.message


def test_every_problem_is_reported_once() -> None:
    workloads = [NGINX, {"kind": "Deployment"}, dict(NGINX), "redis", dict(NGINX)]

    verdict = validate_rebalancer(rebalancer(spec__workloads=workloads, spec__ttlSecondsAfterFinished=-5))

    assert [denial.path for denial in verdict.denials] == [
        "spec.workloads[1].apiVersion",
        "spec.workloads[1].name",
        "spec.workloads[2]",
        "spec.workloads[3]",
        "spec.workloads[4]",
        "spec.ttlSecondsAfterFinished",
    ]
    assert "duplicates spec.workloads[0]" in verdict.denials[4].message


def test_a_wrong_type_is_not_also_reported_as_missing() -> None:
    verdict = validate_rebalancer(rebalancer(spec__workloads__0__name=1, spec__workloads=DELETE))

    assert [denial.path for denial in verdict.denials] == ["spec.workloads"]
    verdict = validate_rebalancer(rebalancer(spec__workloads=[{**NGINX, "name": 1}]))
    assert [str(denial) for denial in verdict.denials] == ["spec.workloads[0].name: must be a string, got a number"]


def test_duplicate_far_down_a_long_list_is_found() -> None:
    workloads = [{**NGINX, "name": f"app-{i}"} for i in range(5000)] + [{**NGINX, "name": "app-0"}]

    verdict = validate_rebalancer(rebalancer(spec__workloads=workloads))

    assert [str(denial) for denial in verdict.denials] == [
        "spec.workloads[5000]: duplicates spec.workloads[0]; list each workload once"
    ]
