"""A real kube-apiserver + etcd for tests, in the manner of controller-runtime's envtest.

The webhook and the reconcile loop talk to Kubernetes through the real API machinery (admission chains, CRD schema
validation, resourceVersion conflicts, watches that break when the apiserver restarts). A fake client reproduces none
of that, so the end-to-end tests run against the real binaries: etcd plus kube-apiserver, no controller manager, no
kubelet, no nodes. This module finds or builds those binaries and runs them on loopback ports for the duration of a
test session. It imports nothing from pytest so the same control plane can back a benchmark or a manual session.

The processes, ports and flags are the Karmada tier's too (``tests/processes.py``, ``tests/apiserver.py``): the flags
mirror controller-runtime's ``pkg/internal/testing/controlplane/apiserver.go``; authentication is a static token for
an admin user in ``system:masters`` instead of envtest's client certificates, because one bearer token is all the
``kubernetes`` client and kubectl need.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import ssl
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

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
from tests.kube_api import Api
from tests.processes import (
    LOOPBACK,
    PORT_ATTEMPTS,
    Answer,
    ChildProcess,
    ControlPlaneError,
    await_ready_on_free_ports,
    free_port,
    log_tail,
    probe,
)
from tests.tls_clients import unverified_tls
from tests.waiting import wait_until

# Keep in step with K8S_VERSION in hack/build-envtest.sh, which builds into the directory named after it.
K8S_VERSION = "v1.36.3"
REQUIRED_BINARIES = ("etcd", "kube-apiserver")
REPO_ROOT = Path(__file__).resolve().parent.parent
BUILD_SCRIPT = REPO_ROOT / "hack" / "build-envtest.sh"

# A cold kube-apiserver on a 2-core machine becomes ready in a few seconds; its post-start hooks (RBAC bootstrap
# roles, priority-and-fairness config) are what take the time. 60 s leaves room for a loaded CI runner.
STARTUP_TIMEOUT_SECONDS = 60.0
LOG_TAIL_LINES = 40

ADMIN_USER = "envtest-admin"
ADMIN_GROUP = "system:masters"


def cache_dir() -> Path:
    """The directory hack/build-envtest.sh builds the pinned release into."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "failover-relay" / "envtest" / K8S_VERSION


def build_log() -> Path:
    """Where ``ensure_binaries`` keeps the output of its last build."""
    return cache_dir().parent / f"build-{K8S_VERSION}.log"


def _has_binaries(directory: Path) -> bool:
    return all(os.access(directory / name, os.X_OK) for name in REQUIRED_BINARIES)


def find_binaries() -> Path | None:
    """Return a directory holding ``etcd`` and ``kube-apiserver``, or None.

    ``KUBEBUILDER_ASSETS`` wins (the variable controller-runtime's envtest and setup-envtest use), then our cache
    directory for the pinned version.
    """
    assets = os.environ.get("KUBEBUILDER_ASSETS")
    if assets and _has_binaries(Path(assets)):
        return Path(assets)
    if _has_binaries(cache_dir()):
        return cache_dir()
    return None


class BinariesUnavailable(RuntimeError):
    """Neither KUBEBUILDER_ASSETS nor the cache holds the binaries and they could not be built; says how to get them."""


class GoUnavailable(BinariesUnavailable):
    """The binaries are missing and there is no Go toolchain to build them with."""


def ensure_binaries() -> Path:
    """Find the binaries; when absent, build them with hack/build-envtest.sh (Go required) and return their directory.

    Building compiles kube-apiserver from source, 10-20 minutes on two cores the first time; the script caches the
    result, so later sessions find it at once. Raises GoUnavailable without Go, BinariesUnavailable when the build
    fails.
    """
    found = find_binaries()
    if found is not None:
        return found
    if shutil.which("go") is None:
        raise GoUnavailable(
            f"no etcd/kube-apiserver in KUBEBUILDER_ASSETS or {cache_dir()}, and no Go to build them: install Go "
            f"1.26 and run `bash hack/build-envtest.sh`, or point KUBEBUILDER_ASSETS at a directory holding both"
        )
    log = build_log()
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as log_file:
        # The script's progress goes to stderr, kept in the log; its stdout is only the directory it filled.
        build = subprocess.run(["bash", str(BUILD_SCRIPT)], stdout=subprocess.DEVNULL, stderr=log_file)
    if build.returncode != 0:
        raise BinariesUnavailable(
            f"{BUILD_SCRIPT.name} failed with exit code {build.returncode} (full log: {log}); "
            f"tail:\n{log_tail(log, LOG_TAIL_LINES)}"
        )
    found = find_binaries()
    if found is None:
        raise BinariesUnavailable(f"{BUILD_SCRIPT.name} succeeded but {cache_dir()} lacks {REQUIRED_BINARIES}")
    return found


