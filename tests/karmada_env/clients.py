"""How the harness and the tests talk to the environment's apiservers: kubeconfigs, kubectl and the REST client, as
admin of karmada-apiserver (a client certificate in ``system:masters``) or of a member (its static token)."""

from __future__ import annotations

import functools
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

from tests.apiserver import KUBECTL_TIMEOUT_SECONDS, apply_until_established, run_kubectl, write_kubeconfig
from tests.karmada_env.layout import KARMADA, Layout
from tests.karmada_env.processes import Components
from tests.kube_api import Api


class Clients:
    """kubectl and ``Api`` for every cluster of one environment."""

    def __init__(
        self,
        layout: Layout,
        components: Components,
        kubeconfig: Callable[[str], Path],
        server_url: Callable[[str], str],
        member_token: str,
    ) -> None:
        self.layout = layout
        self.components = components
        self.kubeconfig = kubeconfig  # the environment's, which knows its clusters
        self.server_url = server_url
        self.member_token = member_token

    def admin_certificate(self) -> dict[str, str]:
        pki = self.layout.pki
        return {"client-certificate": str(pki / "admin.crt"), "client-key": str(pki / "admin.key")}

    def write_kubeconfig(self, path: Path, server: str, user: Mapping[str, str]) -> None:
        write_kubeconfig(path, server, self.layout.ca_file, user)

    def write_member_kubeconfig(self, member: str) -> None:
        self.write_kubeconfig(self.layout.kubeconfig(member), self.server_url(member), {"token": self.member_token})

    def api(self, cluster: str = KARMADA) -> Api:
        """A REST client as admin of karmada-apiserver or a member."""
        if cluster == KARMADA:
            pki = self.layout.pki
            return Api(
                self.server_url(KARMADA), self.layout.ca_file, client_cert=(pki / "admin.crt", pki / "admin.key")
            )
        return Api(self.server_url(cluster), self.layout.ca_file, token=self.member_token)

    def kubectl(
        self,
        *args: str,
        cluster: str = KARMADA,
        input: str | None = None,
        check: bool = True,
        timeout: float = KUBECTL_TIMEOUT_SECONDS,
    ) -> subprocess.CompletedProcess[str]:
        return run_kubectl(
            self.kubeconfig(cluster), self.layout.kubectl_cache, *args, input=input, check=check, timeout=timeout
        )

    def apply_crds(self, cluster: str, *source: str) -> None:
        """Server-side apply (Karmada's CRDs exceed client-side apply's annotation limit); wait for Established."""
        apply_until_established(
            functools.partial(self.kubectl, cluster=cluster),
            self.api(cluster),
            source,
            field_manager="karmada-env",
            timeout=self.components.startup_timeout,
            wait=self.components.wait_until,
            where=f" in {cluster}",
        )
