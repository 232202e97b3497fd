"""`serve --member`: a member cluster's relay mutates FlinkDeployments and never loads the Kubernetes client, nor,
serving a cert-manager certificate, `cryptography`.

The real command runs under `python -X importtime`, which writes one line per module imported, at any time of the
process's life, to stderr: lazy imports after start-up are seen too. The control-plane run of the same command
(without --member) shows the same lines do name `kubernetes` when it is loaded, and the run on an empty cert dir
(where the relay issues its own certificate) that they name `cryptography`, so each check can fail.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from certs.authority import generate_ca, generate_serving_certificate
from certs.serving_names import LOCAL_DNS_NAMES, LOCAL_IP_ADDRESSES
from relay.settings import Settings, SettingsError, apply, check_settings
from tests.admission_reviews import admission_review, decoded_patch
from tests.tls_clients import client_tls

START_TIMEOUT_SECONDS = 30.0
LABEL = "application.karmada.io/failover-jobid"
JOB = "0123456789abcdef0123456789abcdef"
# An `-X importtime` line: "import time: <self us> | <cumulative us> | <indented module name>".
IMPORTED = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)\s*$")


def flink_deployment() -> dict:
    return {
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkDeployment",
        "metadata": {"name": "basic-example", "namespace": "flink", "labels": {LABEL: JOB}},
        "spec": {
            "image": "flink:1.17",
            "flinkVersion": "v1_17",
            "job": {
                "jarURI": "local:///opt/flink/examples/streaming/StateMachineExample.jar",
                "upgradeMode": "stateless",
            },
        },
    }


def serve_once(tmp_path: Path, *flags: str) -> tuple[list[str], dict]:
    """Start `serve` with `flags`, post one FlinkDeployment review to /mutate, stop it with SIGTERM; the modules the
    process imported over its whole life, and the answer."""
    checkpoints = tmp_path / "checkpoints"
    (checkpoints / JOB / "chk-3").mkdir(parents=True, exist_ok=True)
    (checkpoints / JOB / "chk-3" / "_metadata").write_bytes(b"m")
    cert_dir, stderr = tmp_path / "certs", tmp_path / f"stderr{len(list(tmp_path.glob('stderr*')))}.txt"
    ca_file = cert_dir / "ca.crt"  # ours, made at start when the dir is empty, or cert-manager's
    # No cluster access of any kind: the control-plane run then finds none, but still loads the client to look.
    env = {key: value for key, value in os.environ.items() if key not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    env["HOME"] = str(tmp_path)
    with stderr.open("w") as sink:
        process = subprocess.Popen(
            [
                sys.executable,
                "-X",
                "importtime",
                "-m",
                "relay.cli",
                "serve",
                "--port",
                "0",
                "--cert-dir",
                str(cert_dir),
                "--checkpoint-root",
                str(checkpoints),
                "--log-format",
                "json",
                *flags,
            ],
            stdout=subprocess.DEVNULL,
            stderr=sink,
            env=env,
        )
    try:
        url = _wait_for_url(process, stderr)
        request = urllib.request.Request(
            f"{url}/mutate",
            data=json.dumps(admission_review(flink_deployment())).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, context=client_tls(ca_file), timeout=10) as reply:
            answer = json.loads(reply.read())["response"]
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0, stderr.read_text()[-2000:]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    modules = [match.group(1) for line in stderr.read_text().splitlines() if (match := IMPORTED.match(line))]
    return modules, answer


def _wait_for_url(process: subprocess.Popen, stderr: Path) -> str:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"serve exited with {process.returncode}:\n{stderr.read_text()[-3000:]}")
        for line in stderr.read_text().splitlines():
            if line.startswith("{") and json.loads(line).get("event") == "serving":
                return json.loads(line)["url"].replace("127.0.0.1", "localhost")
        time.sleep(0.1)
    pytest.fail(f"serve did not start within {START_TIMEOUT_SECONDS} s:\n{stderr.read_text()[-3000:]}")


def package_modules(modules: list[str], package: str) -> list[str]:
    return [name for name in modules if name == package or name.startswith(f"{package}.")]


def kubernetes_modules(modules: list[str]) -> list[str]:
    return package_modules(modules, "kubernetes")


def write_cert_manager_files(cert_dir: Path) -> None:
    """What a cert-manager Certificate's Secret mounts: tls.crt, tls.key and ca.crt of a CA that is not ours."""
    now = datetime.now(UTC)
    ca = generate_ca("cert-manager-ca", now, timedelta(days=365))
    leaf = generate_serving_certificate(ca, LOCAL_DNS_NAMES, LOCAL_IP_ADDRESSES, now, timedelta(days=90))
    cert_dir.mkdir()
    for name, content in (
        ("tls.crt", leaf.certificate_pem),
        ("tls.key", leaf.private_key_pem),
        ("ca.crt", ca.certificate_pem),
    ):
        (cert_dir / name).write_bytes(content)


