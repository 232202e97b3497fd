"""A real Karmada v1.19 control plane with member clusters and failover-relay, on loopback, for tests and benchmarks.

Karmada's scheduler and controllers decide what happens to a workload after failover-relay writes a binding or
mutates a Work; only they can tell whether a promise holds. This module runs them for real: Karmada's own binaries
(``hack/build-karmada.sh``) and CRDs, the envtest tier's kube-apiserver and etcd (``tests/envtest.py``), no kubelet,
no kube-controller-manager, no Flink operator. The test plays the member clusters' workloads by writing their status
through the status subresource, which Karmada's status controllers then reflect, exactly as from a real operator.
It imports nothing from pytest; ``tests/karmada/conftest.py`` starts it once per session, and
``python -m tests.karmada_env`` starts one for a manual session (prints the kubeconfigs, runs until Ctrl-C).

What ``KarmadaEnv.start()`` brings up, all on 127.0.0.1 with free ports (``../shared/reference/real-karmada.md``
"What the harness starts"; Karmada's ``hack/deploy-karmada.sh`` and ``artifacts/deploy/*.yaml`` are the originals):

1. A PKI: one CA (serving and client certificates), a front-proxy CA for the aggregation layer, a client
   certificate in ``system:masters`` for Karmada's components and the tests, one for the relay
   (``system:serviceaccount:failover-relay:failover-relay``, so the RBAC of ``manifests/deploy/rbac.yaml`` is what
   it gets), and a static token for the member clusters.
2. One etcd; karmada-apiserver (``/registry``, with ``artifacts/deploy/karmada-apiserver.yaml``'s flags) and one
   kube-apiserver per member (``/<member>``) keep their data under separate prefixes of it. One etcd instead of
   four saves three processes and their idle work; the apiservers cannot tell the difference.
3. On karmada-apiserver: Karmada's CRDs (``charts/karmada/_crds``) with the conversion patches pointing at
   karmada-webhook ``/convert``; karmada-aggregated-apiserver behind the APIService ``v1alpha1.cluster.karmada.io``;
   karmada-webhook with ``artifacts/deploy/webhook-configuration.yaml``; karmada-controller-manager with
   ``--controllers=*,-applicationFailover,-gracefulEviction,-workloadRebalancer --feature-gates=Failover=true
   --enable-no-execute-taint-eviction=true --cluster-status-update-frequency=10s`` (``RELAY_CONTROLLERS``) and
   karmada-scheduler, both without leader election.
4. The Flink operator's FlinkDeployment CRD on karmada-apiserver and every member; the members registered as
   Push-mode Clusters (secretRef + impersonatorSecretRef, ``spec.id`` = the member's kube-system UID), waited for
   until Ready with FlinkDeployment in ``status.apiEnablements``.
5. failover-relay the way docs/operations.md installs it: ``manifests/deploy/{namespace,serviceaccount,rbac}.yaml``
   applied (and ``manifests/member/*.yaml`` to every member), ``failover-relay serve --config relay.yaml``
   (docs/quickstart.md's configuration, ``quickstart_relay_config()``: control-plane mode with Work labels and Work
   savepoints; checkpoints under ``checkpoint_root``),
   and ``failover-relay manifests webhook`` applied.

API (everything else is private):

- ``KarmadaEnv(members=3, relay=True)``; ``start()`` / ``stop(keep=False)`` or ``with KarmadaEnv() as env:``.
  ``startup_seconds`` says how long ``start()`` took. A failed start stops everything and raises
  ``ControlPlaneError`` with the tails of every log; the temp dir is kept then.
- ``members``: the member names; ``kubeconfig(cluster)``: kubeconfig path for ``"karmada"`` (karmada-apiserver,
  admin) or a member; ``relay_kubeconfig``: the relay's identity.
- ``api(cluster)``: a small REST client (``Api``: ``get``/``list``/``create``/``patch``/``delete``, paths from
  ``resource_path``) for polling without a kubectl process per poll; ``kubectl(*args, cluster=..., input=...)``.
- ``stop_member(name)`` / ``start_member(name)``: SIGTERM/SIGKILL that member's kube-apiserver by PID (its data
  stays in etcd) and start it again on the same port; ``member_pid(name)``.
- ``partition_member(name)`` / ``heal_member(name)``: SIGSTOP / SIGCONT the TCP relay (``tests/karmada/tcp_relay.py``,
  one per member, ``link_pid(name)``) that the member is registered behind: the control plane cannot reach the
  member while the member, its copies and the tests' direct view of it carry on.
- ``start_pull_member(name="member4")``: one more member, registered in Pull mode by a real ``karmada-agent`` with an
  API endpoint the control plane cannot reach (started only by the tests that need it, in ``pull_members``, never in
  ``members``); ``stop_agent`` / ``start_agent`` / ``agent_pid``; ``partition_agent`` / ``heal_agent`` (SIGSTOP /
  SIGCONT the agent's own TCP relay to karmada-apiserver); ``stop_pull_member`` (the Cluster stays, NotReady).
- ``stop_control_plane()`` / ``start_control_plane()``: stop karmada-apiserver by PID and start it again on its port
  (its data stays in etcd); every other component keeps running and reconnects.
- ``restart_relay(config=None, args=())``: stop the relay and start it again on the same port and certificates,
  with ``config`` merged over the page's configuration (per section) and extra ``serve`` flags; ``stop_relay()``,
  ``start_relay(...)``; ``relay_log``, ``relay_config_file``; returns the seconds until ``/readyz``.
- ``restart_controller_manager(controllers=..., feature_gates=..., args=())``: e.g.
  ``restart_controller_manager(KARMADA_CONTROLLERS, KARMADA_STATEFUL_GATES)`` to compare with Karmada's own
  failover controllers (then run the relay with ``config={"controllers": {"mode": "off"}}``).
- ``audit_log``: karmada-apiserver's audit log of Work writes (``AUDIT_POLICY``); ``audit_annotations(namespace,
  name="")``: the admission webhooks' audit annotations of those requests.
- ``checkpoint_root``: the relay's ``savepoint.checkpointRoot`` (a directory; the tier's FlinkDeployments name
  ``<root>/<namespace>`` as their checkpoint dir, Flink's layout ``<dir>/<job id>/chk-N/_metadata`` below it).
- ``rss_bytes()``: resident memory of every process the harness runs; ``pids()``; ``ports()``; ``logs()``: name -> log
  file; ``log_tails(lines)``: the end of each log, for failure reports.
- ``wait_until(condition, timeout, what)``: poll until ``condition()`` returns something truthy, return it.

Ports: ``free_port()`` picks each one; a component that exits with "address already in use" (another process took
the port first) is started again on new ports, up to ``PORT_ATTEMPTS`` times, before anything names its address.

Cleanup: every process runs in its own process group and is stopped by PID (SIGTERM, SIGKILL after a timeout);
``atexit``, SIGTERM and SIGHUP stop every running environment; on Linux the children also get SIGKILL if the Python
process dies without cleaning up (``PR_SET_PDEATHSIG``). Karmada's log verbosity is ``--v=$KARMADA_ENV_VERBOSITY``
(default 1).
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import copy
import datetime
import functools
import ipaddress
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any, TypeVar

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from relay.commands.manifests.webhooks import FENCE_ENTRY_PREFIX
from tests.apiserver import (
    KUBECTL_TIMEOUT_SECONDS,
    apply_until_established,
    etcd_command,
    kube_apiserver_command,
    run_kubectl,
    token_cluster_flags,
    write_kubeconfig,
    write_token_file,
)
from tests.crd_sources import ConversionWebhook, KarmadaTree, flink_deployment_crd, karmada_crds
from tests.kube_api import Api, ApiError, resource_path
from tests.processes import (
    LOG_TAIL_LINES,
    LOOPBACK,
    ChildProcess,
    ControlPlaneError,
    await_ready_on_free_ports,
    free_port,
    log_tail,
    loopback_env,
    probe,
)
from tests.relay_cli import relay_command, webhook_manifests
from tests.tls_clients import unverified_tls
from tests.waiting import POLL_SECONDS, wait_until

__all__ = ["Api", "ApiError", "ControlPlaneError", "resource_path", "wait_until"]

REPO_ROOT = Path(__file__).resolve().parents[2]
KARMADA = "karmada"
DEFAULT_MEMBERS = ("member1", "member2", "member3")

# karmada-controller-manager beside the relay: the three controllers the relay replaces are off (docs/operations.md
# "Turning off the Karmada controllers failover-relay replaces"). Failover=true turns on the taint manager (cluster
# failover); Karmada itself only adds NoSchedule taints.
RELAY_CONTROLLERS = "*,-applicationFailover,-gracefulEviction,-workloadRebalancer"
KARMADA_CONTROLLERS = "*"
RELAY_GATES = "Failover=true"
# Karmada alone, as a user would run it for stateful failover (the gate writes preservedLabelState).
KARMADA_STATEFUL_GATES = "Failover=true,StatefulFailoverInjection=true"
# The Pull member of start_pull_member, and the API endpoint it registers: an address of TEST-NET-1 (RFC 5737), which
# no host answers, as a member behind NAT whose apiserver the control plane cannot reach.
PULL_MEMBER = "member4"
PULL_API_ENDPOINT = "https://192.0.2.1:6443"
MEMBER_FENCE_WEBHOOK = "failover-relay-member-fence"  # register_member_fence_webhook's configuration in a member
CLUSTER_STATUS_UPDATE_FREQUENCY = "10s"
# karmada-apiserver audits writes of Works (the Work mutator's audit annotations), nothing else.
AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [
        {
            "level": "Metadata",
            "verbs": ["create", "update", "patch"],
            "resources": [{"group": "work.karmada.io", "resources": ["works"]}],
        },
        {"level": "None"},
    ],
}

RELAY_NAMESPACE = "failover-relay"
RELAY_USER = f"system:serviceaccount:{RELAY_NAMESPACE}:failover-relay"
# The relay's configuration is docs/quickstart.md's (step 2, the block marked `quickstart-test: relay-config`), so the
# tier tests what the page installs; restart_relay(config=...) merges per section over it. Only these are the tier's
# own, each for a reason the page's install does not have (tests/karmada/test_quickstart.py holds the rest to the page):
TIER_RELAY_CONFIG: dict[str, dict[str, Any]] = {
    "logging": {"format": "json", "level": "info"},  # the harness reads the relay's log lines
    # A process has no Pod namespace to put its Lease in (a pod's is failover-relay, the page's namespace).
    "controllers": {"leaseNamespace": RELAY_NAMESPACE},
}
# And per start (_base_relay_config): where it listens and its certificates, its kubeconfig, the tier's checkpoint root.
TIER_RELAY_KEYS = {
    ("logging", "format"),
    ("logging", "level"),
    ("controllers", "leaseNamespace"),
    ("server", "host"),
    ("server", "port"),
    ("server", "certDir"),
    ("controllers", "kubeconfig"),
    ("savepoint", "checkpointRoot"),
}
QUICKSTART_PAGE = REPO_ROOT / "docs" / "quickstart.md"
_RELAY_CONFIG_BLOCK = re.compile(r"^<!-- quickstart-test: relay-config\b.*?-->\n```yaml\n(.*?)^```$", re.M | re.S)


def quickstart_relay_config() -> dict[str, Any]:
    """The relay's configuration file as docs/quickstart.md gives it."""
    [block] = _RELAY_CONFIG_BLOCK.findall(QUICKSTART_PAGE.read_text())
    config = yaml.safe_load(block)
    assert isinstance(config, dict), "docs/quickstart.md: the relay-config block is not a mapping"
    return config


