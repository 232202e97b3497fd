"""The Helm chart (chart/failover-relay) and the kustomize install (manifests/) are one install: `helm template` with
the defaults renders exactly manifests/deploy's objects (Helm's own labels aside) but the Namespace, which the chart
renders only with namespace.create (`helm install --create-namespace` makes it), the webhook template is generated
from the code that renders manifests/deploy/webhooks.yaml, and every value reaches the relay as a flag its own
parser accepts; values.schema.json refuses a bad value by name. The server-side dry runs of each mode are in
tests/e2e/test_chart_dry_run.py, a real `helm install` and the release notes in tests/e2e/test_chart_install.py."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from failover.admission.registry import WEBHOOKS, Decider
from failover.state.savepoint import FailureMode
from relay.cli import build_parser
from relay.commands.manifests.admission_policies import render_admission_policies
from relay.commands.manifests.chart import MEMBER_DECIDERS, render_chart_admission_policies, render_chart_webhooks
from relay.commands.manifests.webhooks import (
    CERT_MANAGER_INJECT_ANNOTATION,
    WebhookOptions,
    cert_manager_annotations,
    service_endpoint,
    webhook_entries,
)
from relay.settings import (
    ControllerMode,
    LogFormat,
    Settings,
    apply,
    check_settings,
    flag_values,
    load_settings,
)
from relay.settings.json_schema import compact_json, with_config_schema
from tests.helm import CHART, HelmError, helm, template, template_text, without_helm_labels

REPO_ROOT = Path(__file__).resolve().parents[2]
DEPLOY = REPO_ROOT / "manifests" / "deploy"
MONITORING = REPO_ROOT / "manifests" / "monitoring"
FLINK_INTERPRETER = REPO_ROOT / "manifests" / "karmada" / "flinkdeployment-interpreter.yaml"
NAMESPACE = "failover-relay"
SCHEMA = CHART / "values.schema.json"
# The scheduling and metadata values of the usual charts (cert-manager's, Kyverno's, Karmada's), each set.
SCHEDULING: dict[str, Any] = {
    "nodeSelector": {"kubernetes.io/os": "linux"},
    "tolerations": [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}],
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["system"]}]}]
            }
        }
    },
    "priorityClassName": "system-cluster-critical",
    "podAnnotations": {"example.com/team": "streaming"},
    "podLabels": {"example.com/tier": "platform"},
    "serviceAccount": {"annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/relay"}},
}


# A member relay without the storage fence's watcher (on by default; the fence test covers it).
NO_WATCHER = {"fence": {"watch": False}}


def _documents(path: Path) -> list[dict[str, Any]]:
    return [document for document in yaml.safe_load_all(path.read_text()) if document]


def _kustomize_install(directory: Path = REPO_ROOT / "manifests") -> list[dict[str, Any]]:
    """`kubectl kustomize manifests/`: the objects `kubectl apply -k manifests/` installs."""
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not on PATH; it renders manifests/ (.ci/run installs it)")
    rendered = subprocess.run(
        ["kubectl", "kustomize", str(directory)], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    return [document for document in yaml.safe_load_all(rendered) if document]


def _by_key(objects: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    keyed = {(o["kind"], o["metadata"]["name"]): without_helm_labels(o) for o in objects}
    assert len(keyed) == len(objects), "two objects of one kind and name"
    return keyed


def _one(objects: list[dict[str, Any]], kind: str, name: str = "failover-relay") -> dict[str, Any]:
    [found] = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def _container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    [container] = _one(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    return container


def _relay_settings(rendered: list[dict[str, Any]], tmp_path: Path) -> Settings:
    """The settings the rendered relay starts with: its flags over its ConfigMap's config file, checked."""
    args = _container(rendered)["args"]
    config_maps = [o for o in rendered if o["kind"] == "ConfigMap"]
    if config_maps:
        config_file = tmp_path / "config.yaml"
        config_file.write_text(_one(config_maps, "ConfigMap")["data"]["config.yaml"])
        args = [f"--config={config_file}" if arg.startswith("--config=") else arg for arg in args]
    parsed = build_parser().parse_args(args)
    settings = apply(load_settings(parsed.config), flag_values(parsed))
    check_settings(settings)
    return settings


