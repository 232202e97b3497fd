"""The install of manifests/: consistent with the code, accepted whole by a real apiserver (server-side dry run),
and its RBAC grants the relay's service account exactly what the relay calls, checked by the real authorizer."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.cabundle import DEFAULT_CONFIGURATION_NAME
from relay.cli import build_parser
from relay.commands.manifests.webhooks import (
    CONFIGURATION_NAME,
    WebhookOptions,
    render_webhook_configurations,
    service_endpoint,
)
from relay.settings import ControllerSettings, settings_of
from tests.e2e.objects import RELAY_NAMESPACE, applied_names
from tests.envtest import REPO_ROOT, ControlPlane

MANIFESTS = REPO_ROOT / "manifests"
DEPLOY = MANIFESTS / "deploy"
SERVICE_ACCOUNT = f"system:serviceaccount:{RELAY_NAMESPACE}:failover-relay"


def _documents(path: Path) -> list[dict[str, Any]]:
    return [document for document in yaml.safe_load_all(path.read_text()) if document]


def _install() -> list[dict[str, Any]]:
    kustomization = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())
    return [document for name in kustomization["resources"] for document in _documents(DEPLOY / name)]


def _one(kind: str, name: str | None = None) -> dict[str, Any]:
    found = [d for d in _install() if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def _flags(container: dict[str, Any]) -> dict[str, str]:
    return dict(arg[2:].split("=", 1) for arg in container["args"] if arg.startswith("--") and "=" in arg)


def test_kustomization_lists_every_file_of_deploy() -> None:
    kustomization = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())
    files = sorted(path.name for path in DEPLOY.glob("*.yaml") if path.name != "kustomization.yaml")

    assert sorted(kustomization["resources"]) == files
    assert yaml.safe_load((MANIFESTS / "kustomization.yaml").read_text())["resources"] == ["deploy"]


def test_webhook_configurations_are_the_rendered_ones_without_ca_bundle() -> None:
    rendered = render_webhook_configurations(
        WebhookOptions(service_endpoint("failover-relay", RELAY_NAMESPACE), ca_bundle=None)
    )

    assert _documents(DEPLOY / "webhooks.yaml") == [d for d in yaml.safe_load_all(rendered) if d], (
        "manifests/deploy/webhooks.yaml drifted from relay/commands/manifests/webhooks.py; re-render it (command in "
        "its header)"
    )


def test_names_agree_across_files_and_code() -> None:
    deployment = _one("Deployment")
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    flags = _flags(container)
    service = _one("Service")
    port = next(p for p in container["ports"] if p["name"] == "https")

    # The certificate names what the apiserver dials: the Service the webhooks point at.
    for configuration in (_one("ValidatingWebhookConfiguration"), _one("MutatingWebhookConfiguration")):
        assert configuration["metadata"]["name"] == CONFIGURATION_NAME == DEFAULT_CONFIGURATION_NAME
        for webhook in configuration["webhooks"]:
            reference = webhook["clientConfig"]["service"]
            assert (reference["name"], reference["namespace"], reference["port"]) == (
                flags["service-name"],
                flags["namespace"],
                service["spec"]["ports"][0]["port"],
            )
            assert "caBundle" not in webhook["clientConfig"]
    assert (service["metadata"]["name"], service["metadata"]["namespace"]) == (flags["service-name"], RELAY_NAMESPACE)
    assert service["spec"]["ports"][0]["targetPort"] == "https" and port["containerPort"] == int(flags["port"])
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    assert _one("PodDisruptionBudget")["spec"]["selector"] == deployment["spec"]["selector"]
    # The cert dir is a writable volume (the root filesystem is read-only).
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    assert flags["cert-dir"] in mounts
    # The Lease the loop takes is the one the Role names, in the pod's namespace.
    lease_rule = next(r for r in _one("Role")["rules"] if r.get("resourceNames"))
    assert lease_rule["resourceNames"] == [ControllerSettings().lease_name]
    assert any(
        e["name"] == "POD_NAMESPACE" and e["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
        for e in container["env"]
    )


def test_pod_is_hardened() -> None:
    deployment = _one("Deployment")
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]

    assert deployment["spec"]["replicas"] == 2
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] == 65532
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert {container["readinessProbe"]["httpGet"]["scheme"], container["livenessProbe"]["httpGet"]["scheme"]} == {
        "HTTPS"
    }
    assert container["resources"]["requests"] and container["resources"]["limits"]
    dockerfile = (REPO_ROOT / "Dockerfile").read_text()
    assert re.search(r"^USER 65532(:65532)?$", dockerfile, re.MULTILINE)


@pytest.mark.envtest
@pytest.mark.parametrize("mode", ["client-side", "server-side"])
@pytest.mark.usefixtures("fresh_install")
def test_whole_kustomization_is_accepted_by_the_apiserver(
    control_plane: ControlPlane, relay_namespace: str, mode: str
) -> None:
    flags = ["--server-side", "--field-manager=failover-relay-install"] if mode == "server-side" else []
    result = control_plane.kubectl("apply", *flags, "--dry-run=server", "-o", "name", "-k", str(MANIFESTS), check=False)

    assert result.returncode == 0, result.stderr
    expected = {f"{d['kind'].lower()}/{d['metadata']['name']}" for d in _install()}
    accepted = applied_names(result.stdout)
    assert accepted == expected
    # The namespace warns on anything below the "restricted" Pod Security Standard: the Deployment must not.
    assert "Warning" not in result.stderr, result.stderr


def test_the_karmada_host_overlay_carries_the_quick_start_s_configuration() -> None:
    page = (REPO_ROOT / "docs" / "quickstart.md").read_text()
    marker = page.index("<!-- quickstart-test: relay-config")
    block = page[page.index("```yaml\n", marker) + 8 : page.index("\n```", page.index("```yaml\n", marker))]
    assert (MANIFESTS / "karmada-host" / "relay.yaml").read_text() == block + "\n"


@pytest.mark.envtest
def test_the_karmada_host_overlay_is_accepted_and_starts_the_relay_as_the_quick_start_says(
    control_plane: ControlPlane, relay_namespace: str, tmp_path: Path
) -> None:
    """manifests/karmada-host/ (quick start step 3, kubectl path): the host-cluster install without the webhooks,
    with the karmada-apiserver's kubeconfig and the quick start's relay.yaml; its relay's flags and config file are
    what `serve` accepts, and the ConfigMap holds the page's configuration."""
    overlay = MANIFESTS / "karmada-host"
    rendered = [d for d in yaml.safe_load_all(control_plane.kubectl("kustomize", str(overlay)).stdout) if d]
    kinds = {d["kind"] for d in rendered}
    assert not kinds & {"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"}
    result = control_plane.kubectl(
        "apply", "--server-side", "--field-manager=failover-relay-install", "--dry-run=server", "-o", "name",
        "-k", str(overlay), check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert applied_names(result.stdout) == {f"{d['kind'].lower()}/{d['metadata']['name']}" for d in rendered}
    assert "Warning" not in result.stderr, result.stderr

    [deployment] = [d for d in rendered if d["kind"] == "Deployment"]
    [config_map] = [d for d in rendered if d["kind"] == "ConfigMap"]
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["config"]["configMap"]["name"] == config_map["metadata"]["name"]
    assert volumes["karmada"]["secret"]["secretName"] == "failover-relay-karmada"
    config_file = tmp_path / "relay.yaml"
    config_file.write_text(config_map["data"]["relay.yaml"])
    args = [
        f"--config={config_file}" if arg == f"--config={mounts['config']}/relay.yaml" else arg
        for arg in container["args"]
    ]
    settings = settings_of(build_parser().parse_args(args))
    assert settings.controllers.kubeconfig == f"{mounts['karmada']}/kubeconfig"
    assert settings.savepoint.work_savepoints and settings.storage_fence_on()


# (verb, resource, namespace or None) the relay calls: controllers/access/binding_writes.py, old_copies.py,
# rebalancer_reconciler.py, planned_moves_reconciler.py, informer.py, leader.py, events.py and cabundle.py.
ALLOWED = [
    *(
        (verb, resource, None)
        for resource in ("resourcebindings.work.karmada.io", "clusterresourcebindings.work.karmada.io")
        for verb in ("get", "list", "watch", "patch")
    ),
    *(
        (verb, "workloadrebalancers.apps.karmada.io", None)
        for verb in ("get", "list", "watch", "create", "patch", "delete")
    ),
    ("patch", "workloadrebalancers.apps.karmada.io/status", None),
    *((verb, "clusters.cluster.karmada.io", None) for verb in ("get", "list", "watch", "patch")),
    # Fencing: Works by binding, release of an unreachable cluster's Work, old copies deleted through the proxy.
    *((verb, "works.work.karmada.io", None) for verb in ("list", "watch", "patch")),
    *(
        (verb, resource, None)
        for resource in ("propagationpolicies.policy.karmada.io", "clusterpropagationpolicies.policy.karmada.io")
        for verb in ("list", "watch")
    ),
    ("create", "events", "some-app"),
    ("create", "events", "default"),
    ("get", "validatingwebhookconfigurations/failover-relay", None),
    ("patch", "mutatingwebhookconfigurations/failover-relay", None),
    ("create", "leases.coordination.k8s.io", RELAY_NAMESPACE),
    ("get", "leases.coordination.k8s.io/failover-relay", RELAY_NAMESPACE),
    ("update", "leases.coordination.k8s.io/failover-relay", RELAY_NAMESPACE),
    ("get", "customresourcedefinitions.apiextensions.k8s.io/resourcebindings.work.karmada.io", None),
]
DENIED = [
    ("update", "resourcebindings.work.karmada.io", None),
    ("delete", "resourcebindings.work.karmada.io", None),
    ("delete", "clusters.cluster.karmada.io", None),
    ("delete", "works.work.karmada.io", None),
    ("update", "works.work.karmada.io", None),
    ("update", "workloadrebalancers.apps.karmada.io", None),
    ("create", "propagationpolicies.policy.karmada.io", None),
    ("get", "propagationpolicies.policy.karmada.io", None),
    ("get", "secrets", RELAY_NAMESPACE),
    ("list", "pods", None),
    ("patch", "validatingwebhookconfigurations/some-other-webhook", None),
    ("delete", "validatingwebhookconfigurations/failover-relay", None),
    ("update", "leases.coordination.k8s.io/kube-controller-manager", RELAY_NAMESPACE),
    ("create", "leases.coordination.k8s.io", "kube-system"),
    ("patch", "events", "default"),
    ("list", "customresourcedefinitions.apiextensions.k8s.io", None),
    ("get", "customresourcedefinitions.apiextensions.k8s.io/propagationpolicies.policy.karmada.io", None),
]


@pytest.mark.envtest
def test_rbac_grants_what_the_relay_calls_and_nothing_more(control_plane: ControlPlane, relay_namespace: str) -> None:
    for name in ("serviceaccount.yaml", "rbac.yaml"):
        control_plane.kubectl("apply", "-f", str(DEPLOY / name))

    def can(verb: str, resource: str, namespace: str | None) -> bool:
        scope = ["-n", namespace] if namespace else ["--all-namespaces"]
        result = control_plane.kubectl("auth", "can-i", verb, resource, *scope, f"--as={SERVICE_ACCOUNT}", check=False)
        return result.stdout.strip() == "yes"

    assert [call for call in ALLOWED if not can(*call)] == []
    assert [call for call in DENIED if can(*call)] == []
    # Fencing deletes an old copy through Karmada's cluster proxy (controllers/access/members.py): a subresource.
    for verb in ("get", "delete"):
        result = control_plane.kubectl(
            "auth",
            "can-i",
            verb,
            "clusters.cluster.karmada.io",
            "--subresource=proxy",
            f"--as={SERVICE_ACCOUNT}",
            check=False,
        )
        assert result.stdout.strip() == "yes", (verb, result.stdout, result.stderr)
