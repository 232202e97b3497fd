"""Where one environment keeps its files: one temporary directory with the PKI, the logs, the kubeconfigs, etcd's
data, the relay's certificates and configuration, and the checkpoint root; kept after a failed run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
# The Karmada control plane's name where a cluster is named (kubeconfig, api, kubectl); members go by their own.
KARMADA = "karmada"


@dataclass(frozen=True)
class Layout:
    root: Path

    @property
    def pki(self) -> Path:
        return self.root / "pki"

    @property
    def logs_dir(self) -> Path:
        return self.root / "logs"

    @property
    def ca_file(self) -> Path:
        return self.pki / "ca.crt"

    @property
    def checkpoint_root(self) -> Path:
        return self.root / "checkpoints"

    @property
    def etcd_data(self) -> Path:
        return self.root / "etcd-data"

    @property
    def kubectl_cache(self) -> Path:
        return self.root / "kubectl-cache"

    @property
    def karmada_crds(self) -> Path:
        """Karmada's CRDs with the conversion patches pointed at the local karmada-webhook."""
        return self.root / "karmada-crds"

    def kubeconfig(self, cluster: str) -> Path:
        """The admin kubeconfig of karmada-apiserver (``KARMADA``) or of a member."""
        return self.root / f"{cluster}.kubeconfig"

    def agent_kubeconfig(self, agent: str) -> Path:
        """A karmada-agent's way to karmada-apiserver."""
        return self.root / f"{agent}.kubeconfig"

    @property
    def relay_kubeconfig(self) -> Path:
        return self.root / "relay.kubeconfig"

    @property
    def relay_cert_dir(self) -> Path:
        return self.root / "relay-certs"

    def member_relay_cert_dir(self, name: str) -> Path:
        return self.root / f"{name}-certs"

    @property
    def relay_config_file(self) -> Path:
        return self.root / "relay.yaml"

    def log(self, name: str) -> Path:
        """The log file of the process ``name``."""
        return self.logs_dir / f"{name}.log"

    @property
    def relay_log(self) -> Path:
        return self.log("failover-relay")

    @property
    def audit_log(self) -> Path:
        return self.logs_dir / "karmada-apiserver-audit.log"

    def make(self) -> None:
        """The directories a start fills (the PKI's own is made by the PKI, owner only)."""
        self.logs_dir.mkdir()
        self.checkpoint_root.mkdir()
