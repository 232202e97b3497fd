"""The relay installed from the Helm chart on a real Karmada: the chart's RBAC, namespace and webhook configurations
(``helm template``, control-plane mode, webhooks by URL as on a karmada-apiserver) replace the ones the harness
applied from manifests/, the relay restarts with the chart Deployment's flags and config file, fills the caBundle the
chart leaves out, and a failover still gets its restore path. The namespace's label keeps Karmada from copying it to
the members."""

from __future__ import annotations

import base64
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helm import template
from tests.karmada.workloads import FlinkJob, restore_path
from tests.karmada_env import KARMADA, RELAY_NAMESPACE, KarmadaEnv, resource_path
from tests.reporting import report

pytestmark = pytest.mark.karmada

TOLERATION_SECONDS = 5
FAILOVER_TIMEOUT_SECONDS = TOLERATION_SECONDS + 50
# What runs the pod in a cluster; here the harness's relay process plays it (no kubelet in the tier).
POD_OBJECTS = ("Deployment", "Service", "PodDisruptionBudget")
# Flags that name the pod's own listener and volumes; the harness's relay keeps its loopback ones.
POD_FLAGS = ("--host=", "--port=", "--cert-dir=", "--config=")
WEBHOOK_CONFIGURATIONS = ("validatingwebhookconfigurations", "mutatingwebhookconfigurations")


def _relay_ca_in_every_webhook(env: KarmadaEnv) -> bool:
    ca = base64.b64encode(Path(env.relay_cert_dir, "ca.crt").read_bytes()).decode()
    api = env.api(KARMADA)
    for plural in WEBHOOK_CONFIGURATIONS:
        configuration = api.get(resource_path("admissionregistration.k8s.io/v1", plural, "failover-relay")) or {}
        bundles = [w["clientConfig"].get("caBundle", "") for w in configuration.get("webhooks", [])]
        # The relay writes the union of its certificates and others' still valid ones, its own first.
        if not bundles or not all(base64.b64decode(ca) in base64.b64decode(bundle) for bundle in bundles):
            return False
    return True


def test_relay_installed_from_the_chart_fails_over_with_its_restore_path(
    karmada_env: KarmadaEnv, namespace: str, helm_bin: Path, request: pytest.FixtureRequest
) -> None:
    env = karmada_env
    values: dict[str, Any] = {
        # Rendered and applied with kubectl, as on a karmada-apiserver: the chart's Namespace with its labels too.
        "namespace": {"create": True},
        "webhooks": {"url": env.relay_url},
        "savepoint": {"checkpointRoot": str(env.checkpoint_root)},
        "karmadaKubeconfigSecret": "failover-relay-karmada",
        "failback": True,
        "config": {"savepoint": {"workLabels": True, "workSavepoints": True}},
    }
    rendered = template(helm_bin, RELAY_NAMESPACE, values)
    deployment = next(o for o in rendered if o["kind"] == "Deployment")
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    config = yaml.safe_load(next(o for o in rendered if o["kind"] == "ConfigMap")["data"]["config.yaml"])
    kubeconfig_flag = f"--kubeconfig={mounts['karmada']}/kubeconfig"
    args = [
        f"--kubeconfig={env.relay_kubeconfig}" if arg == kubeconfig_flag else arg
        for arg in container["args"][1:]
        if not arg.startswith(POD_FLAGS)
    ]
    assert "--failback" in args and f"--checkpoint-root={env.checkpoint_root}" in args

    # What belongs to the karmada-apiserver; the caBundle the harness had rendered is gone with this apply.
    env.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([o for o in rendered if o["kind"] not in POD_OBJECTS]))
    assert not _relay_ca_in_every_webhook(env)
    try:
        restart_seconds = env.restart_relay(config=config, args=args)
        env.wait_until(lambda: _relay_ca_in_every_webhook(env), 30, "the relay's CA in every webhook's caBundle")

        job = FlinkJob(env, namespace)
        first, job_id = job.start_stateful(TOLERATION_SECONDS)
        checkpoints = job.write_checkpoints(job_id, completed=(1, 2))
        job.report_unhealthy(first, job_id)
        unhealthy_at = time.monotonic()
        second, restored = job.wait_restored_outside(first, timeout=FAILOVER_TIMEOUT_SECONDS)
        seconds = time.monotonic() - unhealthy_at

        assert restore_path(restored) == checkpoints / "chk-2"
        # Karmada copies every namespace to every member except one labelled to skip it: the relay's own.
        for member in env.members:
            members_api = env.api(member)
            env.wait_until(
                lambda: members_api.get(  # noqa: B023  wait_until calls it in this iteration only
                    resource_path("v1", "namespaces", namespace)
                ),
                30,
                f"namespace {namespace} propagated to {member}",
            )
            assert members_api.get(resource_path("v1", "namespaces", RELAY_NAMESPACE)) is None
    finally:
        # The rest of the session runs the harness's relay again (same port, certificates and registration).
        env.restart_relay()
    report(
        request,
        "karmada",
        f"relay from the chart: ready {restart_seconds:.1f} s after restart; failover "
        f"{first} -> {second} with its restore path in {seconds:.1f} s",
    )
