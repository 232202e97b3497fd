"""A real kube-apiserver + etcd for tests, in the manner of controller-runtime's envtest.

The webhook and the reconcile loop talk to Kubernetes through the real API machinery (admission chains, CRD schema
validation, resourceVersion conflicts, watches that break when the apiserver restarts). A fake client reproduces none
of that, so the end-to-end tests run against the real binaries: etcd plus kube-apiserver, no controller manager, no
kubelet, no nodes. This module finds or builds those binaries and runs them on loopback ports for the duration of a
test session. It imports nothing from pytest so the same control plane can back a benchmark or a manual session.

The flags mirror controller-runtime's ``pkg/internal/testing/controlplane/apiserver.go``; authentication is a static
token for an admin user in ``system:masters`` instead of envtest's client certificates, because one bearer token is
all the ``kubernetes`` client and kubectl need.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

# Keep in step with K8S_VERSION in hack/build-envtest.sh, which builds into the directory named after it.
K8S_VERSION = "v1.36.3"
REQUIRED_BINARIES = ("etcd", "kube-apiserver")
REPO_ROOT = Path(__file__).resolve().parent.parent
BUILD_SCRIPT = REPO_ROOT / "hack" / "build-envtest.sh"

# A cold kube-apiserver on a 2-core machine becomes ready in a few seconds; its post-start hooks (RBAC bootstrap
# roles, priority-and-fairness config) are what take the time. 60 s leaves room for a loaded CI runner.
STARTUP_TIMEOUT_SECONDS = 60.0
# Both binaries stop within a second on SIGTERM when idle; a graceful apiserver shutdown drains in-flight requests
# (watches included) so allow a few seconds before SIGKILL.
STOP_TIMEOUT_SECONDS = 10.0
POLL_INTERVAL_SECONDS = 0.1
LOG_TAIL_LINES = 40
# The default `kubectl wait` and API calls of a single test should never take longer than this.
KUBECTL_TIMEOUT_SECONDS = 120.0

ADMIN_USER = "envtest-admin"
ADMIN_GROUP = "system:masters"
SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
LOOPBACK = "127.0.0.1"


class ControlPlaneError(RuntimeError):
    """The control plane could not start (or restart); the message carries the tail of the failing process's log."""


class KubectlError(subprocess.CalledProcessError):
    """kubectl exited non-zero; unlike CalledProcessError, the message includes what kubectl wrote to stderr."""

    def __str__(self) -> str:
        return f"{super().__str__()}\nstderr:\n{self.stderr}"


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
            f"{BUILD_SCRIPT.name} failed with exit code {build.returncode} (full log: {log}); tail:\n{_tail(log)}"
        )
    found = find_binaries()
    if found is None:
        raise BinariesUnavailable(f"{BUILD_SCRIPT.name} succeeded but {cache_dir()} lacks {REQUIRED_BINARIES}")
    return found


