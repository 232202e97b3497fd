"""Karmada's own components on karmada-apiserver, as Karmada's ``hack/deploy-karmada.sh`` installs them.

Karmada's CRDs (``charts/karmada/_crds``) with the conversion patches pointing at karmada-webhook ``/convert``;
karmada-aggregated-apiserver behind the APIService ``v1alpha1.cluster.karmada.io``; karmada-webhook with
``artifacts/deploy/webhook-configuration.yaml``; karmada-controller-manager and karmada-scheduler, both without
leader election; and the Flink operator's FlinkDeployment CRD on karmada-apiserver and every member.
"""

from __future__ import annotations

import base64
import ssl
import time
from collections.abc import Sequence
from pathlib import Path

import yaml

from tests.crd_sources import ConversionWebhook, KarmadaTree, flink_deployment_crd, karmada_crds
from tests.karmada_env.clients import Clients
from tests.karmada_env.layout import KARMADA, Layout
from tests.karmada_env.processes import Components
from tests.processes import LOOPBACK
from tests.tls_clients import unverified_tls

# karmada-controller-manager beside the relay: the three controllers the relay replaces are off (docs/operations.md
# "Turning off the Karmada controllers failover-relay replaces"). Failover=true turns on the taint manager (cluster
# failover); Karmada itself only adds NoSchedule taints.
RELAY_CONTROLLERS = "*,-applicationFailover,-gracefulEviction,-workloadRebalancer"
KARMADA_CONTROLLERS = "*"
RELAY_GATES = "Failover=true"
# Karmada alone, as a user would run it for stateful failover (the gate writes preservedLabelState).
KARMADA_STATEFUL_GATES = "Failover=true,StatefulFailoverInjection=true"
# The relay writes cluster failover's eviction tasks (failover/reconcile/cluster_eviction.py), so the taint manager's
# eviction is off, as docs/operations.md recommends ("Turning off the Karmada controllers failover-relay replaces");
# Karmada alone, or beside the relay, runs it with TAINT_EVICTION among the args (pflag: the last value wins).
TAINT_EVICTION = "--enable-no-execute-taint-eviction=true"
CLUSTER_STATUS_UPDATE_FREQUENCY = "10s"
# Nothing reads Karmada's metrics here; each listener would be one more port to lose to free_port()'s race, and a
# controller-runtime manager that loses its metrics port still answers /healthz for the 30 s it takes to exit.
NO_METRICS = "--metrics-bind-address=0"
# The ports of Karmada's components, by what they are for.
PORTS = ("karmada-aggregated-apiserver", "karmada-webhook", "cm-health", "scheduler-health")
APISERVICE = "/apis/apiregistration.k8s.io/v1/apiservices/v1alpha1.cluster.karmada.io"


