"""manifests/monitoring/ is accepted by a real apiserver holding the prometheus-operator's own CRDs (server-side
dry run; the CRDs come from tests/crds/prometheus-operator/, see tests/crd_sources.py), and the same apiserver
refuses a ServiceMonitor its schema forbids, so the acceptance means the schema was applied."""

from __future__ import annotations

import pytest
import yaml

from relay.commands.manifests.monitoring import MONITORING
from tests.e2e.objects import applied_names
from tests.envtest import ControlPlane

pytestmark = pytest.mark.envtest


@pytest.mark.parametrize("mode", ["client-side", "server-side"])
def test_monitoring_kustomization_is_accepted_by_the_real_crds(
    control_plane: ControlPlane, relay_namespace: str, mode: str
) -> None:
    flags = ["--server-side", "--field-manager=failover-relay-install"] if mode == "server-side" else []
    result = control_plane.kubectl(
        "apply", *flags, "--dry-run=server", "-o", "name", "-k", str(MONITORING), check=False
    )

    assert result.returncode == 0, result.stderr
    accepted = applied_names(result.stdout)
    assert accepted == {
        "prometheusrule/failover-relay",
        "servicemonitor/failover-relay",
        "configmap/failover-relay-dashboard",
    }


def test_a_service_monitor_against_the_schema_is_refused(control_plane: ControlPlane, relay_namespace: str) -> None:
    monitor = yaml.safe_load((MONITORING / "servicemonitor.yaml").read_text())
    monitor["spec"]["endpoints"][0]["scheme"] = "gopher"

    result = control_plane.kubectl("apply", "--dry-run=server", "-f", "-", input=yaml.safe_dump(monitor), check=False)

    assert result.returncode != 0
    assert "scheme" in result.stderr and "gopher" in result.stderr, result.stderr