def free_port() -> int:
    """A loopback TCP port that was free a moment ago (the OS picks it; the tiny race is acceptable in tests)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


def _tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no log written)"


def _loopback_env() -> dict[str, str]:
    """The environment for child processes: never route loopback traffic (etcd, webhooks on 127.0.0.1) via a proxy."""
    env = dict(os.environ)
    no_proxy = ",".join(filter(None, [env.get("NO_PROXY", ""), "127.0.0.1", "localhost"]))
    env["NO_PROXY"] = env["no_proxy"] = no_proxy
    return env


def _stop_process(process: subprocess.Popen[bytes] | None) -> None:
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=STOP_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@dataclass(frozen=True)
class _Probe:
    """The answer to one HTTP poll: status code (0 when the connection failed) and body."""

    status: int
    body: str


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
        self._etcd: subprocess.Popen[bytes] | None = None
        self._apiserver: subprocess.Popen[bytes] | None = None
        self._apiserver_port = 0
        self._etcd_client_port = 0

    # -- paths and addresses -------------------------------------------------------------------------------------

    @property
    def root(self) -> Path:
        if self._root is None:
            raise ControlPlaneError("control plane is not started")
        return self._root

    @property
    def server_url(self) -> str:
        return f"https://{LOOPBACK}:{self._apiserver_port}"

    @property
    def etcd_url(self) -> str:
        return f"http://{LOOPBACK}:{self._etcd_client_port}"

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
            self._apiserver_port = free_port()
            self._start_apiserver()
            self._write_kubeconfig()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Terminate both processes (SIGTERM, SIGKILL after a timeout) and remove the temporary directory."""
        _stop_process(self._apiserver)
        _stop_process(self._etcd)
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
        _stop_process(self._apiserver)
        self._apiserver = None
        if while_down is not None:
            while_down()
        self._start_apiserver()
        return self.apiserver_startup_seconds or 0.0

    # -- etcd ----------------------------------------------------------------------------------------------------

    def _start_etcd(self) -> None:
        self._etcd_client_port = free_port()
        peer_url = f"http://{LOOPBACK}:{free_port()}"
        data_dir = self.root / "etcd-data"
        data_dir.mkdir(mode=0o700)
        args = [
            str(self.binaries / "etcd"),
            "--name=envtest",
            f"--data-dir={data_dir}",
            f"--listen-client-urls={self.etcd_url}",
            f"--advertise-client-urls={self.etcd_url}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=envtest={peer_url}",
            "--logger=zap",
            "--log-outputs=stderr",
        ]
        self._etcd = self._spawn(args, self.etcd_log)
        self._wait_until(
            process=self._etcd,
            log=self.etcd_log,
            what="etcd",
            probe=lambda: self._get(f"{self.etcd_url}/health", context=None),
            ready=lambda p: p.status == 200 and json.loads(p.body).get("health") == "true",
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
        # Static token file columns: token, user name, user uid, "group1,group2".
        (self.root / "tokens.csv").write_text(f'{self.token},{ADMIN_USER},{ADMIN_USER},"{ADMIN_GROUP}"\n')

    def _apiserver_args(self) -> list[str]:
        service_account_key = self.root / "service-account.key"
        return [
            str(self.binaries / "kube-apiserver"),
            f"--advertise-address={LOOPBACK}",
            f"--bind-address={LOOPBACK}",
            f"--secure-port={self._apiserver_port}",
            f"--etcd-servers={self.etcd_url}",
            f"--cert-dir={self.root / 'apiserver-certs'}",
            f"--token-auth-file={self.root / 'tokens.csv'}",
            "--authorization-mode=RBAC",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={service_account_key}",
            f"--service-account-signing-key-file={service_account_key}",
            # No controller manager runs, so nothing would create the ServiceAccount tokens this plugin waits for.
            "--disable-admission-plugins=ServiceAccount",
            "--allow-privileged=true",
            "--profiling=false",
        ]

    def _start_apiserver(self) -> None:
        started = time.monotonic()
        self._apiserver = self._spawn(self._apiserver_args(), self.apiserver_log)
        # Until the apiserver has written its self-signed certificate there is nothing to verify against; readiness
        # is polled without verification and the kubeconfig's CA is proven by one verified request afterwards.
        unverified = ssl.create_default_context()
        unverified.check_hostname = False
        unverified.verify_mode = ssl.CERT_NONE
        self._wait_until(
            process=self._apiserver,
            log=self.apiserver_log,
            what="kube-apiserver",
            probe=lambda: self._get(f"{self.server_url}/readyz", context=unverified),
            ready=lambda p: p.status == 200,
        )
        self.apiserver_startup_seconds = time.monotonic() - started
        verified = ssl.create_default_context(cafile=str(self.ca_file))
        answer = self._get(f"{self.server_url}/version", context=verified)
        if answer.status != 200:
            raise ControlPlaneError(
                f"kube-apiserver is ready but /version with its CA {self.ca_file} answered {answer.status}: "
                f"{answer.body}"
            )

    def _write_kubeconfig(self) -> None:
        kubeconfig = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": "envtest", "cluster": {"server": self.server_url, "certificate-authority": str(self.ca_file)}}
            ],
            "users": [{"name": ADMIN_USER, "user": {"token": self.token}}],
            "contexts": [{"name": "envtest", "context": {"cluster": "envtest", "user": ADMIN_USER}}],
            "current-context": "envtest",
        }
        # JSON is valid YAML, and every kubeconfig loader accepts it.
        self.kubeconfig_path.write_text(json.dumps(kubeconfig, indent=2))
        self.kubeconfig_path.chmod(0o600)

    # -- kubectl -------------------------------------------------------------------------------------------------

    def kubectl(
        self,
        *args: str,
        input: str | None = None,
        check: bool = True,
        timeout: float = KUBECTL_TIMEOUT_SECONDS,
    ) -> subprocess.CompletedProcess[str]:
        """Run kubectl against this control plane; raise KubectlError on a non-zero exit unless ``check`` is off."""
        # The discovery cache is keyed by host:port, and every session has a new port: keep it with the session
        # instead of piling up under ~/.kube/cache.
        command = [
            "kubectl",
            f"--kubeconfig={self.kubeconfig_path}",
            f"--cache-dir={self.root / 'kubectl-cache'}",
            *args,
        ]
        result = subprocess.run(
            command,
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=_loopback_env(),
        )
        if check and result.returncode != 0:
            raise KubectlError(result.returncode, command, result.stdout, result.stderr)
        return result

    def apply_crds(self, source: Path | str, *, timeout: float = STARTUP_TIMEOUT_SECONDS) -> list[str]:
        """Apply CRDs (a kustomization directory, ``kubectl apply -k``, or one file) and wait until each is
        Established.

        Server-side apply, because client-side apply stores the whole object in the last-applied annotation, which
        large CRDs (Karmada's PropagationPolicy schema) push past the 256 KiB annotation limit. Returns the CRD
        names, e.g. ``propagationpolicies.policy.karmada.io``.
        """
        path = Path(source)
        if path.is_dir() and (path / "kustomization.yaml").is_file():
            what = ["-k", str(path)]
        elif path.is_file():
            what = ["-f", str(path)]
        else:
            raise ValueError(f"{source} is neither a file nor a directory with a kustomization.yaml")
        applied = self.kubectl(
            "apply",
            "--server-side",
            "--force-conflicts",
            "--field-manager=envtest",
            "-o",
            "name",
            *what,
        )
        crds = [
            line.split("/", 1)[1]
            for line in applied.stdout.split()
            if line.startswith("customresourcedefinition.apiextensions.k8s.io/")
        ]
        # Polled instead of `kubectl wait --for=condition=Established`, which fails at once on a CRD whose status
        # has no conditions yet (a large CRD, a busy apiserver).
        context = ssl.create_default_context(cafile=str(self.ca_file))
        deadline = time.monotonic() + timeout
        for name in crds:
            url = f"{self.server_url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
            while True:
                answer = self._get(url, context=context)
                conditions = (
                    (json.loads(answer.body).get("status") or {}).get("conditions") or []
                    if (answer.status == 200)
                    else []
                )
                if any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
                    break
                if time.monotonic() > deadline:
                    raise ControlPlaneError(f"CRD {name} not Established after {timeout:.0f} s")
                time.sleep(POLL_INTERVAL_SECONDS)
        return crds

    # -- plumbing ------------------------------------------------------------------------------------------------

    def _spawn(self, args: Sequence[str], log: Path) -> subprocess.Popen[bytes]:
        with log.open("ab") as log_file:
            # A new session keeps a Ctrl-C in the terminal from killing the children before stop() runs.
            return subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                env=_loopback_env(),
                start_new_session=True,
            )

    def _get(self, url: str, *, context: ssl.SSLContext | None) -> _Probe:
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {self.token}"})
        # Loopback only: a proxy from the environment must never see these requests.
        opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=context)
        )
        try:
            with opener.open(request, timeout=5) as response:
                return _Probe(response.status, response.read().decode(errors="replace"))
        except urllib.error.HTTPError as error:
            return _Probe(error.code, error.read().decode(errors="replace"))
        except (urllib.error.URLError, ConnectionError, TimeoutError, ssl.SSLError):
            return _Probe(0, "")

    def _wait_until(
        self,
        *,
        process: subprocess.Popen[bytes],
        log: Path,
        what: str,
        probe: Callable[[], _Probe],
        ready: Callable[[_Probe], bool],
    ) -> None:
        deadline = time.monotonic() + self.startup_timeout
        last = _Probe(0, "")
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise ControlPlaneError(f"{what} exited with code {process.returncode}; log tail:\n{_tail(log)}")
            last = probe()
            if ready(last):
                return
            time.sleep(POLL_INTERVAL_SECONDS)
        raise ControlPlaneError(
            f"{what} not ready after {self.startup_timeout:.0f} s (last answer {last.status}: {last.body[-500:]}); "
            f"log tail:\n{_tail(log)}"
        )