def _webhook_names(objects: list[dict[str, Any]]) -> set[str]:
    return {w["name"] for o in objects if o["kind"].endswith("WebhookConfiguration") for w in o["webhooks"]}


def test_webhook_template_is_generated_from_the_registry() -> None:
    template_file = CHART / "templates" / "webhooks.yaml"

    assert template_file.read_text() == render_chart_webhooks(), (
        "chart/failover-relay/templates/webhooks.yaml drifted from relay/commands/manifests/webhooks.py; re-render it "
        "with `python -m relay.commands.manifests.chart > chart/failover-relay/templates/webhooks.yaml`"
    )


def test_admission_policies_template_is_generated_from_the_registry() -> None:
    template_file = CHART / "templates" / "admission-policies.yaml"

    assert template_file.read_text() == render_chart_admission_policies(), (
        "chart/failover-relay/templates/admission-policies.yaml drifted; re-render it with `python -m "
        "relay.commands.manifests.chart --admission-policies > chart/failover-relay/templates/admission-policies.yaml`"
    )


POLICY_KINDS = ("ValidatingAdmissionPolicy", "MutatingAdmissionPolicy")


def _kind_and_name(obj: dict[str, Any]) -> tuple[str, str]:
    return obj["kind"], obj["metadata"]["name"]


@pytest.mark.parametrize("mode", ["webhook", "cel", "both"])
def test_admission_mode_chooses_the_rule_webhooks_and_the_cel_policies(helm_bin: Path, mode: str) -> None:
    rendered = template(helm_bin, values={"webhooks": {"admissionMode": mode}})
    policies = [without_helm_labels(o) for o in rendered if o["kind"].startswith(POLICY_KINDS)]
    rule_webhooks = {w.name for w in WEBHOOKS if w.decider is Decider.RULE}
    every_webhook = _webhook_names(template(helm_bin))

    expected = [] if mode == "webhook" else [o for o in yaml.safe_load_all(render_admission_policies(NAMESPACE)) if o]
    # Helm orders the objects by kind.
    assert sorted(policies, key=_kind_and_name) == sorted(map(without_helm_labels, expected), key=_kind_and_name)
    registered = _webhook_names(rendered)
    assert registered == (every_webhook - rule_webhooks if mode == "cel" else every_webhook)
    if mode == "cel":
        assert not [o for o in rendered if o["kind"] == "ValidatingWebhookConfiguration"], "no webhook is left in it"


