"""`helm install` of the chart as docs/operations.md ("Helm") runs it, for real, against a kube-apiserver of its own
(the session's holds webhook configurations and RBAC of the same cluster-wide names): the release namespace made by
`--create-namespace`, labelled by the documented `kubectl label`, and the release notes of each mode."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.envtest import ControlPlane
from tests.helm import CHART, REPO_ROOT
from tests.processes import loopback_env

pytestmark = pytest.mark.envtest

GUIDE = REPO_ROOT / "docs" / "operations.md"
# The names of the guide's commands.
NAMESPACE = "failover-relay"
RELEASE = "failover-relay"


def _helm_section_commands() -> str:
    """The shell block of docs/operations.md's "Helm" section, as written there."""
    guide = GUIDE.read_text()
    section = guide[guide.index("\n### Helm\n") + 1 :]
    section = section[: section.index("\n### ")]
    [block] = re.findall(r"```sh\n(.*?)```", section, re.DOTALL)
    return block


def _chart_namespace_labels() -> dict[str, str]:
    return yaml.safe_load((CHART / "values.yaml").read_text())["namespace"]["labels"]


class Administrator:
    """Runs commands as the guide's reader would: helm and kubectl on PATH, KUBECONFIG set, in the repository."""

    def __init__(self, plane: ControlPlane, helm_bin: Path) -> None:
        self.plane = plane
        self.env = loopback_env() | {
            "PATH": f"{helm_bin.parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "KUBECONFIG": str(plane.kubeconfig_path),
            "HELM_CACHE_HOME": str(plane.root / "helm" / "cache"),
            "HELM_CONFIG_HOME": str(plane.root / "helm" / "config"),
            "HELM_DATA_HOME": str(plane.root / "helm" / "data"),
        }

    def run(self, *command: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(command), input=input, cwd=REPO_ROOT, env=self.env, capture_output=True, text=True, timeout=180
        )

    def notes(self, values: dict[str, Any]) -> str:
        """The release notes an upgrade of the installed release to ``values`` prints (server-side dry run)."""
        result = self.run(
            "helm", "upgrade", RELEASE, str(CHART), "-n", NAMESPACE, "--dry-run=server", "--values", "-",
            input=yaml.safe_dump(values),
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        return result.stdout[result.stdout.index("NOTES:\n") :]


@pytest.fixture(scope="module")
def administrator(envtest_binaries: Path, helm_bin: Path) -> Iterator[Administrator]:
    with ControlPlane(envtest_binaries) as plane:
        yield Administrator(plane, helm_bin)


@pytest.fixture(scope="module")
def installed(administrator: Administrator) -> subprocess.CompletedProcess[str]:
    """The guide's commands, run as written."""
    return administrator.run("bash", "-euo", "pipefail", "-c", _helm_section_commands())


def test_the_documented_install_creates_and_labels_the_namespace(
    administrator: Administrator, installed: subprocess.CompletedProcess[str]
) -> None:
    assert installed.returncode == 0, installed.stderr
    status = json.loads(administrator.run("helm", "status", RELEASE, "-n", NAMESPACE, "-o", "json").stdout)
    assert status["info"]["status"] == "deployed"
    namespace = json.loads(administrator.plane.kubectl("get", "namespace", NAMESPACE, "-o", "json").stdout)
    # The labels manifests/deploy/namespace.yaml gives it, which are the chart's namespace.labels.
    [expected] = [d for d in yaml.safe_load_all((REPO_ROOT / "manifests/deploy/namespace.yaml").read_text()) if d]
    wanted = {k: v for k, v in expected["metadata"]["labels"].items() if k != "app.kubernetes.io/name"}
    assert wanted == _chart_namespace_labels()
    assert namespace["metadata"]["labels"].items() >= wanted.items()
    # The Namespace is not the release's: uninstalling leaves it.
    objects = administrator.run("helm", "get", "manifest", RELEASE, "-n", NAMESPACE).stdout
    assert "Namespace" not in {o["kind"] for o in yaml.safe_load_all(objects) if o}


def _label_command(text: str) -> list[str]:
    """The words of the one `kubectl label namespace` command in ``text``, its labels sorted."""
    [command] = re.findall(r"kubectl label namespace (?:[^\n\\]|\\\n)*", text)
    words = command.replace("\\\n", " ").split()
    return words[:5] + sorted(words[5:])


def test_the_notes_print_the_label_command_until_the_namespace_has_the_labels(
    administrator: Administrator, installed: subprocess.CompletedProcess[str]
) -> None:
    assert installed.returncode == 0, installed.stderr
    labels = sorted(f"{k}={v}" for k, v in _chart_namespace_labels().items())
    expected = ["kubectl", "label", "namespace", NAMESPACE, "--overwrite", *labels]

    # Printed by the install, before the namespace existed; the guide's command is the same one.
    notes = installed.stdout[installed.stdout.index("NOTES:\n") :]
    assert _label_command(notes) == expected
    assert _label_command(_helm_section_commands()) == expected
    assert "kubectl label" not in administrator.notes({})


def test_the_notes_say_what_to_do_next_in_each_mode(
    administrator: Administrator, installed: subprocess.CompletedProcess[str]
) -> None:
    assert installed.returncode == 0, installed.stderr
    control_plane = administrator.notes({})
    member = administrator.notes(
        {"mode": "member", "savepoint": {"checkpointRoot": "s3://flink/checkpoints"}, "fence": {"watch": False}}
    )
    by_url = administrator.notes({"webhooks": {"create": False}, "karmadaKubeconfigSecret": "failover-relay-karmada"})

    for notes in (control_plane, member, by_url):
        assert f"kubectl -n {NAMESPACE} rollout status deployment/failover-relay" in notes
        assert "docs/operations.md" in notes
        assert "/var/run/failover-relay/certs/ca.crt" in notes
    # The controllers to turn off: the guide's flag, on the control plane only.
    assert "--controllers=*,-applicationFailover,-gracefulEviction,-workloadRebalancer" in control_plane
    assert "--controllers" not in member and "get lease" not in member
    assert "savepoint injection is off" in control_plane and "savepoint injection is off" not in member
    assert "watcher is off" in member and "watcher is off" not in control_plane
    # The default image names no registry; one with a registry is not warned about.
    assert "names no registry" in control_plane
    assert "names no registry" not in administrator.notes({"image": {"repository": "registry.example/failover-relay"}})
    assert "--set webhooks.url=https://failover-relay.failover-relay.svc:443" in by_url
    assert "webhooks.create=false" not in control_plane