class KarmadaComponents:
    """karmada-aggregated-apiserver, karmada-webhook, karmada-controller-manager and karmada-scheduler."""

    def __init__(
        self, tree: KarmadaTree, components: Components, clients: Clients, layout: Layout, verbosity: str
    ) -> None:
        self.tree = tree
        self.components = components
        self.clients = clients
        self.layout = layout
        self.verbosity = verbosity  # Karmada's --v

    @property
    def webhook_url(self) -> str:
        return self.components.url("karmada-webhook")

    @property
    def _admin(self) -> str:
        return str(self.clients.kubeconfig(KARMADA))

    def install(self, members: Sequence[str], ca_pem: bytes, etcd_url: str) -> None:
        """Everything on karmada-apiserver, up and registered; the FlinkDeployment CRD on every member too."""
        deploy = self.tree.source / "artifacts" / "deploy"
        self.clients.kubectl("apply", "-f", str(deploy / "namespace.yaml"))
        self.clients.kubectl("create", "namespace", "karmada-cluster")
        # The aggregated apiserver and the webhook are up (on their final ports) before anything names their URLs.
        self._start_aggregated_apiserver(etcd_url)
        self._start_webhook()
        self._apply_crds(members, ca_pem)
        ca_bundle = base64.b64encode(ca_pem).decode()
        self._register_aggregated_apiserver(deploy, ca_bundle)
        webhooks = (
            (deploy / "webhook-configuration.yaml")
            .read_text()
            .replace("https://karmada-webhook.karmada-system.svc:443", self.webhook_url)
            .replace("{{caBundle}}", ca_bundle)
        )
        self.clients.kubectl("apply", "-f", "-", input=webhooks)
        karmada = self.clients.api(KARMADA)
        self.components.wait_until(
            lambda: any(
                c.get("type") == "Available" and c.get("status") == "True"
                for c in ((karmada.get(APISERVICE) or {}).get("status", {}).get("conditions") or [])
            ),
            self.components.startup_timeout,
            "APIService v1alpha1.cluster.karmada.io",
        )
        self.start_controller_manager(RELAY_CONTROLLERS, RELAY_GATES, ())
        self._start_scheduler()

    def start_controller_manager(self, controllers: str, feature_gates: str, args: Sequence[str]) -> None:
        """karmada-controller-manager with these ``--controllers`` and ``--feature-gates`` (and ``args``), until
        healthy."""
        self.components.start(
            "karmada-controller-manager",
            lambda: [
                str(self.tree.bin / "karmada-controller-manager"),
                f"--kubeconfig={self._admin}",
                f"--controllers={controllers}",
                f"--feature-gates={feature_gates}",
                "--enable-no-execute-taint-eviction=false",
                f"--cluster-status-update-frequency={CLUSTER_STATUS_UPDATE_FREQUENCY}",
                "--leader-elect=false",
                NO_METRICS,
                f"--health-probe-bind-address={LOOPBACK}:{self.components.ports['cm-health']}",
                f"--v={self.verbosity}",
                *args,
            ],
            ("cm-health",),
            lambda: f"{self.components.url('cm-health', scheme='http')}/healthz",
        )

    def restart_controller_manager(self, controllers: str, feature_gates: str, args: Sequence[str]) -> float:
        """Run karmada-controller-manager with other flags; the seconds until it is healthy."""
        started = time.monotonic()
        process = self.components.processes.get("karmada-controller-manager")
        if process is not None:
            process.stop()
        self.start_controller_manager(controllers, feature_gates, args)
        return time.monotonic() - started

    def _start_aggregated_apiserver(self, etcd_url: str) -> None:
        pki = self.layout.pki
        self.components.start(
            "karmada-aggregated-apiserver",
            lambda: [
                str(self.tree.bin / "karmada-aggregated-apiserver"),
                f"--kubeconfig={self._admin}",
                f"--authentication-kubeconfig={self._admin}",
                f"--authorization-kubeconfig={self._admin}",
                f"--etcd-servers={etcd_url}",
                f"--tls-cert-file={pki / 'karmada-aggregated-apiserver.crt'}",
                f"--tls-private-key-file={pki / 'karmada-aggregated-apiserver.key'}",
                f"--bind-address={LOOPBACK}",
                f"--secure-port={self.components.ports['karmada-aggregated-apiserver']}",
                "--tls-min-version=VersionTLS13",
                f"--v={self.verbosity}",
            ],
            ("karmada-aggregated-apiserver",),
            lambda: f"{self.components.url('karmada-aggregated-apiserver')}/readyz",
            unverified_tls(),
        )

    def _start_webhook(self) -> None:
        # Its readiness is served on the webhook port (artifacts/deploy/karmada-webhook.yaml readinessProbe).
        self.components.start(
            "karmada-webhook",
            lambda: [
                str(self.tree.bin / "karmada-webhook"),
                f"--kubeconfig={self._admin}",
                f"--bind-address={LOOPBACK}",
                f"--secure-port={self.components.ports['karmada-webhook']}",
                f"--cert-dir={self.layout.pki / 'karmada-webhook'}",
                NO_METRICS,
                "--health-probe-bind-address=0",
                "--allow-no-execute-taint-policy=true",
                f"--v={self.verbosity}",
            ],
            ("karmada-webhook",),
            lambda: f"{self.webhook_url}/readyz",
            ssl.create_default_context(cafile=str(self.layout.ca_file)),
        )

    def _apply_crds(self, members: Sequence[str], ca_pem: bytes) -> None:
        crds = karmada_crds(
            self.tree, self.layout.karmada_crds, conversion=ConversionWebhook(f"{self.webhook_url}/convert", ca_pem)
        )
        self.clients.apply_crds(KARMADA, "-k", str(crds))
        self.clients.apply_crds(KARMADA, "-f", str(flink_deployment_crd()))
        for member in members:
            self.clients.apply_crds(member, "-f", str(flink_deployment_crd()))

    def _register_aggregated_apiserver(self, deploy: Path, ca_bundle: str) -> None:
        """The APIService and its Service, pointed at the local karmada-aggregated-apiserver."""
        template = (deploy / "karmada-aggregated-apiserver-apiservice.yaml").read_text()
        documents = list(yaml.safe_load_all(template.replace("{{caBundle}}", ca_bundle)))
        for document in documents:
            if document["kind"] == "APIService":
                document["spec"]["service"]["port"] = self.components.ports["karmada-aggregated-apiserver"]
            elif document["kind"] == "Service":
                document["spec"]["externalName"] = "localhost"
        self.clients.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(documents))

    def _start_scheduler(self) -> None:
        self.components.start(
            "karmada-scheduler",
            lambda: [
                str(self.tree.bin / "karmada-scheduler"),
                f"--kubeconfig={self._admin}",
                "--leader-elect=false",
                NO_METRICS,
                f"--health-probe-bind-address={LOOPBACK}:{self.components.ports['scheduler-health']}",
                "--enable-scheduler-estimator=false",
                f"--v={self.verbosity}",
            ],
            ("scheduler-health",),
            lambda: f"{self.components.url('scheduler-health', scheme='http')}/healthz",
        )