@pytest.mark.parametrize(
    "values",
    [
        {},
        {"mode": "member", **NO_WATCHER},
        {
            "certificates": {"mode": "certManager"},
            "networkPolicy": {"enabled": True, "apiserverCIDRs": ["10.0.0.0/28"]},
        },
        {"namespace": {"create": True}, **SCHEDULING},
        {"webhooks": {"admissionMode": "both"}},
    ],
    ids=["control-plane", "member", "cert-manager", "namespace-and-scheduling", "admission-both"],
)
def test_chart_lints_in_every_mode(helm_bin: Path, values: dict[str, Any]) -> None:
    result = helm(
        helm_bin,
        "lint",
        "--strict",
        str(CHART),
        "--namespace",
        NAMESPACE,
        "--values",
        "-",
        input=yaml.safe_dump(values),
        check=False,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 chart(s) failed" in result.stdout


def test_defaults_render_the_kustomize_install(helm_bin: Path) -> None:
    rendered = _by_key(template(helm_bin))
    kustomize = _by_key(_kustomize_install())
    # The one difference: manifests/deploy makes the namespace; the chart leaves it to `helm install
    # --create-namespace` unless namespace.create renders it, as manifests/deploy's.
    namespace = kustomize.pop(("Namespace", NAMESPACE))

    assert sorted(rendered) == sorted(kustomize)
    for key, expected in kustomize.items():
        assert rendered[key] == expected, f"{key} differs between the chart and manifests/deploy"
    with_namespace = _by_key(template(helm_bin, values={"namespace": {"create": True}}))
    assert with_namespace.pop(("Namespace", NAMESPACE)) == namespace
    assert with_namespace == rendered


@pytest.mark.parametrize("name", ["prometheus-rules.yaml", "grafana-dashboard.json"])
def test_the_charts_monitoring_files_are_those_of_manifests_monitoring(name: str) -> None:
    assert (CHART / "files" / name).read_bytes() == (MONITORING / name).read_bytes(), (
        f"chart/failover-relay/files/{name} differs from manifests/monitoring/{name}: copy it over"
    )


def test_the_charts_flink_interpreter_is_that_of_manifests_karmada(helm_bin: Path) -> None:
    assert (CHART / "files" / FLINK_INTERPRETER.name).read_bytes() == FLINK_INTERPRETER.read_bytes(), (
        f"chart/failover-relay/files/{FLINK_INTERPRETER.name} differs from manifests/karmada/: copy it over"
    )
    rendered = template(helm_bin, values={"flinkDeploymentInterpreter": True})
    assert [o for o in rendered if o["kind"] == "ResourceInterpreterCustomization"] == _documents(FLINK_INTERPRETER)
    assert not [o for o in template(helm_bin) if o["kind"] == "ResourceInterpreterCustomization"], (
        "opt-in: it belongs to the karmada-apiserver, where the chart's default install does not go"
    )


def test_monitoring_renders_the_kustomize_monitoring_objects(helm_bin: Path) -> None:
    enabled = {"enabled": True}
    rendered = template(
        helm_bin, values={"monitoring": {"serviceMonitor": enabled, "prometheusRule": enabled, "dashboard": enabled}}
    )
    monitoring = [
        o
        for o in rendered
        if o["kind"] in ("ServiceMonitor", "PrometheusRule") or o["metadata"]["name"] == "failover-relay-dashboard"
    ]
    kustomize = _by_key(_kustomize_install(MONITORING))

    assert sorted(_by_key(monitoring)) == sorted(kustomize)
    for key, obj in _by_key(monitoring).items():
        assert obj == kustomize[key], f"{key} differs between the chart and manifests/monitoring"
    assert not [o for o in template(helm_bin) if o["kind"] in ("ServiceMonitor", "PrometheusRule")], (
        "monitoring is opt-in: the CRDs may not be installed"
    )


def test_monitoring_labels_reach_the_prometheus_selectors(helm_bin: Path) -> None:
    rendered = template(
        helm_bin,
        values={
            "monitoring": {
                "labels": {"release": "kube-prometheus-stack"},
                "serviceMonitor": {"enabled": True},
                "prometheusRule": {"enabled": True},
            }
        },
    )
    for kind in ("ServiceMonitor", "PrometheusRule"):
        assert _one(rendered, kind)["metadata"]["labels"]["release"] == "kube-prometheus-stack"


def test_network_policy_is_the_optional_manifest(helm_bin: Path) -> None:
    rendered = template(helm_bin, values={"networkPolicy": {"enabled": True}})
    [expected] = _documents(DEPLOY / "optional" / "networkpolicy.yaml")

    assert without_helm_labels(_one(rendered, "NetworkPolicy")) == expected
    with_cidrs = template(helm_bin, values={"networkPolicy": {"enabled": True, "apiserverCIDRs": ["10.0.0.0/28"]}})
    cidr_rule = _one(with_cidrs, "NetworkPolicy")["spec"]["ingress"][1]
    assert cidr_rule == {"from": [{"ipBlock": {"cidr": "10.0.0.0/28"}}], "ports": [{"port": 9443, "protocol": "TCP"}]}


def test_namespace_is_kept_out_of_karmadas_propagation(helm_bin: Path) -> None:
    rendered = template(helm_bin, values={"namespace": {"create": True}})
    for namespace in (_one(rendered, "Namespace", NAMESPACE), _documents(DEPLOY / "namespace.yaml")[0]):
        assert namespace["metadata"]["labels"]["namespace.karmada.io/skip-auto-propagation"] == "true"


def test_the_release_namespace_is_left_to_helm_install_by_default(helm_bin: Path) -> None:
    """`helm install -n NS --create-namespace` refuses a chart that renders NS itself (docs/operations.md, "Helm")."""
    assert "Namespace" not in {o["kind"] for o in template(helm_bin)}
    assert "Namespace" not in {o["kind"] for o in template(helm_bin, values={"mode": "member", **NO_WATCHER})}


def test_member_mode_registers_the_flink_mutation_only(helm_bin: Path) -> None:
    rendered = template(helm_bin, values={"mode": "member", **NO_WATCHER})
    kustomize = _kustomize_install()
    options = WebhookOptions(service_endpoint("failover-relay", NAMESPACE), ca_bundle=None)
    member_webhooks = {
        entry["name"]
        for webhook in WEBHOOKS
        if webhook.decider in MEMBER_DECIDERS
        for entry in webhook_entries(webhook, options, mutating=True)
    }

    assert member_webhooks and _webhook_names(rendered) == member_webhooks
    assert [o for o in rendered if o["kind"] == "ValidatingWebhookConfiguration"] == []
    # Each remaining webhook is the kustomize install's, unchanged.
    expected = {w["name"]: w for w in _one(kustomize, "MutatingWebhookConfiguration")["webhooks"]}
    for webhook in _one(rendered, "MutatingWebhookConfiguration")["webhooks"]:
        assert webhook == expected[webhook["name"]]
    # No loop: no Lease, no Karmada API; the caBundle upkeep of its own configurations only.
    assert "--no-controllers" in _container(rendered)["args"]
    assert {o["kind"] for o in rendered} >= {"Deployment", "Service", "ClusterRole"}
    assert not {"Role", "RoleBinding"} & {o["kind"] for o in rendered}
    [rule] = _one(rendered, "ClusterRole")["rules"]
    assert rule["apiGroups"] == ["admissionregistration.k8s.io"] and rule["resourceNames"] == ["failover-relay"]


def test_cert_manager_mode_mounts_the_certificate_and_annotates_the_webhooks(helm_bin: Path) -> None:
    rendered = template(helm_bin, values={"certificates": {"mode": "certManager"}})
    certificate = _one(rendered, "Certificate")
    pod = _one(rendered, "Deployment")["spec"]["template"]["spec"]
    flags = dict(arg[2:].split("=", 1) for arg in _container(rendered)["args"] if "=" in arg)

    # The certificate names what the apiserver dials; the relay serves it from the mounted Secret.
    assert f"{flags['service-name']}.{flags['namespace']}.svc" in certificate["spec"]["dnsNames"]
    [certs] = [v for v in pod["volumes"] if v["name"] == "certs"]
    assert certs == {"name": "certs", "secret": {"secretName": certificate["spec"]["secretName"]}}
    assert {m["name"]: m["mountPath"] for m in _container(rendered)["volumeMounts"]}["certs"] == flags["cert-dir"]
    # cert-manager's CA injector fills caBundle; the relays leave configurations with its annotation alone.
    for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
        configuration = _one(rendered, kind)
        assert configuration["metadata"]["annotations"] == cert_manager_annotations(
            f"{NAMESPACE}/{certificate['metadata']['name']}"
        )
        assert all("caBundle" not in w["clientConfig"] for w in configuration["webhooks"])
    # Without an issuerRef the chart makes its own CA: self-signed root -> CA Issuer -> serving certificate.
    issuers = {o["metadata"]["name"]: o["spec"] for o in rendered if o["kind"] == "Issuer"}
    assert issuers[certificate["spec"]["issuerRef"]["name"]] == {"ca": {"secretName": "failover-relay-ca"}}
    assert _one(rendered, "Certificate", "failover-relay-ca")["spec"]["isCA"] is True
    # With one, only the serving certificate.
    own = template(
        helm_bin,
        values={
            "certificates": {
                "mode": "certManager",
                "certManager": {"issuerRef": {"name": "corp-ca", "kind": "ClusterIssuer"}},
            }
        },
    )
    assert [o["kind"] for o in own if o["kind"] in ("Issuer", "Certificate")] == ["Certificate"]
    assert _one(own, "Certificate")["spec"]["issuerRef"] == {"name": "corp-ca", "kind": "ClusterIssuer"}


def test_values_reach_the_relay_as_flags_its_parser_accepts(helm_bin: Path, tmp_path: Path) -> None:
    values = {
        "savepoint": {"checkpointRoot": "s3://flink/checkpoints", "storageSecret": "flink-s3"},
        "failback": True,
        "karmadaKubeconfigSecret": "failover-relay-karmada",
        "replicaCount": 3,
        "extraArgs": ["--savepoint-failure-mode=closed", "--log-level=debug"],
        "resources": {"requests": {"cpu": "50m", "memory": "96Mi"}, "limits": {"memory": "256Mi"}},
        "config": {"savepoint": {"lateRestore": True}, "controllers": {"workers": 4}},
    }
    rendered = template(helm_bin, values=values)
    container = _container(rendered)
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    config_file = tmp_path / "config.yaml"
    config_file.write_text(_one(rendered, "ConfigMap")["data"]["config.yaml"])
    args = [f"--config={config_file}" if arg.startswith("--config=") else arg for arg in container["args"]]

    parsed = build_parser().parse_args(args)
    settings = apply(apply(load_settings(parsed.config), flag_values(parsed)), {})
    check_settings(settings)

    assert settings.savepoint.checkpoint_root == "s3://flink/checkpoints"
    assert settings.controllers.decisions.failback_enabled is True
    assert settings.controllers.kubeconfig == f"{mounts['karmada']}/kubeconfig"
    assert settings.savepoint.late_restore is True and settings.controllers.workers == 4
    assert settings.controllers.mode is ControllerMode.AUTO
    # extraArgs come last, so they win over the chart's own flags.
    assert settings.savepoint.failure_mode is FailureMode.CLOSED
    assert container["args"][-2:] == values["extraArgs"]
    assert container["envFrom"] == [{"secretRef": {"name": "flink-s3"}}]
    assert container["resources"] == values["resources"]
    assert _one(rendered, "Deployment")["spec"]["replicas"] == 3
    # One replica: no PodDisruptionBudget (minAvailable 1 would block every drain).
    assert "PodDisruptionBudget" not in {o["kind"] for o in template(helm_bin, values={"replicaCount": 1})}
    assert f"--config={mounts['config']}/config.yaml" in container["args"]
    # A changed config rolls the pods.
    annotations = _one(rendered, "Deployment")["spec"]["template"]["metadata"]["annotations"]
    changed = template(helm_bin, values={**values, "config": {"savepoint": {"lateRestore": False}}})
    assert annotations != _one(changed, "Deployment")["spec"]["template"]["metadata"]["annotations"]
    # Member mode: the loop's settings have no flag there.
    member = _container(template(helm_bin, values={**values, "mode": "member", **NO_WATCHER}))["args"]
    assert "--no-controllers" in member and "--failback" not in member
    assert not any(arg.startswith("--kubeconfig") for arg in member)


def test_a_member_with_cert_manager_runs_slim_without_rbac(helm_bin: Path) -> None:
    values = {
        "mode": "member",
        "certificates": {"mode": "certManager"},
        "savepoint": {"checkpointRoot": "s3://flink/checkpoints"},
        **NO_WATCHER,
    }
    rendered = template(helm_bin, values=values)
    args = _container(rendered)["args"]

    settings = apply(Settings(), flag_values(build_parser().parse_args(args)))
    check_settings(settings)  # --member refuses to start without a checkpoint root or with the loop on

    assert settings.member and "--no-controllers" not in args
    assert not {"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"} & {o["kind"] for o in rendered}
    # The caBundle comes from cert-manager's CA injector, since a --member relay keeps none itself.
    assert CERT_MANAGER_INJECT_ANNOTATION in _one(rendered, "MutatingWebhookConfiguration")["metadata"]["annotations"]


def test_the_storage_fence_is_on_in_both_relays_unless_turned_off(helm_bin: Path, tmp_path: Path) -> None:
    root = {"savepoint": {"checkpointRoot": "s3://flink/checkpoints"}}
    # The control plane: on by default wherever it has a checkpoint root; false turns it off, true insists.
    assert _relay_settings(template(helm_bin, values=root), tmp_path).storage_fence_on()
    off = {**root, "fence": {"storage": False}, "config": {"controllers": {"workers": 4}}}
    settings = _relay_settings(template(helm_bin, values=off), tmp_path)
    assert not settings.storage_fence_on() and settings.controllers.workers == 4
    assert _relay_settings(template(helm_bin, values={**root, "fence": {"storage": True}}), tmp_path).fence.storage

    # A member: the watcher runs unless turned off, so a member install must name its cluster or say no.
    member = {**root, "mode": "member", "certificates": {"mode": "certManager"}}
    with pytest.raises(HelmError, match="mode member: set fence.memberCluster"):
        template_text(helm_bin, values=member)
    member["fence"] = {"memberCluster": "member1"}
    rendered = template(helm_bin, values=member)
    settings = _relay_settings(rendered, tmp_path)
    assert settings.member and settings.fence.member_cluster == "member1"
    [role] = [o for o in rendered if o["kind"] == "ClusterRole"]
    assert role["rules"] == [
        {
            "apiGroups": ["flink.apache.org"],
            "resources": ["flinkdeployments", "flinksessionjobs"],
            "verbs": ["get", "patch"],
        },
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "delete"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]},
    ]
    # The same rules as manifests/member/ gives a member relay installed with kubectl.
    documents = yaml.safe_load_all((REPO_ROOT / "manifests" / "member" / "fence-watcher-rbac.yaml").read_text())
    [plain_role] = [o for o in documents if o and o["kind"] == "ClusterRole"]
    assert plain_role["rules"] == role["rules"]
    # The webhook entry that keeps a fenced copy suspended, only there.
    fence_entry = "fence.savepoints.mutate.failover-relay.io"
    names = [w["name"] for w in _one(rendered, "MutatingWebhookConfiguration")["webhooks"]]
    assert fence_entry in names
    plain = template(helm_bin, values={**member, **NO_WATCHER})
    assert fence_entry not in [w["name"] for w in _one(plain, "MutatingWebhookConfiguration")["webhooks"]]
    assert "ClusterRole" not in {o["kind"] for o in plain}
    assert _relay_settings(plain, tmp_path).fence.member_cluster is None
    # The --no-controllers member form has no fence watcher: said at render time.
    with pytest.raises(HelmError, match="fence.memberCluster needs the --member form"):
        template_text(helm_bin, values={**member, "certificates": {"mode": "selfManaged"}})