# Cold start on two busy cores: an apiserver takes up to ~20 s, Clusters turn Ready after one status round.
STARTUP_TIMEOUT_SECONDS = 180.0
# Nothing reads Karmada's metrics here; each listener would be one more port to lose to free_port()'s race, and a
# controller-runtime manager that loses its metrics port still answers /healthz for the 30 s it takes to exit.
NO_METRICS = "--metrics-bind-address=0"

T = TypeVar("T")


# -- PKI --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Pair:
    cert: Path
    key: Path


class _Authority:
    """A CA that writes PEM files: what ``util::create_certkey`` of Karmada's scripts does with openssl."""

    def __init__(self, directory: Path, name: str) -> None:
        self.directory = directory
        self._key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = datetime.datetime.now(datetime.UTC)
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    key_cert_sign=True,
                    crl_sign=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self._key, hashes.SHA256())
        )
        self.pem = self._cert.public_bytes(serialization.Encoding.PEM)
        self.cert_file = directory / f"{name}.crt"
        self.cert_file.write_bytes(self.pem)

    def issue(
        self,
        name: str,
        *,
        common_name: str,
        organizations: Sequence[str] = (),
        dns: Sequence[str] = (),
        ips: Sequence[str] = (),
        server: bool = False,
        client: bool = False,
    ) -> _Pair:
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name(
            [
                x509.NameAttribute(NameOID.COMMON_NAME, common_name),
                *(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations),
            ]
        )
        now = datetime.datetime.now(datetime.UTC)
        usages = ([ExtendedKeyUsageOID.SERVER_AUTH] if server else []) + (
            [ExtendedKeyUsageOID.CLIENT_AUTH] if client else []
        )
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        )
        names = [x509.DNSName(n) for n in dns] + [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        pair = _Pair(self.directory / f"{name}.crt", self.directory / f"{name}.key")
        pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        pair.key.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        pair.key.chmod(0o600)
        return pair


def _link(member: str) -> str:
    """The name (process and port) of the TCP relay in front of `member`."""
    return f"tcp-relay-{member}"


def _agent(member: str) -> str:
    """The name (process and health port) of the karmada-agent of a Pull member."""
    return f"karmada-agent-{member}"


def _cluster_registered(karmada: Api, member: str) -> bool:
    """The Cluster is Ready and reports FlinkDeployment among its API enablements."""
    cluster = karmada.get(f"/apis/cluster.karmada.io/v1alpha1/clusters/{member}") or {}
    status = cluster.get("status") or {}
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
    flink = any(
        e.get("groupVersion") == "flink.apache.org/v1beta1"
        and any(r.get("kind") == "FlinkDeployment" for r in e.get("resources") or [])
        for e in status.get("apiEnablements") or []
    )
    return ready and flink


# Every started environment, for atexit and the signal handlers.
_LIVE: set[KarmadaEnv] = set()
_LIVE_LOCK = threading.Lock()
_HANDLERS_INSTALLED = False


def _stop_all() -> None:
    with _LIVE_LOCK:
        live = list(_LIVE)
    for env in live:
        env.stop(keep=True)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    _stop_all()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _install_cleanup() -> None:
    global _HANDLERS_INSTALLED
    if _HANDLERS_INSTALLED:
        return
    _HANDLERS_INSTALLED = True
    atexit.register(_stop_all)
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(signum) in (signal.SIG_DFL, None):
                signal.signal(signum, _on_signal)


def _merge(base: Mapping[str, Any], overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    merged = copy.deepcopy(dict(base))
    for section, values in (overrides or {}).items():
        if isinstance(values, Mapping) and isinstance(merged.get(section), Mapping):
            merged[section] = {**merged[section], **values}
        else:
            merged[section] = copy.deepcopy(values)
    return merged


@dataclass
class _Apiserver:
    name: str
    ports: dict[str, int]
    process: ChildProcess

    @property
    def url(self) -> str:
        return f"https://{LOOPBACK}:{self.ports[self.name]}"


class KarmadaEnv:
    """Karmada's control plane, member kube-apiservers and failover-relay as local processes (see module doc)."""

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
        self._root: Path | None = None
        self._processes: dict[str, ChildProcess] = {}
        self._apiservers: dict[str, _Apiserver] = {}
        self._ports: dict[str, int] = {}
        self._relay_config: dict[str, Any] = {}
        self._relay_args: tuple[str, ...] = ()
        self._stopping = threading.Lock()
        # Processes a test stopped (a member apiserver, the relay): their exit is no failure of the harness.
        self._stopped_on_purpose: set[str] = set()
        self._kept: Path | None = None
        # Components whose address is written into karmada-apiserver (they must keep their port).
        self._registered: set[str] = set()
        self._member_fence_webhooks: set[str] = set()  # members where register_member_fence_webhook applied it

    # -- paths ----------------------------------------------------------------------------------------------------

    @property
    def root(self) -> Path:
        if self._root is None:
            raise ControlPlaneError("the Karmada environment is not started")
        return self._root

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

    def kubeconfig(self, cluster: str = KARMADA) -> Path:
        if cluster != KARMADA and cluster not in self.members and cluster not in self.pull_members:
            raise KeyError(f"no cluster {cluster!r}: karmada or one of {self.members + self.pull_members}")
        return self.root / f"{cluster}.kubeconfig"

    @property
    def relay_kubeconfig(self) -> Path:
        return self.root / "relay.kubeconfig"

    @property
    def relay_url(self) -> str:
        return f"https://{LOOPBACK}:{self._ports['relay']}"

    @property
    def relay_cert_dir(self) -> Path:
        return self.root / "relay-certs"

    @property
    def relay_config_file(self) -> Path:
        """The relay's ``--config`` file as it was last started: the page's configuration and the harness's own keys."""
        return self.root / "relay.yaml"

    @property
    def relay_log(self) -> Path:
        return self.logs_dir / "failover-relay.log"

    @property
    def audit_log(self) -> Path:
        """karmada-apiserver's audit log: Work requests at Metadata level, with the admission webhooks' audit
        annotations (``AUDIT_POLICY``)."""
        return self.logs_dir / "karmada-apiserver-audit.log"

    def audit_annotations(self, namespace: str, name: str = "") -> list[dict[str, str]]:
        """The audit annotations of every completed Work request in ``namespace`` (of the Work ``name``, if given),
        oldest first."""
        found = []
        for line in self.audit_log.read_text().splitlines() if self.audit_log.exists() else ():
            event = json.loads(line)
            ref = event.get("objectRef") or {}
            if (
                event.get("stage") == "ResponseComplete"
                and ref.get("namespace") == namespace
                and (not name or ref.get("name") == name)
                and event.get("annotations")
            ):
                found.append(event["annotations"])
        return found

    @property
    def webhook_url(self) -> str:
        return f"https://{LOOPBACK}:{self._ports['karmada-webhook']}"

    def server_url(self, cluster: str = KARMADA) -> str:
        return self._apiservers[cluster].url

    def logs(self) -> dict[str, Path]:
        return {name: process.log for name, process in self._processes.items()}

    def ports(self) -> dict[str, int]:
        """Every loopback port the harness chose, by what it is for."""
        return dict(self._ports)

    def pids(self) -> dict[str, int]:
        return {name: process.pid for name, process in self._processes.items() if process.pid is not None}

    def member_pid(self, member: str) -> int | None:
        return self._apiservers[member].process.pid

    def link_url(self, member: str) -> str:
        """The member's address as the control plane knows it (its Cluster's apiEndpoint): the TCP relay."""
        return f"https://{LOOPBACK}:{self._ports[_link(member)]}"

    def link_pid(self, member: str) -> int | None:
        return self._processes[_link(member)].pid

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
        if self._root is not None:
            raise ControlPlaneError("the Karmada environment is already started")
        started = time.monotonic()
        self._root = Path(tempfile.mkdtemp(prefix="failover-relay-karmada-"))
        _install_cleanup()
        with _LIVE_LOCK:
            _LIVE.add(self)
        try:
            self.logs_dir.mkdir()
            self.checkpoint_root.mkdir()
            for name in (
                "karmada-apiserver",
                *self.members,
                *(_link(member) for member in self.members),
                "etcd",
                "etcd-peer",
                "karmada-aggregated-apiserver",
                "karmada-webhook",
                "cm-health",
                "scheduler-health",
                "relay",
            ):
                self._ports[name] = free_port()
            self._write_pki()
            self._start_etcd()
            self._start_apiservers()
            self._start_links()
            self._write_kubeconfigs()
            self._install_karmada()
            self._register_members()
            if self.with_relay:
                self._install_relay()
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
            order = [
                "failover-relay",
                "karmada-controller-manager",
                "karmada-scheduler",
                "karmada-webhook",
                "karmada-aggregated-apiserver",
                *self.members,
                "karmada-apiserver",
                "etcd",
            ]
            for name in order + [n for n in self._processes if n not in order]:
                process = self._processes.get(name)
                if process is not None:
                    process.stop()
            self._processes.clear()
            if self._root is not None:
                if keep:
                    self._kept = self._root
                    print(f"karmada_env: logs kept in {self._root / 'logs'}", file=sys.stderr)
                else:
                    shutil.rmtree(self._root, ignore_errors=True)
                self._root = None
            with _LIVE_LOCK:
                _LIVE.discard(self)
        finally:
            self._stopping.release()

    # -- clients --------------------------------------------------------------------------------------------------

    def api(self, cluster: str = KARMADA) -> Api:
        """A REST client as admin of karmada-apiserver or a member."""
        if cluster == KARMADA:
            return Api(
                self.server_url(KARMADA), self.ca_file, client_cert=(self.pki / "admin.crt", self.pki / "admin.key")
            )
        return Api(self.server_url(cluster), self.ca_file, token=self.member_token)

    def kubectl(
        self,
        *args: str,
        cluster: str = KARMADA,
        input: str | None = None,
        check: bool = True,
        timeout: float = KUBECTL_TIMEOUT_SECONDS,
    ) -> subprocess.CompletedProcess[str]:
        return run_kubectl(
            self.kubeconfig(cluster), self.root / "kubectl-cache", *args, input=input, check=check, timeout=timeout
        )

    def wait_until(self, condition: Callable[[], T], timeout: float, what: str, interval: float = POLL_SECONDS) -> T:
        """``wait_until`` that also fails at once when one of the harness's processes has died."""

        def checked() -> T:
            for process in self._processes.values():
                message = process.exited()
                if message and process.name not in self._stopped_on_purpose:
                    raise ControlPlaneError(f"while waiting for {what}: {message}")
            return condition()

        return wait_until(checked, timeout, what, interval)

    # -- what tests do to the environment ---------------------------------------------------------------------

    def stop_member(self, member: str) -> None:
        """Stop that member's kube-apiserver (by PID, SIGTERM then SIGKILL); its data stays in etcd."""
        process = self._apiservers[member].process
        self._stopped_on_purpose = self._stopped_on_purpose | {process.name}
        process.stop()

    def start_member(self, member: str) -> float:
        """Start a stopped member's kube-apiserver on its port again; return the seconds until ``/readyz``."""
        started = time.monotonic()
        apiserver = self._apiservers[member]
        apiserver.process.start()
        self._stopped_on_purpose = self._stopped_on_purpose - {apiserver.process.name}
        self._wait_ready(apiserver.process, f"{apiserver.url}/readyz", unverified_tls())
        return time.monotonic() - started

    def partition_member(self, member: str) -> None:
        """Cut the control plane off from the member: SIGSTOP its TCP relay (by PID)."""
        self._processes[_link(member)].signal_group(signal.SIGSTOP)

    def heal_member(self, member: str) -> None:
        """End the partition: SIGCONT the member's TCP relay."""
        self._processes[_link(member)].signal_group(signal.SIGCONT)

    def stop_control_plane(self) -> None:
        """Stop karmada-apiserver (by PID, SIGTERM then SIGKILL); its data stays in etcd."""
        process = self._apiservers[KARMADA].process
        self._stopped_on_purpose = self._stopped_on_purpose | {process.name}
        process.stop()

    def start_control_plane(self) -> float:
        """Start karmada-apiserver on its port again; return the seconds until ``/readyz``."""
        started = time.monotonic()
        apiserver = self._apiservers[KARMADA]
        apiserver.process.start()
        self._stopped_on_purpose = self._stopped_on_purpose - {apiserver.process.name}
        self._wait_ready(apiserver.process, f"{apiserver.url}/readyz", unverified_tls())
        return time.monotonic() - started

    def stop_relay(self) -> None:
        process = self._processes.get("failover-relay")
        if process is not None:
            self._stopped_on_purpose = self._stopped_on_purpose | {process.name}
            process.stop(timeout=30)

    def start_relay(self, config: Mapping[str, Any] | None = None, args: Sequence[str] = ()) -> float:
        """Start the relay with ``config`` merged over the page's configuration; the seconds until ``/readyz``."""
        started = time.monotonic()
        overrides, self._relay_args = config, tuple(args)
        config_file = self.relay_config_file

        def command() -> list[str]:
            self._relay_config = _merge(self._base_relay_config(), overrides)
            config_file.write_text(yaml.safe_dump(self._relay_config, sort_keys=False))
            return [*relay_command(), "serve", "--config", str(config_file), *self._relay_args]

        env = loopback_env()
        env.pop("KUBERNETES_SERVICE_HOST", None)  # never mistake the test machine for a pod
        env.pop("KUBECONFIG", None)
        self._stopped_on_purpose = self._stopped_on_purpose - {"failover-relay"}
        # A restart keeps the port the webhook configurations name; only the first start may move to another.
        self._start(
            "failover-relay",
            command,
            () if "failover-relay" in self._registered else ("relay",),
            lambda: f"{self.relay_url}/readyz",
            unverified_tls(),
            env=env,
            cwd=REPO_ROOT,
        )
        return time.monotonic() - started

    def start_member_relay(self, member: str) -> float:
        """The member's own relay with the storage fence's watcher, as docs/operations.md "The storage fence" runs it
        (`serve --member --fence-cluster NAME`): the control plane relay's checkpoint root, the member's apiserver
        reached directly (inside the member, not through the control plane's TCP relay, so a partition does not cut
        it), by PID like the rest, and its `/mutate` registered in the member as that section says
        (`register_member_fence_webhook`); the seconds until both are done."""
        started = time.monotonic()
        name = f"member-relay-{member}"
        self._ports.setdefault(name, free_port())

        def command() -> list[str]:
            return [
                *relay_command(),
                "serve",
                "--member",
                "--fence-cluster",
                member,
                "--fence-kubeconfig",
                str(self.kubeconfig(member)),
                "--checkpoint-root",
                str(self.checkpoint_root),
                "--host",
                LOOPBACK,
                "--port",
                str(self._ports[name]),
                "--cert-dir",
                str(self.root / f"{name}-certs"),
                "--log-format",
                "json",
            ]

        env = loopback_env()
        env.pop("KUBERNETES_SERVICE_HOST", None)
        env.pop("KUBECONFIG", None)
        self._stopped_on_purpose = self._stopped_on_purpose - {name}
        self._start(
            name,
            command,
            (name,),
            lambda: f"https://{LOOPBACK}:{self._ports[name]}/readyz",
            unverified_tls(),
            env=env,
            cwd=REPO_ROOT,
        )
        self.register_member_fence_webhook(member)
        return time.monotonic() - started

    def register_member_fence_webhook(self, member: str) -> None:
        """The storage fence's entry of `failover-relay manifests webhook --fence` for the member relay, applied in
        its member (docs/operations.md, "The storage fence"): every Flink object carrying Karmada's
        `work.karmada.io/permanent-id` goes to its `/mutate`, which keeps a fenced copy suspended when Karmada
        re-applies the Work's manifest (a Pull member's agent does so as soon as the copy changes). Only that entry:
        the savepoint entries of the rendering are the control plane relay's business in this tier."""
        name = f"member-relay-{member}"
        rendered = webhook_manifests(
            "--url",
            f"https://{LOOPBACK}:{self._ports[name]}",
            "--cert-dir",
            str(self.root / f"{name}-certs"),
            "--fence",
        )
        (mutating,) = [
            doc for doc in yaml.safe_load_all(rendered) if doc and doc["kind"] == "MutatingWebhookConfiguration"
        ]
        mutating["metadata"]["name"] = MEMBER_FENCE_WEBHOOK
        mutating["webhooks"] = [w for w in mutating["webhooks"] if w["name"].startswith(FENCE_ENTRY_PREFIX)]
        assert mutating["webhooks"], "manifests webhook --fence rendered no storage fence entry"
        self.kubectl("apply", "-f", "-", input=json.dumps(mutating), cluster=member)
        self._member_fence_webhooks.add(member)

    def stop_member_relay(self, member: str) -> None:
        if member in self._member_fence_webhooks:
            self.kubectl("delete", "mutatingwebhookconfiguration", MEMBER_FENCE_WEBHOOK, cluster=member)
            self._member_fence_webhooks.discard(member)
        process = self._processes.get(f"member-relay-{member}")
        if process is not None:
            self._stopped_on_purpose = self._stopped_on_purpose | {process.name}
            process.stop(timeout=30)

    def restart_relay(self, config: Mapping[str, Any] | None = None, args: Sequence[str] = ()) -> float:
        """Stop the relay and start it again (same port, same certificates, so the webhook registration holds)."""
        started = time.monotonic()
        self.stop_relay()
        self.start_relay(config, args)
        return time.monotonic() - started

    def restart_controller_manager(
        self, controllers: str = RELAY_CONTROLLERS, feature_gates: str = RELAY_GATES, args: Sequence[str] = ()
    ) -> float:
        """Run karmada-controller-manager with other ``--controllers``/``--feature-gates``; seconds until healthy."""
        started = time.monotonic()
        process = self._processes.get("karmada-controller-manager")
        if process is not None:
            process.stop()
        self._start_controller_manager(controllers, feature_gates, args)
        return time.monotonic() - started

    # -- a Pull member ---------------------------------------------------------------------------------------------

    def start_pull_member(self, member: str = PULL_MEMBER) -> float:
        """Add a member cluster in Pull mode, as Karmada's ``hack/local-up-karmada.sh`` runs member3: its own
        kube-apiserver, and ``karmada-agent`` (``artifacts/agent/karmada-agent.yaml``'s flags) registering it
        (``cmd/agent/app/agent.go``: the agent creates the Cluster, ``spec.syncMode: Pull``) with
        ``--cluster-api-endpoint`` an address the control plane cannot reach (``PULL_API_ENDPOINT``), as in
        production, so Karmada's cluster proxy fails there. No credentials are reported (``--report-secrets=None``:
        the agent would wait for ServiceAccount token Secrets that no kube-controller-manager creates here). Waits
        until the Cluster is Ready with FlinkDeployment in ``status.apiEnablements``; returns the seconds it took.
        The member is in ``pull_members``, never in ``members``."""
        started = time.monotonic()
        self._authority.issue(member, common_name=member, server=True, dns=["localhost"], ips=[LOOPBACK])
        self._ports[member] = free_port()
        self._ports[_agent(member)] = free_port()
        self._ports[_link(_agent(member))] = free_port()
        process = self._spawn(member, self._apiserver_args(member, f"/{member}"))
        apiserver = self._apiservers[member] = _Apiserver(member, self._ports, process)
        self._await_ready(
            process,
            lambda: self._apiserver_args(member, f"/{member}"),
            (member,),
            lambda: f"{apiserver.url}/readyz",
            unverified_tls(),
        )
        self.pull_members = (*self.pull_members, member)
        self._write_kubeconfig(self.kubeconfig(member), apiserver.url, {"token": self.member_token})
        self._apply_crds(member, "-f", str(flink_deployment_crd()))
        for manifest in sorted((REPO_ROOT / "manifests" / "member").glob("*.yaml")) if self.with_relay else ():
            self.kubectl("apply", "-f", str(manifest), cluster=member)
        # The agent reaches karmada-apiserver through a TCP relay of its own, which partition_agent cuts.
        link = _link(_agent(member))
        self._start(
            link,
            lambda: [
                sys.executable,
                "-m",
                "tests.karmada.tcp_relay",
                str(self._ports[link]),
                str(self._ports["karmada-apiserver"]),
            ],
            (link,),
            lambda: f"https://{LOOPBACK}:{self._ports[link]}/readyz",
            unverified_tls(),
            cwd=REPO_ROOT,
        )
        self._write_kubeconfig(
            self.root / f"{_agent(member)}.kubeconfig",
            f"https://{LOOPBACK}:{self._ports[link]}",
            {"client-certificate": str(self.pki / "admin.crt"), "client-key": str(self.pki / "admin.key")},
        )
        self.start_agent(member)
        self.wait_until(
            lambda: _cluster_registered(self.api(KARMADA), member),
            self.startup_timeout,
            f"Pull Cluster {member} Ready with FlinkDeployment in status.apiEnablements",
        )
        return time.monotonic() - started

    def start_agent(self, member: str = PULL_MEMBER) -> float:
        """Start the member's karmada-agent (again); the seconds until its /healthz answers."""
        started = time.monotonic()
        name = _agent(member)
        self._stopped_on_purpose = self._stopped_on_purpose - {name}
        self._start(
            name,
            lambda: [
                str(self.tree.bin / "karmada-agent"),
                f"--karmada-kubeconfig={self.root / f'{name}.kubeconfig'}",
                f"--kubeconfig={self.kubeconfig(member)}",
                f"--cluster-name={member}",
                f"--cluster-api-endpoint={PULL_API_ENDPOINT}",
                f"--cluster-status-update-frequency={CLUSTER_STATUS_UPDATE_FREQUENCY}",
                "--report-secrets=None",
                "--leader-elect=false",
                NO_METRICS,
                f"--health-probe-bind-address={LOOPBACK}:{self._ports[name]}",
                f"--v={self.verbosity}",
            ],
            (name,),
            lambda: f"http://{LOOPBACK}:{self._ports[name]}/healthz",
        )
        return time.monotonic() - started

    def stop_agent(self, member: str = PULL_MEMBER) -> None:
        """Stop the member's karmada-agent (by PID, SIGTERM then SIGKILL)."""
        name = _agent(member)
        self._stopped_on_purpose = self._stopped_on_purpose | {name}
        self._processes[name].stop()

    def agent_pid(self, member: str = PULL_MEMBER) -> int | None:
        return self._processes[_agent(member)].pid

    def partition_agent(self, member: str = PULL_MEMBER) -> None:
        """Cut the Pull member's agent off from karmada-apiserver (SIGSTOP its TCP relay): member, agent and copies
        run on."""
        self._processes[_link(_agent(member))].signal_group(signal.SIGSTOP)

    def heal_agent(self, member: str = PULL_MEMBER) -> None:
        self._processes[_link(_agent(member))].signal_group(signal.SIGCONT)

    def stop_pull_member(self, member: str = PULL_MEMBER) -> None:
        """Stop the agent, its TCP relay and the member's apiserver and take it out of ``pull_members``. Its Cluster
        stays registered, NotReady: deleting it would wait forever for its execution namespace, which no namespace
        controller removes here; no policy of the tier names it."""
        self.stop_agent(member)
        link = self._processes[_link(_agent(member))]
        self._stopped_on_purpose = self._stopped_on_purpose | {link.name}
        link.stop()
        self.stop_member(member)
        self.pull_members = tuple(m for m in self.pull_members if m != member)

    def rss_bytes(self) -> int:
        """Resident memory of every running process of the harness (VmRSS from /proc)."""
        total = 0
        for pid in self.pids().values():
            with contextlib.suppress(OSError):
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
        return total

    def log_tails(self, lines: int = LOG_TAIL_LINES) -> str:
        return "\n".join(
            f"--- {name} ({process.log}) ---\n{log_tail(process.log, lines)}"
            for name, process in self._processes.items()
        )

    # -- start-up steps -------------------------------------------------------------------------------------------

    def _write_pki(self) -> None:
        self.pki.mkdir(mode=0o700)
        ca = _Authority(self.pki, "ca")
        self._ca_pem = ca.pem
        self._authority = ca  # a Pull member added later gets its serving certificate from it
        front_proxy = _Authority(self.pki, "front-proxy-ca")
        front_proxy.issue("front-proxy-client", common_name="front-proxy-client", client=True)
        local = dict(dns=["localhost"], ips=[LOOPBACK])
        ca.issue(
            "karmada-apiserver",
            common_name="karmada-apiserver",
            server=True,
            dns=["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"],
            ips=[LOOPBACK],
        )
        # The aggregator dials the Service's externalName (localhost) and verifies the name <service>.<ns>.svc.
        ca.issue(
            "karmada-aggregated-apiserver",
            common_name="karmada-aggregated-apiserver",
            server=True,
            dns=["karmada-aggregated-apiserver.karmada-system.svc", "localhost"],
            ips=[LOOPBACK],
        )
        webhook_dir = self.pki / "karmada-webhook"
        webhook_dir.mkdir()
        webhook = ca.issue("karmada-webhook", common_name="karmada-webhook", server=True, **local)
        shutil.copy(webhook.cert, webhook_dir / "tls.crt")
        shutil.copy(webhook.key, webhook_dir / "tls.key")
        for member in self.members:
            ca.issue(member, common_name=member, server=True, **local)
        ca.issue("admin", common_name="karmada-admin", organizations=["system:masters"], client=True)
        ca.issue(
            "relay",
            common_name=RELAY_USER,
            organizations=["system:serviceaccounts", f"system:serviceaccounts:{RELAY_NAMESPACE}"],
            client=True,
        )
        sa_key = ec.generate_private_key(ec.SECP256R1())
        (self.pki / "sa.key").write_bytes(
            sa_key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        (self.pki / "sa.pub").write_bytes(
            sa_key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
        write_token_file(self.pki / "member-tokens.csv", self.member_token, "karmada-member-admin", "system:masters")

    def _start_links(self) -> None:
        """One TCP relay per member (tests/karmada/tcp_relay.py), ready when the member's /readyz answers through it."""
        for member in self.members:
            target = self._ports[member]
            self._start(
                _link(member),
                lambda m=member, t=target: [
                    sys.executable,
                    "-m",
                    "tests.karmada.tcp_relay",
                    str(self._ports[_link(m)]),
                    str(t),
                ],
                (_link(member),),
                lambda m=member: f"{self.link_url(m)}/readyz",
                unverified_tls(),
                cwd=REPO_ROOT,
            )

    def _spawn(self, name: str, args: list[str], **kwargs: Any) -> ChildProcess:
        process = ChildProcess(name, args, self.logs_dir / f"{name}.log", **kwargs)
        self._processes[name] = process
        process.start()
        return process

    def _wait_ready(
        self, process: ChildProcess, url: str, context: ssl.SSLContext | None = None, timeout: float | None = None
    ) -> None:
        process.wait_ready(lambda: probe(url, context), timeout=timeout or self.startup_timeout, wait=self.wait_until)

    def _start(
        self,
        name: str,
        args: Callable[[], list[str]],
        ports: Sequence[str],
        ready_url: Callable[[], str],
        context: ssl.SSLContext | None = None,
        **kwargs: Any,
    ) -> ChildProcess:
        """Spawn a component and wait until ``ready_url()`` answers 200; when it exits because one of its
        ``ports`` was taken in the meantime, pick new ones and start it again (``args``, ``ready_url`` read them)."""
        process = self._spawn(name, args(), **kwargs)
        self._await_ready(process, args, ports, ready_url, context)
        return process

    def _await_ready(
        self,
        process: ChildProcess,
        args: Callable[[], list[str]],
        ports: Sequence[str],
        ready_url: Callable[[], str],
        context: ssl.SSLContext | None = None,
    ) -> None:
        def new_ports() -> None:
            for key in ports:
                self._ports[key] = free_port()

        await_ready_on_free_ports(process, args, new_ports, lambda: self._wait_ready(process, ready_url(), context))

    @property
    def _etcd_url(self) -> str:
        return f"http://{LOOPBACK}:{self._ports['etcd']}"

    def _start_etcd(self) -> None:
        data = self.root / "etcd-data"

        def args() -> list[str]:
            return etcd_command(
                self.envtest_binaries / "etcd",
                name="karmada-env",
                data_dir=data,
                client_url=self._etcd_url,
                peer_url=f"http://{LOOPBACK}:{self._ports['etcd-peer']}",
                extra=["--log-level=warn"],
            )

        self._start("etcd", args, ("etcd", "etcd-peer"), lambda: f"{self._etcd_url}/health")

    def _apiserver_args(self, name: str, etcd_prefix: str) -> list[str]:
        pki = self.pki
        common = kube_apiserver_command(
            self.envtest_binaries / "kube-apiserver",
            port=self._ports[name],
            etcd_url=self._etcd_url,
            service_account_key=pki / "sa.pub",
            service_account_signing_key=pki / "sa.key",
            extra=[
                f"--etcd-prefix={etcd_prefix}",
                f"--client-ca-file={pki / 'ca.crt'}",
                f"--tls-cert-file={pki / (name + '.crt')}",
                f"--tls-private-key-file={pki / (name + '.key')}",
                "--v=0",
            ],
        )
        if name != "karmada-apiserver":
            # A member: what the envtest tier runs, with a static token the Cluster secret carries.
            return common + token_cluster_flags(pki / "member-tokens.csv")
        # artifacts/deploy/karmada-apiserver.yaml, with its paths and addresses; plus an audit log of Work writes,
        # where the relay's audit annotations (which fallback restored a job) can be read.
        (pki / "audit-policy.yaml").write_text(yaml.safe_dump(AUDIT_POLICY))
        return common + [
            f"--audit-policy-file={pki / 'audit-policy.yaml'}",
            f"--audit-log-path={self.audit_log}",
            "--audit-log-format=json",
            "--audit-log-maxsize=100",
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

    def _start_apiservers(self) -> None:
        # All four at once: each is CPU-bound for a few seconds on its post-start hooks.
        prefixes = {"karmada-apiserver": "/registry", **{member: f"/{member}" for member in self.members}}
        for name, prefix in prefixes.items():
            process = self._spawn(name, self._apiserver_args(name, prefix))
            self._apiservers[KARMADA if name == "karmada-apiserver" else name] = _Apiserver(name, self._ports, process)
        for apiserver in self._apiservers.values():
            self._await_ready(
                apiserver.process,
                lambda a=apiserver: self._apiserver_args(a.name, prefixes[a.name]),
                (apiserver.name,),
                lambda a=apiserver: f"{a.url}/readyz",
                unverified_tls(),
            )

    def _write_kubeconfig(self, path: Path, server: str, user: dict[str, str]) -> None:
        write_kubeconfig(path, server, self.ca_file, user)

    def _write_kubeconfigs(self) -> None:
        karmada = self.server_url(KARMADA)
        self._write_kubeconfig(
            self.kubeconfig(KARMADA),
            karmada,
            {"client-certificate": str(self.pki / "admin.crt"), "client-key": str(self.pki / "admin.key")},
        )
        self._write_kubeconfig(
            self.relay_kubeconfig,
            karmada,
            {"client-certificate": str(self.pki / "relay.crt"), "client-key": str(self.pki / "relay.key")},
        )
        for member in self.members:
            self._write_kubeconfig(self.kubeconfig(member), self.server_url(member), {"token": self.member_token})

    def _install_karmada(self) -> None:
        source = self.tree.source
        deploy = source / "artifacts" / "deploy"
        self.kubectl("apply", "-f", str(deploy / "namespace.yaml"))
        self.kubectl("create", "namespace", "karmada-cluster")
        admin = str(self.kubeconfig(KARMADA))
        # The aggregated apiserver and the webhook are up (on their final ports) before anything names their URLs.
        self._start(
            "karmada-aggregated-apiserver",
            lambda: [
                str(self.tree.bin / "karmada-aggregated-apiserver"),
                f"--kubeconfig={admin}",
                f"--authentication-kubeconfig={admin}",
                f"--authorization-kubeconfig={admin}",
                f"--etcd-servers={self._etcd_url}",
                f"--tls-cert-file={self.pki / 'karmada-aggregated-apiserver.crt'}",
                f"--tls-private-key-file={self.pki / 'karmada-aggregated-apiserver.key'}",
                f"--bind-address={LOOPBACK}",
                f"--secure-port={self._ports['karmada-aggregated-apiserver']}",
                "--tls-min-version=VersionTLS13",
                f"--v={self.verbosity}",
            ],
            ("karmada-aggregated-apiserver",),
            lambda: f"https://{LOOPBACK}:{self._ports['karmada-aggregated-apiserver']}/readyz",
            unverified_tls(),
        )
        # Its readiness is served on the webhook port (artifacts/deploy/karmada-webhook.yaml readinessProbe).
        self._start(
            "karmada-webhook",
            lambda: [
                str(self.tree.bin / "karmada-webhook"),
                f"--kubeconfig={admin}",
                f"--bind-address={LOOPBACK}",
                f"--secure-port={self._ports['karmada-webhook']}",
                f"--cert-dir={self.pki / 'karmada-webhook'}",
                NO_METRICS,
                "--health-probe-bind-address=0",
                "--allow-no-execute-taint-policy=true",
                f"--v={self.verbosity}",
            ],
            ("karmada-webhook",),
            lambda: f"{self.webhook_url}/readyz",
            ssl.create_default_context(cafile=str(self.ca_file)),
        )

        crds = karmada_crds(
            self.tree,
            self.root / "karmada-crds",
            conversion=ConversionWebhook(f"{self.webhook_url}/convert", self._ca_pem),
        )
        self._apply_crds(KARMADA, "-k", str(crds))
        self._apply_crds(KARMADA, "-f", str(flink_deployment_crd()))
        for member in self.members:
            self._apply_crds(member, "-f", str(flink_deployment_crd()))

        ca_bundle = base64.b64encode(self._ca_pem).decode()
        documents = list(
            yaml.safe_load_all(
                (deploy / "karmada-aggregated-apiserver-apiservice.yaml").read_text().replace("{{caBundle}}", ca_bundle)
            )
        )
        for document in documents:
            if document["kind"] == "APIService":
                document["spec"]["service"]["port"] = self._ports["karmada-aggregated-apiserver"]
            elif document["kind"] == "Service":
                document["spec"]["externalName"] = "localhost"
        self.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(documents))
        webhooks = (
            (deploy / "webhook-configuration.yaml")
            .read_text()
            .replace("https://karmada-webhook.karmada-system.svc:443", self.webhook_url)
            .replace("{{caBundle}}", ca_bundle)
        )
        self.kubectl("apply", "-f", "-", input=webhooks)

        karmada = self.api(KARMADA)
        self.wait_until(
            lambda: any(
                c.get("type") == "Available" and c.get("status") == "True"
                for c in (
                    (karmada.get("/apis/apiregistration.k8s.io/v1/apiservices/v1alpha1.cluster.karmada.io") or {})
                    .get("status", {})
                    .get("conditions")
                    or []
                )
            ),
            self.startup_timeout,
            "APIService v1alpha1.cluster.karmada.io",
        )
        self._start_controller_manager(RELAY_CONTROLLERS, RELAY_GATES, ())
        self._start(
            "karmada-scheduler",
            lambda: [
                str(self.tree.bin / "karmada-scheduler"),
                f"--kubeconfig={admin}",
                "--leader-elect=false",
                NO_METRICS,
                f"--health-probe-bind-address={LOOPBACK}:{self._ports['scheduler-health']}",
                "--enable-scheduler-estimator=false",
                f"--v={self.verbosity}",
            ],
            ("scheduler-health",),
            lambda: f"http://{LOOPBACK}:{self._ports['scheduler-health']}/healthz",
        )

    def _start_controller_manager(self, controllers: str, feature_gates: str, args: Sequence[str]) -> None:
        self._start(
            "karmada-controller-manager",
            lambda: [
                str(self.tree.bin / "karmada-controller-manager"),
                f"--kubeconfig={self.kubeconfig(KARMADA)}",
                f"--controllers={controllers}",
                f"--feature-gates={feature_gates}",
                "--enable-no-execute-taint-eviction=true",
                f"--cluster-status-update-frequency={CLUSTER_STATUS_UPDATE_FREQUENCY}",
                "--leader-elect=false",
                NO_METRICS,
                f"--health-probe-bind-address={LOOPBACK}:{self._ports['cm-health']}",
                f"--v={self.verbosity}",
                *args,
            ],
            ("cm-health",),
            lambda: f"http://{LOOPBACK}:{self._ports['cm-health']}/healthz",
        )

    def _apply_crds(self, cluster: str, *source: str) -> None:
        """Server-side apply (Karmada's CRDs exceed client-side apply's annotation limit); wait for Established."""
        apply_until_established(
            functools.partial(self.kubectl, cluster=cluster),
            self.api(cluster),
            source,
            field_manager="karmada-env",
            timeout=self.startup_timeout,
            wait=self.wait_until,
            where=f" in {cluster}",
        )

    def _register_members(self) -> None:
        """Push-mode Clusters as ``karmadactl join`` creates them: secrets in karmada-cluster, spec.id."""
        karmada = self.api(KARMADA)
        token = base64.b64encode(self.member_token.encode()).decode()
        ca_bundle = base64.b64encode(self._ca_pem).decode()
        for member in self.members:
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
            kube_system = self.api(member).get(resource_path("v1", "namespaces", "kube-system"))
            assert kube_system is not None
            karmada.create(
                "/apis/cluster.karmada.io/v1alpha1/clusters",
                {
                    "apiVersion": "cluster.karmada.io/v1alpha1",
                    "kind": "Cluster",
                    "metadata": {"name": member},
                    "spec": {
                        "id": kube_system["metadata"]["uid"],
                        "apiEndpoint": self.link_url(member),
                        "syncMode": "Push",
                        "secretRef": {"namespace": "karmada-cluster", "name": member},
                        "impersonatorSecretRef": {"namespace": "karmada-cluster", "name": f"{member}-impersonator"},
                    },
                },
            )

        for member in self.members:
            self.wait_until(
                lambda: _cluster_registered(karmada, member),  # noqa: B023  wait_until calls it in this iteration only
                self.startup_timeout,
                f"Cluster {member} Ready with FlinkDeployment in status.apiEnablements",
            )

    def _base_relay_config(self) -> dict[str, Any]:
        config = _merge(quickstart_relay_config(), TIER_RELAY_CONFIG)
        config["server"] = {"host": LOOPBACK, "port": self._ports["relay"], "certDir": str(self.relay_cert_dir)}
        config["savepoint"]["checkpointRoot"] = str(self.checkpoint_root)
        config["controllers"]["kubeconfig"] = str(self.relay_kubeconfig)
        return config

    def _install_relay(self) -> None:
        deploy = REPO_ROOT / "manifests" / "deploy"
        for manifest in ("namespace.yaml", "serviceaccount.yaml", "rbac.yaml"):
            self.kubectl("apply", "-f", str(deploy / manifest))
        # What the relay needs in each member cluster, when the install has such manifests (docs/operations.md).
        for manifest in sorted((REPO_ROOT / "manifests" / "member").glob("*.yaml")):
            for member in self.members:
                self.kubectl("apply", "-f", str(manifest), cluster=member)
        self.start_relay()
        rendered = webhook_manifests(
            "--url", self.relay_url, "--namespace", RELAY_NAMESPACE, "--cert-dir", str(self.relay_cert_dir)
        )
        self.kubectl("apply", "-f", "-", input=rendered)
        self._registered.add("failover-relay")
        # Registered means the apiserver calls it: a policy only the relay refuses (statePreservation with a
        # Gracefully purge, docs/design.md "Policy admission") is refused.
        probe = json.dumps(
            {
                "apiVersion": "policy.karmada.io/v1alpha1",
                "kind": "PropagationPolicy",
                "metadata": {"name": "relay-registration-probe", "namespace": "default"},
                "spec": {
                    "propagateDeps": True,
                    "resourceSelectors": [{"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment"}],
                    "placement": {"clusterAffinity": {"clusterNames": list(self.members)}},
                    "failover": {
                        "application": {
                            "decisionConditions": {"tolerationSeconds": 10},
                            "purgeMode": "Gracefully",
                            "statePreservation": {
                                "rules": [
                                    {
                                        "aliasLabelName": "application.karmada.io/failover-jobid",
                                        "jsonPath": "{ .jobStatus.jobId }",
                                    }
                                ]
                            },
                        }
                    },
                },
            }
        )
        self.wait_until(
            lambda: (
                "failover-relay.io"
                in self.kubectl("create", "--dry-run=server", "-f", "-", input=probe, check=False).stderr
            ),
            30,
            "the apiserver calling failover-relay's validating webhook",
            interval=0.5,
        )