def etcd_key(group: str, plural: str, namespace: str, name: str) -> str:
    """Where kube-apiserver stores a namespaced custom resource in etcd: its JSON, without resourceVersion (etcd's
    revision is that), under this key."""
    return f"/registry/{group}/{plural}/{namespace}/{name}"


class ControlPlane:
    """etcd + kube-apiserver on loopback ports, with an admin kubeconfig.

    Use as a context manager, or call ``start()`` / ``stop()``. Everything lives in one temporary directory (etcd
    data, the apiserver's self-signed serving certificate, keys, token file, logs, kubeconfig) that ``stop()``
    removes; a start that fails midway stops what it started and removes the directory before raising.
    """

    def __init__(self, binaries: Path, *, startup_timeout: float = STARTUP_TIMEOUT_SECONDS) -> None:
        self.binaries = binaries
        self.startup_timeout = startup_timeout
        self.token = secrets.token_hex(16)
        self.apiserver_startup_seconds: float | None = None
        self._root: Path | None = None
        self._etcd: ChildProcess | None = None
        self._apiserver: ChildProcess | None = None
        self._ports = {"etcd": 0, "etcd-peer": 0, "kube-apiserver": 0}

    # -- paths and addresses -------------------------------------------------------------------------------------

    @property
    def root(self) -> Path:
        if self._root is None:
            raise ControlPlaneError("control plane is not started")
        return self._root

    @property
    def server_url(self) -> str:
        return f"https://{LOOPBACK}:{self._ports['kube-apiserver']}"

    @property
    def etcd_url(self) -> str:
        return f"http://{LOOPBACK}:{self._ports['etcd']}"

    def etcd(self, call: str, body: dict[str, Any], timeout: float = 30.0) -> dict[str, Any]:
        """One call of etcd's JSON gateway, `/v3/<call>` (keys and values base64): a write behind the apiserver's
        back (a benchmark's fixtures, a change no watch delivered). A refused call raises ControlPlaneError."""
        request = urllib.request.Request(f"{self.etcd_url}/v3/{call}", json.dumps(body).encode(), method="POST")
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=timeout) as response:
            answer: dict[str, Any] = json.loads(response.read())
        if "error" in answer or answer.get("succeeded") is False:
            raise ControlPlaneError(f"etcd refused {call}: {str(answer)[:300]}")
        return answer

    @property
    def ca_file(self) -> Path:
        """The apiserver's self-signed bundle: serving certificate followed by the CA that signed it."""
        return self.root / "apiserver-certs" / "apiserver.crt"

    @property
    def kubeconfig_path(self) -> Path:
        return self.root / "kubeconfig"

    @property
    def etcd_log(self) -> Path:
        return self.root / "etcd.log"

    @property
    def apiserver_log(self) -> Path:
        return self.root / "kube-apiserver.log"

    def api(self) -> Api:
        """A REST client as the admin user."""
        return Api(self.server_url, self.ca_file, token=self.token)

    # -- lifecycle -----------------------------------------------------------------------------------------------

    def __enter__(self) -> ControlPlane:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Start etcd, then kube-apiserver; return once ``/readyz`` answers 200 and the kubeconfig is written."""
        if self._root is not None:
            raise ControlPlaneError("control plane is already started")
        self._root = Path(tempfile.mkdtemp(prefix="failover-relay-envtest-"))
        try:
            self._start_etcd()
            self._write_apiserver_inputs()
            self._pick_ports("kube-apiserver")
            self._start_apiserver(first=True)
            self._write_kubeconfig()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop both processes (SIGTERM, SIGKILL after a timeout) and remove the temporary directory."""
        for process in (self._apiserver, self._etcd):
            if process is not None:
                process.stop()
        self._apiserver = self._etcd = None
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None

    def restart_apiserver(self, while_down: Callable[[], object] | None = None) -> float:
        """Stop and start kube-apiserver on the same port against the same etcd; return its start-up seconds.

        The serving certificate in the cert dir is reused, so existing kubeconfigs and CA files stay valid; clients
        see exactly what an apiserver rollout looks like to them: watches end, connections are refused, then it is
        back with the same data, or with what `while_down` wrote into etcd meanwhile: changes no watch delivered.
        """
        if self._apiserver is None:
            raise ControlPlaneError("control plane is not started")
        self._apiserver.stop()
        if while_down is not None:
            while_down()
        self._start_apiserver(first=False)
        return self.apiserver_startup_seconds or 0.0

    # -- etcd ----------------------------------------------------------------------------------------------------

    def _etcd_command(self) -> list[str]:
        return etcd_command(
            self.binaries / "etcd",
            name="envtest",
            data_dir=self.root / "etcd-data",
            client_url=self.etcd_url,
            peer_url=f"http://{LOOPBACK}:{self._ports['etcd-peer']}",
        )

    def _start_etcd(self) -> None:
        self._pick_ports("etcd", "etcd-peer")
        # Never tied to the starting thread (die_with_parent): restart_apiserver may run on a worker thread, and so
        # may anything a test does with this control plane.
        self._etcd = etcd = ChildProcess("etcd", self._etcd_command(), self.etcd_log, die_with_parent=False)
        etcd.start()
        await_ready_on_free_ports(
            etcd,
            self._etcd_command,
            lambda: self._pick_ports("etcd", "etcd-peer"),
            lambda: self._wait_ready(
                etcd,
                f"{self.etcd_url}/health",
                ready=lambda answer: answer.status == 200 and json.loads(answer.body).get("health") == "true",
            ),
        )

    # -- kube-apiserver ------------------------------------------------------------------------------------------

    def _write_apiserver_inputs(self) -> None:
        (self.root / "apiserver-certs").mkdir(mode=0o700)
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        (self.root / "service-account.key").write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.TraditionalOpenSSL,
                serialization.NoEncryption(),
            )
        )
        write_token_file(self.root / "tokens.csv", self.token, ADMIN_USER, ADMIN_GROUP)

    def _apiserver_args(self) -> list[str]:
        service_account_key = self.root / "service-account.key"
        return kube_apiserver_command(
            self.binaries / "kube-apiserver",
            port=self._ports["kube-apiserver"],
            etcd_url=self.etcd_url,
            service_account_key=service_account_key,
            service_account_signing_key=service_account_key,
            extra=[f"--cert-dir={self.root / 'apiserver-certs'}", *token_cluster_flags(self.root / "tokens.csv")],
        )

    def _start_apiserver(self, *, first: bool) -> None:
        """Start kube-apiserver and wait for ``/readyz``; only the ``first`` start may move to other ports, a restart
        keeps the one the kubeconfig names."""
        started = time.monotonic()
        if self._apiserver is None:
            self._apiserver = ChildProcess("kube-apiserver", [], self.apiserver_log, die_with_parent=False)
        apiserver = self._apiserver
        apiserver.args = self._apiserver_args()
        apiserver.start()
        # Until the apiserver has written its self-signed certificate there is nothing to verify against; readiness
        # is polled without verification and the kubeconfig's CA is proven by one verified request afterwards.
        await_ready_on_free_ports(
            apiserver,
            self._apiserver_args,
            lambda: self._pick_ports("kube-apiserver"),
            lambda: self._wait_ready(apiserver, f"{self.server_url}/readyz", unverified_tls()),
            attempts=PORT_ATTEMPTS if first else 1,
        )
        self.apiserver_startup_seconds = time.monotonic() - started
        status, answer = self.api().request("GET", "/version")
        if status != 200:
            raise ControlPlaneError(
                f"kube-apiserver is ready but /version with its CA {self.ca_file} answered {status}: {answer}"
            )

    def _write_kubeconfig(self) -> None:
        write_kubeconfig(
            self.kubeconfig_path,
            self.server_url,
            self.ca_file,
            {"token": self.token},
            cluster="envtest",
            user_name=ADMIN_USER,
        )

    # -- kubectl -------------------------------------------------------------------------------------------------

    def kubectl(
        self,
        *args: str,
        input: str | None = None,
        check: bool = True,
        timeout: float = KUBECTL_TIMEOUT_SECONDS,
    ) -> subprocess.CompletedProcess[str]:
        """Run kubectl against this control plane; raise KubectlError on a non-zero exit unless ``check`` is off."""
        return run_kubectl(
            self.kubeconfig_path, self.root / "kubectl-cache", *args, input=input, check=check, timeout=timeout
        )

    def apply_crds(self, source: Path | str, *, timeout: float = STARTUP_TIMEOUT_SECONDS) -> list[str]:
        """Apply CRDs (a kustomization directory, ``kubectl apply -k``, or one file) server-side and wait until each
        is Established (``tests/apiserver.py`` ``apply_until_established``). Returns the CRD names, e.g.
        ``propagationpolicies.policy.karmada.io``."""
        path = Path(source)
        if path.is_dir() and (path / "kustomization.yaml").is_file():
            what = ["-k", str(path)]
        elif path.is_file():
            what = ["-f", str(path)]
        else:
            raise ValueError(f"{source} is neither a file nor a directory with a kustomization.yaml")
        return apply_until_established(
            self.kubectl, self.api(), what, field_manager="envtest", timeout=timeout, wait=wait_until
        )

    # -- plumbing ------------------------------------------------------------------------------------------------

    def _pick_ports(self, *names: str) -> None:
        for name in names:
            self._ports[name] = free_port()

    def _wait_ready(
        self,
        process: ChildProcess,
        url: str,
        context: ssl.SSLContext | None = None,
        ready: Callable[[Answer], bool] = lambda answer: answer.status == 200,
    ) -> None:
        process.wait_ready(
            lambda: probe(url, context, {"Authorization": f"Bearer {self.token}"}),
            timeout=self.startup_timeout,
            ready=ready,
            lines=LOG_TAIL_LINES,
        )