def test_another_namespace_is_named_everywhere(helm_bin: Path) -> None:
    rendered = template(helm_bin, namespace="relay-system")
    container = _container(rendered)

    assert "--namespace=relay-system" in container["args"]
    assert {
        o["metadata"].get("namespace")
        for o in rendered
        if o["kind"]
        not in (
            "Namespace",
            "ClusterRole",
            "ClusterRoleBinding",
            "ValidatingWebhookConfiguration",
            "MutatingWebhookConfiguration",
        )
    } == {"relay-system"}
    for kind in ("ClusterRoleBinding", "RoleBinding"):
        assert (
            _one(rendered, kind, next(o["metadata"]["name"] for o in rendered if o["kind"] == kind))["subjects"][0][
                "namespace"
            ]
            == "relay-system"
        )
    for configuration in (
        _one(rendered, "ValidatingWebhookConfiguration"),
        _one(rendered, "MutatingWebhookConfiguration"),
    ):
        for webhook in configuration["webhooks"]:
            assert webhook["clientConfig"]["service"]["namespace"] == "relay-system"
            assert webhook["namespaceSelector"]["matchExpressions"][0]["values"] == ["kube-system", "relay-system"]


def test_webhooks_by_url_for_an_apiserver_without_the_service(helm_bin: Path) -> None:
    ca = base64.b64encode(b"-----BEGIN CERTIFICATE-----\n").decode()
    rendered = template(
        helm_bin,
        values={"webhooks": {"url": "https://relay.example:9443/", "caBundle": ca, "savepointFailurePolicy": "Fail"}},
    )

    for configuration in (
        _one(rendered, "ValidatingWebhookConfiguration"),
        _one(rendered, "MutatingWebhookConfiguration"),
    ):
        for webhook in configuration["webhooks"]:
            path = "/validate" if configuration["kind"].startswith("Validating") else "/mutate"
            assert webhook["clientConfig"] == {"url": f"https://relay.example:9443{path}", "caBundle": ca}
            assert webhook["failurePolicy"] == "Fail"
    assert "MutatingWebhookConfiguration" not in {
        o["kind"] for o in template(helm_bin, values={"webhooks": {"create": False}})
    }


