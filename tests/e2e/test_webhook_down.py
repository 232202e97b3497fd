"""What the apiserver does when the relay cannot be reached, exactly as the rendered configurations say:
policy admission fails closed, savepoint mutation (FlinkDeployment, Work) fails open."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from failover.core.api import DEFAULT_JOB_ID_LABEL
from tests.e2e.objects import (
    JOB_ID,
    MUTATE_POLICIES,
    apply,
    deployment_ref,
    flink_deployment,
    get,
    good_policy,
    rebalancer,
)
from tests.e2e.relay_process import RelayProcess
from tests.envtest import ControlPlane
from tests.failover.work_builders import work

pytestmark = pytest.mark.envtest


@pytest.fixture
def relay_down(registered_relay: Callable[..., RelayProcess]) -> RelayProcess:
    """A relay registered in the webhook configurations, then stopped."""
    relay = registered_relay()
    relay.stop()
    return relay


@pytest.mark.usefixtures("relay_down")
def test_policies_are_refused_while_the_relay_is_down(control_plane: ControlPlane, namespace: str) -> None:
    result = apply(control_plane, good_policy("while-down", namespace))

    assert result.returncode != 0
    assert f'failed calling webhook "{MUTATE_POLICIES}"' in result.stderr
    assert get(control_plane, "propagationpolicy", "while-down", namespace) is None


@pytest.mark.usefixtures("relay_down")
def test_rebalancers_are_refused_while_the_relay_is_down(control_plane: ControlPlane) -> None:
    result = apply(control_plane, rebalancer("e2e-while-down", deployment_ref("web", "shop")))

    assert result.returncode != 0
    assert 'failed calling webhook "rebalancers.validate.failover-relay.io"' in result.stderr


@pytest.mark.usefixtures("relay_down")
def test_flink_deployments_and_works_are_admitted_unchanged_while_the_relay_is_down(
    control_plane: ControlPlane, namespace: str
) -> None:
    deployment = flink_deployment("while-down", namespace, labels={DEFAULT_JOB_ID_LABEL: JOB_ID})

    flink_result = apply(control_plane, deployment)
    work_result = apply(control_plane, work(deployment, name="while-down", namespace=namespace))

    assert flink_result.returncode == 0, flink_result.stderr
    assert work_result.returncode == 0, work_result.stderr
    stored = get(control_plane, "flinkdeployment", "while-down", namespace)
    assert stored["spec"]["job"] == deployment["spec"]["job"]
    stored_work = get(control_plane, "work", "while-down", namespace)
    assert stored_work["spec"]["workload"]["manifests"][0]["spec"]["job"] == deployment["spec"]["job"]


def test_savepoint_mutation_can_be_made_to_fail_closed(
    registered_relay: Callable[..., RelayProcess], control_plane: ControlPlane, namespace: str
) -> None:
    relay = registered_relay(manifest_args=["--savepoint-failure-policy", "Fail"])
    relay.stop()

    result = apply(control_plane, flink_deployment("closed", namespace, labels={DEFAULT_JOB_ID_LABEL: JOB_ID}))

    assert result.returncode != 0
    assert 'failed calling webhook "savepoints.mutate.failover-relay.io"' in result.stderr
