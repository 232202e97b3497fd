"""A member cluster in Pull mode, as Karmada's ``hack/local-up-karmada.sh`` runs member3: its own kube-apiserver
(``apiservers.py``), and ``karmada-agent`` (``artifacts/agent/karmada-agent.yaml``'s flags) registering it
(``cmd/agent/app/agent.go``: the agent creates the Cluster, ``spec.syncMode: Pull``) with ``--cluster-api-endpoint``
an address the control plane cannot reach (``PULL_API_ENDPOINT``), as in production, so Karmada's cluster proxy fails
there. No credentials are reported (``--report-secrets=None``: the agent would wait for ServiceAccount token Secrets
that no kube-controller-manager creates here). The agent reaches karmada-apiserver through a TCP relay of its own
(``partitions.py``), which a test can cut."""

from __future__ import annotations

import time

from tests.crd_sources import KarmadaTree, flink_deployment_crd
from tests.karmada_env.apiservers import KARMADA_APISERVER
from tests.karmada_env.clients import Clients
from tests.karmada_env.karmada import CLUSTER_STATUS_UPDATE_FREQUENCY, NO_METRICS
from tests.karmada_env.layout import KARMADA, REPO_ROOT, Layout
from tests.karmada_env.members import wait_registered
from tests.karmada_env.partitions import Links, link
from tests.karmada_env.processes import Components
from tests.processes import LOOPBACK

# The Pull member of start_pull_member, and the API endpoint it registers: an address of TEST-NET-1 (RFC 5737), which
# no host answers, as a member behind NAT whose apiserver the control plane cannot reach.
PULL_MEMBER = "member4"
PULL_API_ENDPOINT = "https://192.0.2.1:6443"


def agent(member: str) -> str:
    """The name (process and health port) of the karmada-agent of a Pull member."""
    return f"karmada-agent-{member}"


def agent_link(member: str) -> str:
    """The name of the TCP relay between that agent and karmada-apiserver."""
    return link(agent(member))


class PullMembers:
    """The karmada-agents of the Pull members and their links."""

    def __init__(
        self,
        tree: KarmadaTree,
        components: Components,
        clients: Clients,
        layout: Layout,
        links: Links,
        verbosity: str,
    ) -> None:
        self.tree = tree
        self.components = components
        self.clients = clients
        self.layout = layout
        self.links = links
        self.verbosity = verbosity

    def join(self, member: str, *, with_relay: bool) -> None:
        """Register ``member``, whose apiserver runs: its kubeconfig, the FlinkDeployment CRD (and, ``with_relay``,
        the relay's member manifests), the agent's link and the agent; wait until the Cluster is Ready with
        FlinkDeployment in ``status.apiEnablements``."""
        self.clients.write_member_kubeconfig(member)
        self.clients.apply_crds(member, "-f", str(flink_deployment_crd()))
        for manifest in sorted((REPO_ROOT / "manifests" / "member").glob("*.yaml")) if with_relay else ():
            self.clients.kubectl("apply", "-f", str(manifest), cluster=member)
        self.components.pick_ports(agent(member), agent_link(member))
        self.links.start(agent_link(member), target=KARMADA_APISERVER)
        self.clients.write_kubeconfig(
            self.layout.agent_kubeconfig(agent(member)),
            self.links.url(agent_link(member)),
            self.clients.admin_certificate(),
        )
        self.start_agent(member)
        wait_registered(self.components, self.clients.api(KARMADA), member, "Pull ")

    def start_agent(self, member: str) -> float:
        """Start the member's karmada-agent (again); the seconds until its /healthz answers."""
        started = time.monotonic()
        name = agent(member)
        self.components.stopped_on_purpose = self.components.stopped_on_purpose - {name}
        self.components.start(
            name,
            lambda: [
                str(self.tree.bin / "karmada-agent"),
                f"--karmada-kubeconfig={self.layout.agent_kubeconfig(name)}",
                f"--kubeconfig={self.clients.kubeconfig(member)}",
                f"--cluster-name={member}",
                f"--cluster-api-endpoint={PULL_API_ENDPOINT}",
                f"--cluster-status-update-frequency={CLUSTER_STATUS_UPDATE_FREQUENCY}",
                "--report-secrets=None",
                "--leader-elect=false",
                NO_METRICS,
                f"--health-probe-bind-address={LOOPBACK}:{self.components.ports[name]}",
                f"--v={self.verbosity}",
            ],
            (name,),
            lambda: f"{self.components.url(name, scheme='http')}/healthz",
        )
        return time.monotonic() - started

    def stop_agent(self, member: str) -> None:
        """Stop the member's karmada-agent (by PID, SIGTERM then SIGKILL)."""
        self.components.stop(agent(member))

    def agent_pid(self, member: str) -> int | None:
        return self.components.pid(agent(member))

    def leave(self, member: str) -> None:
        """Stop the agent and its link (the member's apiserver is the apiservers' to stop)."""
        self.stop_agent(member)
        self.links.stop(agent_link(member))