def test_scheduling_and_metadata_values_reach_the_pod(helm_bin: Path) -> None:
    rendered = template(helm_bin, values={**SCHEDULING, "config": {"savepoint": {"lateRestore": True}}})
    pod = _one(rendered, "Deployment")["spec"]["template"]
    defaults = _one(template(helm_bin), "Deployment")["spec"]["template"]

    for key in ("nodeSelector", "tolerations", "affinity", "priorityClassName"):
        assert pod["spec"][key] == SCHEDULING[key]
    assert pod["metadata"]["labels"].items() >= SCHEDULING["podLabels"].items()
    assert pod["metadata"]["labels"]["app.kubernetes.io/name"] == "failover-relay"
    # The pod's annotations beside the checksum that rolls it on a config change.
    assert set(pod["metadata"]["annotations"]) == {"example.com/team", "checksum/config"}
    assert _one(rendered, "ServiceAccount")["metadata"]["annotations"] == SCHEDULING["serviceAccount"]["annotations"]
    # Spreading stays; the default affinity (one replica per node) is what affinity replaces.
    assert pod["spec"]["topologySpreadConstraints"] == defaults["spec"]["topologySpreadConstraints"]
    assert set(defaults["spec"]["affinity"]) == {"podAntiAffinity"}
    assert not {"nodeSelector", "tolerations", "priorityClassName"} & set(defaults["spec"])


