"""WorkloadRebalancer admission through a real kube-apiserver: Karmada has no webhook for it, we refuse what its
controller would only report as Failed one entry at a time."""

from __future__ import annotations

import pytest

from tests.e2e.objects import VALIDATE_REBALANCERS, apply, denial, deployment_ref, get, rebalancer
from tests.envtest import ControlPlane

pytestmark = [pytest.mark.envtest, pytest.mark.usefixtures("webhooks")]


def test_rebalancer_listing_a_workload_twice_is_denied(control_plane: ControlPlane) -> None:
    web = deployment_ref("web", "shop")

    result = apply(control_plane, rebalancer("e2e-duplicate", web, deployment_ref("api", "shop"), web))

    assert "spec.workloads[2]: duplicates spec.workloads[0]" in denial(result, VALIDATE_REBALANCERS)
    assert get(control_plane, "workloadrebalancer", "e2e-duplicate") is None


def test_rebalancer_with_negative_ttl_is_denied(control_plane: ControlPlane) -> None:
    result = apply(
        control_plane, rebalancer("e2e-negative-ttl", deployment_ref("web", "shop"), ttlSecondsAfterFinished=-5)
    )

    assert "spec.ttlSecondsAfterFinished: must be 0 or more, got -5" in denial(result, VALIDATE_REBALANCERS)


def test_rebalancer_with_an_empty_workload_name_is_denied(control_plane: ControlPlane) -> None:
    """The CRD requires the name key; only the webhook sees that an empty one names nothing."""
    result = apply(control_plane, rebalancer("e2e-empty-name", deployment_ref("", "shop")))

    assert "spec.workloads[0].name: is required" in denial(result, VALIDATE_REBALANCERS)


def test_valid_rebalancer_is_stored(control_plane: ControlPlane) -> None:
    result = apply(
        control_plane,
        rebalancer(
            "e2e-valid", deployment_ref("web", "shop"), deployment_ref("web", "shop-canary"), ttlSecondsAfterFinished=60
        ),
    )

    assert result.returncode == 0, result.stderr
    stored = get(control_plane, "workloadrebalancer", "e2e-valid")
    assert [w["namespace"] for w in stored["spec"]["workloads"]] == ["shop", "shop-canary"]
