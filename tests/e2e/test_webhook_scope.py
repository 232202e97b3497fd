"""Which objects the apiserver sends to the relay at all: the rules and selectors of the rendered configurations,
observed through the relay's own request counter."""

from __future__ import annotations

import pytest

from failover.core.api import DEFAULT_JOB_ID_LABEL
from tests.e2e.objects import JOB_ID, apply, flink_deployment
from tests.e2e.relay_process import RelayProcess
from tests.envtest import ControlPlane
from tests.failover.work_builders import work

pytestmark = [pytest.mark.envtest, pytest.mark.usefixtures("webhooks")]


def _reviews_for(control_plane: ControlPlane, relay: RelayProcess, obj: dict) -> float:
    before = relay.reviews_answered()
    result = apply(control_plane, obj)
    assert result.returncode == 0, result.stderr
    return relay.reviews_answered() - before


def test_flink_deployment_without_the_job_id_label_is_not_sent(
    control_plane: ControlPlane, relay: RelayProcess, namespace: str
) -> None:
    assert _reviews_for(control_plane, relay, flink_deployment("unlabelled", namespace)) == 0


def test_flink_deployment_with_the_job_id_label_is_sent_for_mutation(
    control_plane: ControlPlane, relay: RelayProcess, namespace: str
) -> None:
    labelled = flink_deployment("labelled", namespace, labels={DEFAULT_JOB_ID_LABEL: JOB_ID})

    assert _reviews_for(control_plane, relay, labelled) == 1


def test_work_is_sent_for_mutation(control_plane: ControlPlane, relay: RelayProcess, namespace: str) -> None:
    manifest = flink_deployment("inside-work", namespace, labels={DEFAULT_JOB_ID_LABEL: JOB_ID})

    assert _reviews_for(control_plane, relay, work(manifest, name="carrying-flink", namespace=namespace)) == 1
