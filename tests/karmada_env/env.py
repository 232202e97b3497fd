"""``KarmadaEnv``: the environment a test holds. It starts and stops the parts in order and hands every call to the
part whose job it is (the package docstring lists them)."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from tests.crd_sources import KarmadaTree
from tests.karmada_env import cleanup
from tests.karmada_env.apiservers import KARMADA_APISERVER, Apiservers
from tests.karmada_env.audit import audit_annotations
from tests.karmada_env.clients import Clients
from tests.karmada_env.karmada import PORTS as KARMADA_PORTS
from tests.karmada_env.karmada import RELAY_CONTROLLERS, RELAY_GATES, KarmadaComponents
from tests.karmada_env.layout import KARMADA, Layout
from tests.karmada_env.member_relays import MemberRelays
from tests.karmada_env.members import DEFAULT_MEMBERS, PushMembers
from tests.karmada_env.partitions import Links, link
from tests.karmada_env.pki import Authority, write_pki
from tests.karmada_env.processes import Components
from tests.karmada_env.propagation_probe import wait_propagating
from tests.karmada_env.pull_members import PULL_MEMBER, PullMembers, agent_link
from tests.karmada_env.relay import RELAY, RELAY_PORT, Relay, Replica
from tests.karmada_env.relay_config import RELAY_NAMESPACE, RELAY_USER
from tests.kube_api import Api
from tests.processes import LOG_TAIL_LINES, ControlPlaneError
from tests.waiting import POLL_SECONDS

# Cold start on two busy cores: an apiserver takes up to ~20 s, Clusters turn Ready after one status round.
STARTUP_TIMEOUT_SECONDS = 180.0
# Stopped first to last; anything else after them.
STOP_ORDER = (
    RELAY,
    "karmada-controller-manager",
    "karmada-scheduler",
    "karmada-webhook",
    "karmada-aggregated-apiserver",
)

# client-go's reflector backoff tops out at 30 s with as much jitter again; a resync round on a busy machine on top.
PROPAGATING_AGAIN_TIMEOUT_SECONDS = 180.0

T = TypeVar("T")


@dataclass(frozen=True)
class ControlPlaneBack:
    """Seconds from starting karmada-apiserver again until it answered ``/readyz`` and until Karmada propagated."""

    ready: float
    propagating: float


@dataclass(frozen=True)
class _Parts:
    """What a started environment is made of."""

    authority: Authority  # signs a Pull member's serving certificate
    clients: Clients
    apiservers: Apiservers
    links: Links
    karmada: KarmadaComponents
    push: PushMembers
    pull: PullMembers
    relay: Relay
    member_relays: MemberRelays


class KarmadaEnv:
    """Karmada's control plane, member kube-apiservers and failover-relay as local processes (see the package doc)."""

    def __init__(
        self,
        tree: KarmadaTree,
        envtest_binaries: Path,
        *,
        members: Sequence[str] = DEFAULT_MEMBERS,
        relay: bool = True,
        startup_timeout: float = STARTUP_TIMEOUT_SECONDS,
    ) -> None:
        self.tree = tree
        self.envtest_binaries = envtest_binaries
        self.members = tuple(members)
        # Members registered by karmada-agent (start_pull_member): never in `members`, so no policy of the other
        # tests, which all name `members`, selects them.
        self.pull_members: tuple[str, ...] = ()
        self.with_relay = relay
        self.startup_timeout = startup_timeout
        self.verbosity = os.environ.get("KARMADA_ENV_VERBOSITY", "1")
        self.startup_seconds: float | None = None
        self.member_token = base64.b32encode(os.urandom(20)).decode().lower()
        self._components = Components(startup_timeout)
        self._layout: Layout | None = None  # from the start on: the directory stop() removes, or keeps
        self._started: _Parts | None = None
        self._stopping = threading.Lock()
        self._kept: Path | None = None

    @property
    def _parts(self) -> _Parts:
        if self._started is None:
            raise ControlPlaneError("the Karmada environment is not started")
        return self._started

    @property
    def _files(self) -> Layout:
        if self._layout is None:
            raise ControlPlaneError("the Karmada environment is not started")
        return self._layout

    @property
    def _ports(self) -> dict[str, int]:
        """The ports by what they are for (the very table the processes read: a test may squat one)."""
        return self._components.ports

    # -- paths ----------------------------------------------------------------------------------------------------

    @property
    def root(self) -> Path:
        return self._files.root

    @property
    def pki(self) -> Path:
        return self._files.pki

    @property
    def logs_dir(self) -> Path:
        return self._files.logs_dir

    @property
    def ca_file(self) -> Path:
        return self._files.ca_file

    @property
    def checkpoint_root(self) -> Path:
        return self._files.checkpoint_root

    def kubeconfig(self, cluster: str = KARMADA) -> Path:
        if cluster != KARMADA and cluster not in self.members and cluster not in self.pull_members:
            raise KeyError(f"no cluster {cluster!r}: karmada or one of {self.members + self.pull_members}")
        return self._files.kubeconfig(cluster)

    @property
    def relay_kubeconfig(self) -> Path:
        return self._files.relay_kubeconfig

    @property
    def relay_url(self) -> str:
        return self._components.url(RELAY_PORT)

    @property
    def relay_cert_dir(self) -> Path:
        return self._files.relay_cert_dir

    @property
    def relay_config_file(self) -> Path:
        """The relay's ``--config`` file as it was last started: the page's configuration and the harness's own keys."""
        return self._files.relay_config_file

    @property
    def relay_log(self) -> Path:
        return self._files.relay_log

    @property
    def audit_log(self) -> Path:
        """karmada-apiserver's audit log: Work requests at Metadata level, with the admission webhooks' audit
        annotations (``AUDIT_POLICY``)."""
        return self._files.audit_log

    def audit_annotations(self, namespace: str, name: str = "") -> list[dict[str, str]]:
        """The audit annotations of every completed Work request in ``namespace`` (of the Work ``name``, if given),
        oldest first."""
        return audit_annotations(self.audit_log, namespace, name)

    @property
    def webhook_url(self) -> str:
        return self._parts.karmada.webhook_url

    def server_url(self, cluster: str = KARMADA) -> str:
        return self._parts.apiservers.url(cluster)

    def logs(self) -> dict[str, Path]:
        return self._components.logs()

    def ports(self) -> dict[str, int]:
        """Every loopback port the harness chose, by what it is for."""
        return dict(self._components.ports)

    def pids(self) -> dict[str, int]:
        return self._components.pids()

    def member_pid(self, member: str) -> int | None:
        return self._parts.apiservers.pid(member)

    def link_url(self, member: str) -> str:
        """The member's address as the control plane knows it (its Cluster's apiEndpoint): the TCP relay."""
        return self._parts.links.url(link(member))

    def link_pid(self, member: str) -> int | None:
        return self._parts.links.pid(link(member))

    def rss_bytes(self) -> int:
        """Resident memory of every running process of the harness (VmRSS from /proc)."""
        return self._components.rss_bytes()

    def log_tails(self, lines: int = LOG_TAIL_LINES) -> str:
        return self._components.log_tails(lines)

    # -- lifecycle ------------------------------------------------------------------------------------------------

    def __enter__(self) -> KarmadaEnv:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop(keep=exc is not None)

    def start(self) -> None:
        """Bring everything up (about 30 s warm on two cores); on failure stop it all and raise with the logs."""
        if self._layout is not None:
            raise ControlPlaneError("the Karmada environment is already started")
        started = time.monotonic()
        layout = self._layout = Layout(Path(tempfile.mkdtemp(prefix="failover-relay-karmada-")))
        cleanup.track(self)
        try:
            layout.make()
            self._components.logs_dir = layout.logs_dir
            self._components.pick_ports(
                KARMADA_APISERVER,
                *self.members,
                *(link(member) for member in self.members),
                "etcd",
                "etcd-peer",
                *KARMADA_PORTS,
                RELAY_PORT,
            )
            authority = write_pki(
                layout.pki,
                members=self.members,
                member_token=self.member_token,
                relay_user=RELAY_USER,
                relay_namespace=RELAY_NAMESPACE,
            )
            parts = self._started = self._assemble(layout, authority)
            parts.apiservers.start_etcd()
            parts.apiservers.start(self.members)
            parts.push.start_links(self.members)
            self._write_kubeconfigs(parts)
            parts.karmada.install(self.members, authority.pem, parts.apiservers.etcd_url)
            parts.push.register(self.members, authority.pem, self.member_token)
            if self.with_relay:
                parts.relay.install(self.members)
            self.startup_seconds = time.monotonic() - started
        except BaseException as error:
            tails = self.log_tails()
            self.stop(keep=True)
            if isinstance(error, Exception):
                raise ControlPlaneError(
                    f"Karmada environment failed to start: {error}\nlogs kept in {self._kept}\n{tails}"
                ) from error
            raise

    def stop(self, keep: bool = False) -> None:
        """Stop every process (relay and controllers first, etcd last); remove the temp dir unless ``keep``."""
        if not self._stopping.acquire(blocking=False):
            return
        try:
            self._components.stop_all([*STOP_ORDER, *self.members, KARMADA_APISERVER, "etcd"])
            if self._layout is not None:
                root = self._layout.root
                if keep:
                    self._kept = root
                    print(f"karmada_env: logs kept in {root / 'logs'}", file=sys.stderr)
                else:
                    shutil.rmtree(root, ignore_errors=True)
                self._layout = self._started = None
            cleanup.untrack(self)
        finally:
            self._stopping.release()

    def _assemble(self, layout: Layout, authority: Authority) -> _Parts:
        components = self._components
        apiservers = Apiservers(components, layout, self.envtest_binaries)
        clients = Clients(layout, components, self.kubeconfig, apiservers.url, self.member_token)
        links = Links(components)
        return _Parts(
            authority=authority,
            clients=clients,
            apiservers=apiservers,
            links=links,
            karmada=KarmadaComponents(self.tree, components, clients, layout, self.verbosity),
            push=PushMembers(components, clients, links),
            pull=PullMembers(self.tree, components, clients, layout, links, self.verbosity),
            relay=Relay(components, clients, layout),
            member_relays=MemberRelays(components, clients, layout),
        )

    def _write_kubeconfigs(self, parts: _Parts) -> None:
        clients, karmada, layout = parts.clients, self.server_url(KARMADA), self._files
        clients.write_kubeconfig(layout.kubeconfig(KARMADA), karmada, clients.admin_certificate())
        pki = layout.pki
        clients.write_kubeconfig(
            layout.relay_kubeconfig,
            karmada,
            {"client-certificate": str(pki / "relay.crt"), "client-key": str(pki / "relay.key")},
        )
        for member in self.members:
            clients.write_member_kubeconfig(member)

    # -- clients --------------------------------------------------------------------------------------------------

    def api(self, cluster: str = KARMADA) -> Api:
        """A REST client as admin of karmada-apiserver or a member."""
        return self._parts.clients.api(cluster)

    def kubectl(self, *args: str, **options: Any) -> subprocess.CompletedProcess[str]:
        """kubectl as admin of ``cluster=`` (``KARMADA``, the default, or a member), with ``input=``, ``check=`` and
        ``timeout=`` as ``Clients.kubectl`` (``clients.py``) takes them."""
        return self._parts.clients.kubectl(*args, **options)

    def wait_until(self, condition: Callable[[], T], timeout: float, what: str, interval: float = POLL_SECONDS) -> T:
        """``wait_until`` that also fails at once when one of the harness's processes has died."""
        return self._components.wait_until(condition, timeout, what, interval)

    # -- outages and partitions -----------------------------------------------------------------------------------

    def stop_member(self, member: str) -> None:
        """Stop that member's kube-apiserver (by PID, SIGTERM then SIGKILL); its data stays in etcd."""
        self._parts.apiservers.stop(member)

    def start_member(self, member: str) -> float:
        """Start a stopped member's kube-apiserver on its port again; return the seconds until ``/readyz``."""
        return self._parts.apiservers.start_again(member)

    def stop_control_plane(self) -> None:
        """Stop karmada-apiserver (by PID, SIGTERM then SIGKILL); its data stays in etcd."""
        self._parts.apiservers.stop(KARMADA)

    def start_control_plane(self) -> ControlPlaneBack:
        """Start karmada-apiserver on its port again and wait until Karmada's controllers propagate a new object again
        (``propagation_probe.py``: ``/readyz`` comes first, their watches up to a minute later)."""
        ready = self._parts.apiservers.start_again(KARMADA)
        propagating = wait_propagating(self.api, self.members[0], self.wait_until, PROPAGATING_AGAIN_TIMEOUT_SECONDS)
        return ControlPlaneBack(ready, ready + propagating)

    def partition_member(self, member: str) -> None:
        """Cut the control plane off from the member: SIGSTOP its TCP relay (by PID)."""
        self._parts.links.cut(link(member))

    def heal_member(self, member: str) -> None:
        """End the partition: SIGCONT the member's TCP relay."""
        self._parts.links.heal(link(member))

    # -- the relays and Karmada's controllers -----------------------------------------------------------------------

    def stop_relay(self) -> None:
        self._parts.relay.stop()

    def start_relay(self, config: Mapping[str, Any] | None = None, args: Sequence[str] = ()) -> float:
        """Start the relay with ``config`` merged over the page's configuration; the seconds until ``/readyz``."""
        return self._parts.relay.start(config, args)

    def restart_relay(self, config: Mapping[str, Any] | None = None, args: Sequence[str] = ()) -> float:
        """Stop the relay and start it again (same port, same certificates, so the webhook registration holds)."""
        return self._parts.relay.restart(config, args)

    @property
    def relay_replica(self) -> Replica:
        """The relay process as a replica (its name, address and log), beside ``relay_standby``'s."""
        return self._parts.relay.replica

    def kill_relay(self, replica: Replica | None = None) -> None:
        """SIGKILL the relay (or a standby ``replica``): no Lease released, nothing drained."""
        self._parts.relay.kill(*(() if replica is None else (replica.name,)))

    def start_relay_again(self) -> float:
        """Start the killed relay as it last ran, as the kubelet would; the seconds until ``/readyz``."""
        return self._parts.relay.start_again()

    def relay_standby(self) -> AbstractContextManager[Replica]:
        """A second relay replica, both behind the address the webhooks name (``Relay.with_standby``)."""
        return self._parts.relay.with_standby(self.members)

    def start_member_relay(self, member: str, checkpoint_root: str | None = None) -> float:
        """The member's own relay with the storage fence's watcher (`serve --member --fence-cluster NAME`), its
        `/mutate` registered in the member (`register_member_fence_webhook`); the seconds until both are done."""
        started = time.monotonic()
        self._parts.member_relays.start(member, checkpoint_root)
        return time.monotonic() - started

    def register_member_fence_webhook(self, member: str) -> None:
        """The storage fence's entry of `failover-relay manifests webhook --fence` for the member relay, applied in
        its member (docs/operations.md, "The storage fence")."""
        self._parts.member_relays.register_fence_webhook(member)

    def stop_member_relay(self, member: str, uninstall: bool = True) -> None:
        """Stop the member's relay; `uninstall` (the default) removes its heartbeat as an admin removing it would."""
        self._parts.member_relays.stop(member, uninstall)

    def restart_controller_manager(
        self, controllers: str = RELAY_CONTROLLERS, feature_gates: str = RELAY_GATES, args: Sequence[str] = ()
    ) -> float:
        """Run karmada-controller-manager with other ``--controllers``/``--feature-gates``; seconds until healthy."""
        return self._parts.karmada.restart_controller_manager(controllers, feature_gates, args)

    # -- a Pull member ---------------------------------------------------------------------------------------------

    def start_pull_member(self, member: str = PULL_MEMBER) -> float:
        """Add a member cluster in Pull mode, registered by a real karmada-agent with an API endpoint the control
        plane cannot reach (``pull_members.py``). Waits until the Cluster is Ready with FlinkDeployment in
        ``status.apiEnablements``; returns the seconds it took. The member is in ``pull_members``, never in
        ``members``."""
        started = time.monotonic()
        parts = self._parts
        parts.authority.issue_member(member)
        parts.apiservers.add(member)
        self.pull_members = (*self.pull_members, member)
        parts.pull.join(member, with_relay=self.with_relay)
        return time.monotonic() - started

    def start_agent(self, member: str = PULL_MEMBER) -> float:
        """Start the member's karmada-agent (again); the seconds until its /healthz answers."""
        return self._parts.pull.start_agent(member)

    def stop_agent(self, member: str = PULL_MEMBER) -> None:
        """Stop the member's karmada-agent (by PID, SIGTERM then SIGKILL)."""
        self._parts.pull.stop_agent(member)

    def agent_pid(self, member: str = PULL_MEMBER) -> int | None:
        return self._parts.pull.agent_pid(member)

    def partition_agent(self, member: str = PULL_MEMBER) -> None:
        """Cut the Pull member's agent off from karmada-apiserver (SIGSTOP its TCP relay): member, agent and copies
        run on."""
        self._parts.links.cut(agent_link(member))

    def heal_agent(self, member: str = PULL_MEMBER) -> None:
        self._parts.links.heal(agent_link(member))

    def stop_pull_member(self, member: str = PULL_MEMBER) -> None:
        """Stop the agent, its TCP relay and the member's apiserver and take it out of ``pull_members``. Its Cluster
        stays registered, NotReady: deleting it would wait forever for its execution namespace, which no namespace
        controller removes here; no policy of the tier names it."""
        self._parts.pull.leave(member)
        self.stop_member(member)
        self.pull_members = tuple(m for m in self.pull_members if m != member)
