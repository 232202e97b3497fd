"""etcd and the environment's kube-apiservers: karmada-apiserver and one per member cluster.

One etcd keeps the data of all of them under separate prefixes: karmada-apiserver's under ``/registry``, each
member's under ``/<member>``. One etcd instead of four saves three processes and their idle work; the apiservers
cannot tell the difference. karmada-apiserver runs with ``artifacts/deploy/karmada-apiserver.yaml``'s flags (and an
audit log of Work writes); a member is a cluster as the envtest tier runs one, with a static token the Cluster's
secret carries. A stopped apiserver keeps its data in etcd and comes back on the same port.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from tests.apiserver import etcd_command, kube_apiserver_command, token_cluster_flags
from tests.karmada_env.audit import audit_flags
from tests.karmada_env.layout import KARMADA, Layout
from tests.karmada_env.processes import Components
from tests.processes import ChildProcess
from tests.tls_clients import unverified_tls

KARMADA_APISERVER = "karmada-apiserver"


def process_name(cluster: str) -> str:
    """The process (and port) name of a cluster's apiserver: karmada-apiserver, or the member's own name."""
    return KARMADA_APISERVER if cluster == KARMADA else cluster


def _etcd_prefix(name: str) -> str:
    return "/registry" if name == KARMADA_APISERVER else f"/{name}"


class Apiservers:
    """etcd and every kube-apiserver of one environment."""

    def __init__(self, components: Components, layout: Layout, binaries: Path) -> None:
        self.components = components
        self.layout = layout
        self.binaries = binaries  # etcd and kube-apiserver, the envtest tier's

    @property
    def etcd_url(self) -> str:
        return self.components.url("etcd", scheme="http")

    def url(self, cluster: str) -> str:
        return self.components.url(process_name(cluster))

    def pid(self, cluster: str) -> int | None:
        return self.components.pid(process_name(cluster))

    def start_etcd(self) -> None:
        def args() -> list[str]:
            return etcd_command(
                self.binaries / "etcd",
                name="karmada-env",
                data_dir=self.layout.etcd_data,
                client_url=self.etcd_url,
                peer_url=self.components.url("etcd-peer", scheme="http"),
                extra=["--log-level=warn"],
            )

        self.components.start("etcd", args, ("etcd", "etcd-peer"), lambda: f"{self.etcd_url}/health")

    def start(self, members: Sequence[str]) -> None:
        """karmada-apiserver and the members' apiservers (their ports picked already), all at once: each is
        CPU-bound for a few seconds on its post-start hooks."""
        names = [KARMADA_APISERVER, *members]
        processes = [self.components.spawn(name, self._args(name)) for name in names]
        for process in processes:
            self._await(process)

    def add(self, member: str) -> None:
        """One more member's apiserver (its serving certificate issued already), on new ports."""
        self.components.pick_ports(member)
        self._await(self.components.spawn(member, self._args(member)))

    def stop(self, cluster: str) -> None:
        """Stop the apiserver (by PID, SIGTERM then SIGKILL); its data stays in etcd."""
        self.components.stop(process_name(cluster))

    def start_again(self, cluster: str) -> float:
        """Start a stopped apiserver on its port again; the seconds until ``/readyz``."""
        started = time.monotonic()
        self.components.restart(process_name(cluster), f"{self.url(cluster)}/readyz", unverified_tls())
        return time.monotonic() - started

    def _await(self, process: ChildProcess) -> None:
        name = process.name
        self.components.await_ready(
            process, lambda: self._args(name), (name,), lambda: f"{self.components.url(name)}/readyz", unverified_tls()
        )

    def _args(self, name: str) -> list[str]:
        pki = self.layout.pki
        common = kube_apiserver_command(
            self.binaries / "kube-apiserver",
            port=self.components.ports[name],
            etcd_url=self.etcd_url,
            service_account_key=pki / "sa.pub",
            service_account_signing_key=pki / "sa.key",
            extra=[
                f"--etcd-prefix={_etcd_prefix(name)}",
                f"--client-ca-file={pki / 'ca.crt'}",
                f"--tls-cert-file={pki / (name + '.crt')}",
                f"--tls-private-key-file={pki / (name + '.key')}",
                "--v=0",
            ],
        )
        if name != KARMADA_APISERVER:
            return common + token_cluster_flags(pki / "member-tokens.csv")
        # artifacts/deploy/karmada-apiserver.yaml, with its paths and addresses; plus an audit log of Work writes,
        # where the relay's audit annotations (which fallback restored a job) can be read.
        return common + [
            *audit_flags(pki / "audit-policy.yaml", self.layout.audit_log),
            "--authorization-mode=Node,RBAC",
            "--enable-bootstrap-token-auth=true",
            "--disable-admission-plugins=StorageObjectInUseProtection,ServiceAccount",
            "--runtime-config=",
            "--service-cluster-ip-range=10.96.0.0/12",
            f"--proxy-client-cert-file={pki / 'front-proxy-client.crt'}",
            f"--proxy-client-key-file={pki / 'front-proxy-client.key'}",
            f"--requestheader-client-ca-file={pki / 'front-proxy-ca.crt'}",
            "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-username-headers=X-Remote-User",
            "--tls-min-version=VersionTLS13",
        ]
