"""The relay as a real `failover-relay serve` process, and its registration in the test control plane."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Sequence
from pathlib import Path

from tests.e2e.objects import good_policy
from tests.envtest import REPO_ROOT, ControlPlane
from tests.processes import Answer, ChildProcess, ControlPlaneError, free_port, loopback_env, probe
from tests.relay_cli import serve_command, webhook_manifests
from tests.tls_clients import client_tls
from tests.waiting import wait_until

# The relay imports aiohttp, cryptography and structlog and may generate a CA and a key: about a second on a
# small machine, much more while a Karmada tier or a JVM shares two cores. Thirty leaves room for a loaded runner.
RELAY_STARTUP_SECONDS = 30.0
# The apiserver picks up a changed webhook configuration through an informer, normally within a second.
WEBHOOK_REGISTRATION_SECONDS = 15.0
POLL_SECONDS = 0.1
REQUESTS_METRIC = "failover_relay_admission_requests_total"
ENDPOINTS = ("validate", "mutate")


class RelayProcess:
    """`failover-relay serve` as a child process on a free port, with its own cert dir and log file."""

    def __init__(self, directory: Path, kubeconfig: Path, serve_args: Sequence[str]) -> None:
        self.directory = directory
        self.cert_dir = directory / "certs"
        self.log = directory / "relay.log"
        self.port = free_port()
        self.serve_args = tuple(serve_args)
        self.kubeconfig = kubeconfig
        self._child: ChildProcess | None = None

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def ca_file(self) -> Path:
        return self.cert_dir / "ca.crt"

    @property
    def process(self) -> subprocess.Popen[bytes] | None:
        """The `serve` process last started (its return code once stopped)."""
        return self._child.popen if self._child is not None else None

    def start(self) -> None:
        # The admission tests want the webhook alone: a reconcile loop in every relay would act on the bindings of
        # the loop's own tests. Pass "--controllers-on" to keep it.
        # The same for the caBundle updater: the tests register the webhooks with the caBundle they want.
        loop_flags = ["--no-cabundle-sync"] + ([] if "--controllers-on" in self.serve_args else ["--no-controllers"])
        serve_args = [arg for arg in self.serve_args if arg != "--controllers-on"]
        command = serve_command(self.port, self.cert_dir, *loop_flags, *serve_args, host=None)
        env = loopback_env() | {"KUBECONFIG": str(self.kubeconfig)}
        env.pop("KUBERNETES_SERVICE_HOST", None)  # never mistake the test machine for a pod
        self._child = ChildProcess("failover-relay serve", command, self.log, env=env, cwd=REPO_ROOT)
        self._child.start()
        try:
            self._child.wait_ready(
                lambda: self._get("/readyz") if self.ca_file.exists() else Answer(0, ""),
                timeout=RELAY_STARTUP_SECONDS,
            )
        except ControlPlaneError:
            self.stop()
            raise

    def stop(self) -> None:
        if self._child is not None:
            self._child.stop(timeout=15)

    def readyz(self) -> tuple[int, str]:
        """/readyz's status and body."""
        return self._get("/readyz")

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")[-4000:] if self.log.exists() else "(no log)"

    def reviews_answered(self, endpoint: str | None = None) -> float:
        """How many AdmissionReviews this relay has answered (on ``/validate`` or ``/mutate`` only, if given), from
        its own /metrics."""
        answer = self._get("/metrics")
        if answer.status != 200:
            return 0.0
        prefix = REQUESTS_METRIC + "{"
        selector = f'endpoint="{endpoint}"' if endpoint else ""
        return sum(
            float(line.rsplit(" ", 1)[1])
            for line in answer.body.splitlines()
            if line.startswith(prefix) and selector in line
        )

    def metric(self, sample: str) -> float:
        """The value of one sample of this relay's /metrics (`name{labels}` exactly as exposed), 0 when absent."""
        answer = self._get("/metrics")
        values = [float(line.rsplit(" ", 1)[1]) for line in answer.body.splitlines() if line.startswith(sample + " ")]
        return values[0] if answer.status == 200 and values else 0.0

    def manifests(self, *extra_args: str) -> str:
        """The webhook configurations for this relay, rendered by the real CLI."""
        return webhook_manifests("--url", self.url, "--cert-dir", str(self.cert_dir), *extra_args)

    def _get(self, path: str) -> Answer:
        return probe(self.url + path, client_tls(self.ca_file))


class WebhookRegistration:
    """Points the cluster's webhook configurations at one relay, and proves the apiserver calls it."""

    def __init__(self, control_plane: ControlPlane) -> None:
        self.control_plane = control_plane
        self.current: RelayProcess | None = None

    def register(self, relay: RelayProcess, *manifest_args: str) -> None:
        """Apply `failover-relay manifests webhook --url <relay>` and wait until the apiserver calls that relay."""
        self.control_plane.kubectl("apply", "-f", "-", input=relay.manifests(*manifest_args))
        self.current = relay
        # The two configurations reach the apiserver's webhook manager through separate informers: wait until the
        # relay has answered on both endpoints, so no test runs while one of them still calls the previous relay.
        before = {endpoint: relay.reviews_answered(endpoint) for endpoint in ENDPOINTS}
        policy = json.dumps(good_policy(f"registration-probe-{uuid.uuid4().hex[:8]}", "default"))

        def called_on_both() -> bool:
            self.control_plane.kubectl("create", "--dry-run=server", "-f", "-", input=policy, check=False)
            return all(relay.reviews_answered(endpoint) > count for endpoint, count in before.items())

        try:
            wait_until(called_on_both, WEBHOOK_REGISTRATION_SECONDS, "the apiserver calling the relay", POLL_SECONDS)
        except TimeoutError:
            raise RuntimeError(
                f"the apiserver did not call the relay at {relay.url} on {' and '.join(ENDPOINTS)} "
                f"within {WEBHOOK_REGISTRATION_SECONDS} s of registering it:\n{relay.log_text()}"
            ) from None