def _undescribed(schema: dict[str, Any], node: dict[str, Any], values: dict[str, Any], prefix: str = "") -> list[str]:
    """The dotted names in ``values`` that ``node`` of ``schema`` does not describe; maps of the user's own keys
    (labels, selectors, config: no ``properties``) end the walk."""
    if "$ref" in node:
        node = schema["definitions"][node["$ref"].removeprefix("#/definitions/")]
    if "properties" not in node:
        return []
    missing = []
    for name, value in values.items():
        if name not in node["properties"]:
            missing.append(prefix + name)
        elif isinstance(value, dict):
            missing += _undescribed(schema, node["properties"][name], value, f"{prefix}{name}.")
    return missing


def test_the_config_schema_is_the_relays_declarations_written_out() -> None:
    assert SCHEMA.read_text() == compact_json(with_config_schema(json.loads(SCHEMA.read_text()))) + "\n", (
        "values.schema.json is stale: python -m relay.settings.json_schema chart/failover-relay/values.schema.json"
    )


def test_the_schema_describes_every_value_and_the_relays_choices() -> None:
    schema = json.loads(SCHEMA.read_text())
    values = yaml.safe_load((CHART / "values.yaml").read_text())

    assert _undescribed(schema, schema, values) == []
    assert schema["properties"]["logFormat"]["enum"] == [str(choice) for choice in LogFormat]


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({"mode": "members"}, "at '/mode': value must be one of 'controlPlane', 'member'"),
        ({"certificates": {"mode": "vault"}}, "at '/certificates/mode'"),
        ({"webhooks": {"savepointFailurePolicy": "ignore"}}, "at '/webhooks/savepointFailurePolicy'"),
        ({"webhooks": {"url": "http://relay.example"}}, "at '/webhooks/url'"),
        ({"webhooks": {"admissionMode": "CEL"}}, "at '/webhooks/admissionMode'"),
        # Renamed in 0.1.0 as the usual charts spell it: the old name is refused, not ignored.
        ({"replicas": 3}, "additional properties 'replicas' not allowed"),
        ({"replicaCount": "2"}, "at '/replicaCount': got string, want integer"),
        ({"replicaCount": 0}, "at '/replicaCount'"),
        ({"failback": "yes"}, "at '/failback': got string, want boolean"),
        ({"flinkDeploymentInterpreter": "true"}, "at '/flinkDeploymentInterpreter': got string, want boolean"),
        ({"logFormat": "text"}, "at '/logFormat'"),
        ({"nodeSelector": {"pool": True}}, "at '/nodeSelector/pool': got boolean, want string"),
        ({"tolerations": {"key": "x"}}, "at '/tolerations': got object, want array"),
        ({"affinity": {"nodeSelector": {}}}, "at '/affinity': additional properties 'nodeSelector' not allowed"),
        ({"podLabels": {"app.kubernetes.io/name": "mine"}}, "at '/podLabels'"),
        ({"extraArgs": "--failback"}, "at '/extraArgs': got string, want array"),
        ({"extraArgs": ["failback"]}, "at '/extraArgs/0'"),
        ({"serviceAccount": {"name": "other"}}, "at '/serviceAccount': additional properties 'name' not allowed"),
        ({"namespace": {"create": "true"}}, "at '/namespace/create': got string, want boolean"),
        ({"certificates": {"certManager": {"issuerRef": {"kind": "ClusterIssuer"}}}}, "missing property 'name'"),
        ({"certificates": {"certManager": {"duration": "90d"}}}, "at '/certificates/certManager/duration'"),
        ({"savepoint": {"checkpointRoot": 3}}, "at '/savepoint/checkpointRoot': got number, want string"),
        ({"monitoring": {"serviceMonitor": {"enabled": 1}}}, "at '/monitoring/serviceMonitor/enabled'"),
        ({"imagePullSecrets": ["regcred"]}, "at '/imagePullSecrets/0': got string, want object"),
        # The relay's config file, checked against its own declarations (relay/settings/json_schema.py).
        ({"config": {"server": {"prot": 1}}}, "at '/config/server': additional properties 'prot' not allowed"),
        ({"config": {"controllers": {"mode": True}}}, "at '/config/controllers/mode'"),
        ({"config": {"controllers": {"workers": 0}}}, "at '/config/controllers/workers'"),
        ({"config": {"webhooks": {}}}, "at '/config': additional properties 'webhooks' not allowed"),
    ],
)
def test_a_bad_value_fails_the_render_naming_it(helm_bin: Path, values: dict[str, Any], named: str) -> None:
    with pytest.raises(HelmError) as failure:
        template_text(helm_bin, values=values)

    assert named in str(failure.value)


