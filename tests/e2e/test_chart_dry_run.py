"""Each mode of the Helm chart, as `helm template` renders it, is accepted whole by a real kube-apiserver (server-side
apply with --dry-run=server), cert-manager's Issuers and Certificates by cert-manager's own CRDs, the ServiceMonitor
and PrometheusRule by the prometheus-operator's."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.ci import on_ci
from tests.crd_sources import CertManagerUnavailable, cert_manager_crds
from tests.e2e.objects import applied_names
from tests.envtest import ControlPlane
from tests.helm import CHART, template_text

pytestmark = pytest.mark.envtest

MODES = {
    "control-plane": ("failover-relay", {}),
    # The Namespace rendered with the release (namespace.create), for `helm template | kubectl apply -f -`.
    "with-namespace": ("relay-with-namespace", {"namespace": {"create": True}}),
    # Without cert-manager a member relay runs --no-controllers, which has no storage fence watcher: turned off.
    "member": (
        "failover-relay",
        {
            "mode": "member",
            "savepoint": {"checkpointRoot": "s3://flink/checkpoints", "storageSecret": "flink-s3"},
            "fence": {"watch": False},
        },
    ),
    # With cert-manager a member relay runs --member with the storage fence's watcher: its ClusterRole is the only RBAC.
    "member-cert-manager": (
        "failover-relay",
        {
            "mode": "member",
            "certificates": {"mode": "certManager"},
            "savepoint": {"checkpointRoot": "s3://flink/checkpoints"},
            "fence": {"memberCluster": "member1"},
        },
    ),
    # The policy rules as CEL beside the webhooks (docs/operations.md "Admission without the webhook").
    "admission-both": ("relay-admission", {"webhooks": {"admissionMode": "both"}}),
    # Another namespace too: every place that names it must follow.
    "cert-manager": (
        "relay-cert-manager",
        {
            "certificates": {"mode": "certManager"},
            "failback": True,
            "karmadaKubeconfigSecret": "failover-relay-karmada",
            "config": {"savepoint": {"lateRestore": True}},
            "networkPolicy": {"enabled": True, "apiserverCIDRs": ["10.0.0.0/28"]},
            "monitoring": {
                "serviceMonitor": {"enabled": True},
                "prometheusRule": {"enabled": True},
                "dashboard": {"enabled": True},
            },
        },
    ),
}


def _namespace_labels() -> dict[str, str]:
    """The labels docs/operations.md gives the release namespace: the chart's namespace.labels."""
    return yaml.safe_load((CHART / "values.yaml").read_text())["namespace"]["labels"]


@pytest.fixture(scope="module")
def cert_manager(control_plane: ControlPlane) -> ControlPlane:
    try:
        files = cert_manager_crds()
    except CertManagerUnavailable as error:
        if on_ci():
            pytest.fail(f"CI must run the chart dry runs: {error}", pytrace=False)
        pytest.skip(str(error))
    for path in files:
        control_plane.apply_crds(path)
    return control_plane


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.usefixtures("fresh_install")
def test_chart_is_accepted_by_the_apiserver(
    cert_manager: ControlPlane, helm_bin: Path, tmp_path: Path, mode: str
) -> None:
    namespace, values = MODES[mode]
    rendered = template_text(helm_bin, namespace, values)
    objects = [document for document in yaml.safe_load_all(rendered) if document]
    # The namespace for real (a dry run of it does not make the namespaced objects' namespace exist): the chart's
    # own when it renders one, else as docs/operations.md makes it (`--create-namespace`, then `kubectl label`).
    own_namespace = [o for o in objects if o["kind"] == "Namespace"] or [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": _namespace_labels()}}
    ]
    assert len(own_namespace) == 1 and own_namespace[0]["metadata"]["name"] == namespace
    cert_manager.kubectl(
        "apply",
        "--server-side",
        "--field-manager=failover-relay-install",
        "-f",
        "-",
        input=yaml.safe_dump(own_namespace[0]),
    )
    manifest = tmp_path / "chart.yaml"
    manifest.write_text(rendered)

    result = cert_manager.kubectl(
        "apply",
        "--server-side",
        "--field-manager=failover-relay-install",
        "--dry-run=server",
        "-o",
        "name",
        "-f",
        str(manifest),
        check=False,
    )

    assert result.returncode == 0, result.stderr
    expected = {f"{o['kind'].lower()}/{o['metadata']['name']}" for o in objects}
    accepted = applied_names(result.stdout)
    assert accepted == expected
    # The namespace enforces the "restricted" Pod Security Standard: the Deployment must pass it without a warning.
    assert "Warning" not in result.stderr, result.stderr
    kinds = {o["kind"] for o in objects}
    if mode == "cert-manager":
        assert {"Certificate", "Issuer", "NetworkPolicy", "ConfigMap", "ServiceMonitor", "PrometheusRule"} <= kinds
    assert ("Namespace" in kinds) is (mode == "with-namespace")
    if mode == "member":
        assert "ValidatingWebhookConfiguration" not in kinds and "Role" not in kinds
    if mode == "member-cert-manager":
        assert "ClusterRole" in kinds and "Role" not in kinds
