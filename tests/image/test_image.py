"""The container image, built from the Dockerfile (hack/build-image.sh: docker or podman, the pinned base or, without
a registry, a Debian base made locally) and run the way the Deployment runs it: its own user, a read-only root
filesystem, the cert dir on a volume. /readyz answers over TLS that verifies against the CA the relay made, a
policy review is decided, and the image's Python is one relay/runtime.py lets serve in a cluster.

Skips with one line where no container tool can build or run an image; on CI (.ci/run installs podman) a missing
tool fails instead."""

from __future__ import annotations

import json
import os
import resource
import shutil
import ssl
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from relay.runtime import affected_by_ssl_leak
from tests.admission_reviews import admission_review
from tests.ci import on_ci
from tests.policies import flink_policy
from tests.processes import free_port

pytestmark = pytest.mark.image

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO_ROOT / "hack" / "build-image.sh"
EXIT_NO_TOOL = 5
IMAGE_USER = "65532:65532"
CERT_DIR = "/var/run/failover-relay/certs"
READY_TIMEOUT_SECONDS = 60
BUILD_TIMEOUT_SECONDS = 1200


@dataclass(frozen=True)
class Image:
    tool: str
    name: str
    run_flags: tuple[str, ...]

    def run(self, *args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([self.tool, *args], capture_output=True, text=True, timeout=timeout, check=check)


def _run_flags(tool: str, name: str) -> tuple[str, ...]:
    """How this machine runs a container: the host network (the test dials 127.0.0.1), resource limits no higher
    than the test's own (the tools' defaults, e.g. 1048576 open files, exceed what a sandboxed process may raise
    to), and runc when the default OCI runtime cannot start one (crun refuses hybrid cgroup v1/v2 hosts)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    flags = ("--network", "host", "--ulimit", f"nofile={soft}:{hard}", "--ulimit", "nproc=4096:4096")
    candidates = [flags]
    if tool == "podman" and shutil.which("runc"):
        candidates.append(("--runtime", "runc", *flags))
    errors = []
    for candidate in candidates:
        probe = subprocess.run(
            [tool, "run", "--rm", *candidate, name, "--help"], capture_output=True, text=True, timeout=120
        )
        if probe.returncode == 0:
            return candidate
        errors.append(probe.stderr.strip().splitlines()[-1] if probe.stderr.strip() else f"exit {probe.returncode}")
    pytest.skip(f"{tool} built the image but cannot run a container here: {'; '.join(errors)}")


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Image:
    log = tmp_path_factory.getbasetemp() / "build-image.log"
    with log.open("ab") as progress:
        built = subprocess.run(
            ["bash", str(BUILD_SCRIPT)],
            stdout=subprocess.PIPE,
            stderr=progress,
            text=True,
            timeout=BUILD_TIMEOUT_SECONDS,
        )
    if built.returncode == EXIT_NO_TOOL:
        lines = log.read_text(errors="replace").strip().splitlines()
        reason = lines[-1] if lines else "no container tool can build here"
        if on_ci():  # .ci/run installs podman (hack/install-podman.sh): the image is part of CI
            pytest.fail(f"CI must build the image: {reason}", pytrace=False)
        pytest.skip(reason)
    assert built.returncode == 0, f"hack/build-image.sh exited {built.returncode}; log: {log}"
    tool, name = built.stdout.strip().splitlines()[-1].split()
    return Image(tool, name, _run_flags(tool, name))


@pytest.fixture
def serving(image: Image, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The image serving on a free loopback port; yields its base URL and the host side of its cert dir."""
    certs = tmp_path / "certs"
    certs.mkdir(mode=0o700)
    if os.geteuid() == 0:
        os.chown(certs, 65532, 65532)
    else:
        # Not root (a CI runner with docker, rootless podman): the container's user cannot be given the directory,
        # so it may write into it; the certificate files keep their own modes (key 0600, certificates 0644).
        certs.chmod(0o777)
    volume = f"{certs}:{CERT_DIR}"
    port = free_port()
    name = f"failover-relay-test-{uuid.uuid4().hex[:8]}"
    # In a cluster (KUBERNETES_SERVICE_HOST set) `serve` refuses a Python with the gh-109534 leak: this one starts.
    image.run(
        "run",
        "--detach",
        "--name",
        name,
        *image.run_flags,
        "--read-only",
        "--tmpfs",
        "/tmp",
        "--volume",
        volume,
        "--env",
        "KUBERNETES_SERVICE_HOST=192.0.2.1",
        image.name,
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--cert-dir",
        CERT_DIR,
        "--no-controllers",
        "--log-format",
        "json",
    )
    try:
        yield f"https://localhost:{port}", certs
    finally:
        logs = image.run("logs", name, check=False)
        image.run("stop", "-t", "5", name, check=False)
        image.run("rm", "--force", name, check=False)
        print(logs.stdout[-4000:], logs.stderr[-4000:])


def _get(url: str, context: ssl.SSLContext, body: bytes | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"} if body else {})
    try:
        with urllib.request.urlopen(request, context=context, timeout=5) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_the_image_serves_readyz_over_tls_and_decides_a_review(image: Image, serving: tuple[str, Path]) -> None:
    base, certs = serving
    started = time.monotonic()
    status = 0
    while time.monotonic() - started < READY_TIMEOUT_SECONDS:
        if (certs / "ca.crt").exists():
            # What the apiserver does: verify against the caBundle, hostname included.
            context = ssl.create_default_context(cafile=str(certs / "ca.crt"))
            try:
                status, _ = _get(f"{base}/readyz", context)
            except (OSError, ssl.SSLError):
                status = 0
            if status == 200:
                break
        time.sleep(0.2)
    assert status == 200, f"/readyz not 200 after {READY_TIMEOUT_SECONDS} s"

    review = admission_review(flink_policy(purgeMode="Gracefully"))
    status, body = _get(f"{base}/validate", context, json.dumps(review).encode())
    response = json.loads(body)["response"]
    assert status == 200 and response["allowed"] is False
    assert "set purgeMode: Directly" in response["status"]["message"]
    status, metrics = _get(f"{base}/metrics", context)
    assert status == 200 and b'failover_relay_admission_requests_total{endpoint="validate"' in metrics


def test_the_image_runs_as_its_own_user_with_a_python_without_the_leak(image: Image) -> None:
    user = image.run("image", "inspect", "--format", "{{.Config.User}}", image.name).stdout.strip()
    version = image.run(
        "run",
        "--rm",
        *image.run_flags,
        "--entrypoint",
        "python3",
        image.name,
        "-c",
        "import sys; print('%d.%d.%d' % sys.version_info[:3])",
    ).stdout.strip()

    assert user == IMAGE_USER
    assert not affected_by_ssl_leak(tuple(int(part) for part in version.split(".")))  # type: ignore[arg-type]