@pytest.mark.parametrize(
    "values",
    [
        SCHEDULING,
        {"certificates": {"certManager": {"issuerRef": {"name": "corp-ca", "kind": "ClusterIssuer"}}}},
        {"imagePullSecrets": [{"name": "regcred"}], "image": {"tag": "0.1.1", "pullPolicy": "Always"}},
        {"resources": {"requests": {"cpu": 0.5, "memory": "1Gi"}}, "replicaCount": 1, "logFormat": "console"},
        {"webhooks": {"url": "https://relay.example:9443", "caBundle": "LS0tLS1CRUdJTg=="}},
        {"global": {"imageRegistry": "registry.example.com"}},
    ],
)
def test_good_values_pass_the_schema(helm_bin: Path, values: dict[str, Any]) -> None:
    assert template(helm_bin, values=values)


def test_the_chart_readme_is_generated_from_values_yaml() -> None:
    readme = CHART / "README.md"
    result = subprocess.run(
        [sys.executable, str(REPO_ROOT / "hack" / "chart-readme.py"), "--check"], capture_output=True, text=True
    )

    assert result.returncode == 0, (
        f"{readme.relative_to(REPO_ROOT)} differs from values.yaml's comments: run `python hack/chart-readme.py`"
    )
    # Every value is in it.
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    for name in values:
        assert f"| `{name}" in readme.read_text(), name
