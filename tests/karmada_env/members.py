"""The member clusters in Push mode, as ``karmadactl join`` registers them: each a kube-apiserver (``apiservers.py``)
behind its TCP relay (``partitions.py``), registered by that relay's address with its secrets in karmada-cluster and
``spec.id`` its kube-system UID, and waited for until Ready with FlinkDeployment in ``status.apiEnablements``."""

from __future__ import annotations

import base64
from collections.abc import Sequence

from tests.karmada_env.clients import Clients
from tests.karmada_env.layout import KARMADA
from tests.karmada_env.partitions import Links, link
from tests.karmada_env.processes import Components
from tests.kube_api import Api, resource_path

DEFAULT_MEMBERS = ("member1", "member2", "member3")
CLUSTERS = "/apis/cluster.karmada.io/v1alpha1/clusters"


def cluster_registered(karmada: Api, member: str) -> bool:
    """The Cluster is Ready and reports FlinkDeployment among its API enablements."""
    cluster = karmada.get(f"{CLUSTERS}/{member}") or {}
    status = cluster.get("status") or {}
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
    flink = any(
        e.get("groupVersion") == "flink.apache.org/v1beta1"
        and any(r.get("kind") == "FlinkDeployment" for r in e.get("resources") or [])
        for e in status.get("apiEnablements") or []
    )
    return ready and flink


def wait_registered(components: Components, karmada: Api, member: str, mode: str = "") -> None:
    components.wait_until(
        lambda: cluster_registered(karmada, member),
        components.startup_timeout,
        f"{mode}Cluster {member} Ready with FlinkDeployment in status.apiEnablements",
    )


class PushMembers:
    """Registering the members that the control plane reaches, each through its link."""

    def __init__(self, components: Components, clients: Clients, links: Links) -> None:
        self.components = components
        self.clients = clients
        self.links = links

    def start_links(self, members: Sequence[str]) -> None:
        """One TCP relay per member, ready when the member's ``/readyz`` answers through it."""
        for member in members:
            self.links.start(link(member), target=member)

    def register(self, members: Sequence[str], ca_pem: bytes, member_token: str) -> None:
        """Push-mode Clusters as ``karmadactl join`` creates them: secrets in karmada-cluster, spec.id."""
        karmada = self.clients.api(KARMADA)
        token = base64.b64encode(member_token.encode()).decode()
        ca_bundle = base64.b64encode(ca_pem).decode()
        for member in members:
            for name in (member, f"{member}-impersonator"):
                karmada.create(
                    resource_path("v1", "secrets", namespace="karmada-cluster"),
                    {
                        "apiVersion": "v1",
                        "kind": "Secret",
                        "metadata": {"name": name, "namespace": "karmada-cluster"},
                        "data": {"token": token, "caBundle": ca_bundle},
                    },
                )
            kube_system = self.clients.api(member).get(resource_path("v1", "namespaces", "kube-system"))
            assert kube_system is not None
            karmada.create(
                CLUSTERS,
                {
                    "apiVersion": "cluster.karmada.io/v1alpha1",
                    "kind": "Cluster",
                    "metadata": {"name": member},
                    "spec": {
                        "id": kube_system["metadata"]["uid"],
                        "apiEndpoint": self.links.url(link(member)),
                        "syncMode": "Push",
                        "secretRef": {"namespace": "karmada-cluster", "name": member},
                        "impersonatorSecretRef": {"namespace": "karmada-cluster", "name": f"{member}-impersonator"},
                    },
                },
            )
        for member in members:
            wait_registered(self.components, karmada, member)