def test_member_mode_mutates_flink_deployments_without_the_kubernetes_client(tmp_path: Path) -> None:
    modules, answer = serve_once(tmp_path, "--member")
    assert answer["allowed"] is True
    patch = decoded_patch(answer)
    assert f"{tmp_path / 'checkpoints' / JOB / 'chk-3'}" in json.dumps(patch)
    assert "relay.serve" in modules and "webhook.mutators" in modules  # the lines were read
    assert kubernetes_modules(modules) == []
    assert not [
        name
        for name in modules
        if name.startswith("controllers.") or name in ("relay.start_controllers", "relay.work_labels")
    ]


def test_member_mode_with_a_cert_manager_certificate_never_imports_cryptography(tmp_path: Path) -> None:
    write_cert_manager_files(tmp_path / "certs")
    before = {path.name: path.read_bytes() for path in (tmp_path / "certs").iterdir()}

    modules, answer = serve_once(tmp_path, "--member")

    assert answer["allowed"] is True and decoded_patch(answer)
    assert "certs.store" in modules and "certs.der" in modules  # the lines were read
    assert package_modules(modules, "cryptography") == [] and "certs.authority" not in modules
    # PyYAML reads only a config file (this run has none), decimal only prints a float when a template is evaluated.
    assert not {"yaml", "decimal"} & set(modules)
    assert {path.name: path.read_bytes() for path in (tmp_path / "certs").iterdir()} == before


def test_member_mode_issuing_its_own_certificate_imports_cryptography(tmp_path: Path) -> None:
    # The same command on an empty cert dir: the relay makes its own CA, which needs cryptography.
    modules, answer = serve_once(tmp_path, "--member")
    assert answer["allowed"] is True
    assert "cryptography.x509" in package_modules(modules, "cryptography") and "certs.managed" in modules


def test_control_plane_mode_loads_the_kubernetes_client(tmp_path: Path) -> None:
    # The same command without --member: the Work mutation and the caBundle sync look for cluster access.
    modules, answer = serve_once(tmp_path, "--no-controllers")
    assert answer["allowed"] is True and decoded_patch(answer)
    assert "kubernetes" in kubernetes_modules(modules)


@pytest.mark.parametrize(
    "overrides, problem",
    [
        ({"server.member": True}, "needs savepoint.checkpointRoot"),
        ({"server.member": True, "savepoint.checkpointRoot": "/data", "controllers.mode": "on"}, "no reconcile loop"),
        (
            {"server.member": True, "savepoint.checkpointRoot": "/data", "savepoint.workLabels": True},
            "no Work mutation",
        ),
    ],
)
def test_member_mode_refuses_what_it_does_not_run(overrides: dict, problem: str) -> None:
    with pytest.raises(SettingsError, match=problem):
        check_settings(apply(Settings(), overrides))


def test_a_fence_watcher_without_its_cluster_access_stops_start_up_in_one_line(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if key not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST")}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "relay.cli",
            "serve",
            "--member",
            "--fence-cluster",
            "member1",
            "--fence-kubeconfig",
            str(tmp_path / "missing.kubeconfig"),
            "--checkpoint-root",
            str(tmp_path),
            "--port",
            "0",
            "--cert-dir",
            str(tmp_path / "certs"),
            "--log-format",
            "json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert result.returncode == 2
    assert (
        result.stderr.splitlines()[-1]
        == f"failover-relay: fence.memberCluster: no kubeconfig at {tmp_path}/missing.kubeconfig"
    )
