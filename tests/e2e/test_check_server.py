"""`check` against a real kube-apiserver serving Karmada v1.19's own CRDs (no Karmada webhook, no relay registered).

- `check --server` must agree with `kubectl apply --dry-run=server` on every case: both ask the same server.
- The offline `check` (bundled v1.19 schemas), told that no relay `/mutate` runs, must agree too on the cases the
  schema decides: the apiserver here is Karmada's apiserver minus Karmada's webhook.
- `legacy-purge-modes` lists what a v1.15-v1.18 CRD let through, and the loop's spelling detection reads the
  installed CRD's enum.

The real-Karmada tier (tests/karmada/) has Karmada's webhook too; this tier pins the schema half of the contract.
"""

from __future__ import annotations

import copy
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.access.kube import load_api_client
from failover.reconcile.purge_spelling import crd_purge_mode_enum
from relay.commands.check.manifest_check import check_object
from relay.commands.check.schemas import bundled
from relay.commands.legacy_purge_modes import legacy_lines
from relay.start_controllers import installed_spelling
from tests.envtest import REPO_ROOT, ControlPlane
from tests.policies import flink_policy
from tests.relay.karmada_source import karmada_crd_dir

pytestmark = pytest.mark.envtest

CRD_FILES = (
    "policy/policy.karmada.io_propagationpolicies.yaml",
    "policy/policy.karmada.io_clusterpropagationpolicies.yaml",
    "apps/apps.karmada.io_workloadrebalancers.yaml",
    "work/work.karmada.io_resourcebindings.yaml",
)
APP = "spec.failover.application"


def policy_yaml(**application: Any) -> str:
    obj = flink_policy(**application)
    return yaml.safe_dump(obj, sort_keys=False)


def edited(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new)


BASE = policy_yaml()
# (id, manifest as a user writes it). The verdicts are the server's: the test asserts agreement, not an outcome.
CASES: list[tuple[str, str]] = [
    ("documented-policy", BASE),
    ("legacy-graciously", policy_yaml(purgeMode="Graciously", statePreservation=None)),
    ("legacy-immediately", policy_yaml(purgeMode="Immediately")),
    ("wrong-case-field", edited(BASE, "purgeMode: Directly", "purgemode: Directly")),
    ("unknown-metadata-field", edited(BASE, "  namespace: default\n", "  namespace: default\n  labelz: {}\n")),
    ("policy-v1beta1", edited(BASE, "policy.karmada.io/v1alpha1", "policy.karmada.io/v1beta1")),
    (
        "selectors-missing",
        yaml.safe_dump(
            {**flink_policy(), "spec": {k: v for k, v in flink_policy()["spec"].items() if k != "resourceSelectors"}}
        ),
    ),
    ("wrong-type", edited(BASE, "tolerationSeconds: 60", "tolerationSeconds: '60'")),
    ("toleration-1e3", edited(BASE, "tolerationSeconds: 60", "tolerationSeconds: 1e3")),
    ("int32-overflow", edited(BASE, "tolerationSeconds: 60", "tolerationSeconds: 4294967296")),
    ("bad-enum", edited(BASE, "  propagateDeps: true\n", "  propagateDeps: true\n  conflictResolution: Override\n")),
    ("decision-conditions-missing", edited(BASE, "      decisionConditions:\n        tolerationSeconds: 60\n", "")),
    (
        "rebalancer",
        "apiVersion: apps.karmada.io/v1alpha1\nkind: WorkloadRebalancer\nmetadata: {name: demo}\n"
        "spec:\n  workloads: [{apiVersion: apps/v1, kind: Deployment, name: web, namespace: shop}]\n",
    ),
    (
        "rebalancer-under-policy-group",
        "apiVersion: policy.karmada.io/v1alpha1\nkind: WorkloadRebalancer\n"
        "metadata: {name: demo}\nspec:\n  workloads: [{apiVersion: apps/v1, "
        "kind: Deployment, name: web}]\n",
    ),
    (
        "rebalancer-no-workloads",
        "apiVersion: apps.karmada.io/v1alpha1\nkind: WorkloadRebalancer\n"
        "metadata: {name: demo}\nspec: {workloads: []}\n",
    ),
]


@pytest.fixture(scope="module")
def plane(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """A second control plane with Karmada v1.19's CRDs; the ResourceBinding CRD with v1.18's enum (legacy names
    accepted), so the listing has something to find."""
    bases = karmada_crd_dir()
    work = tmp_path_factory.mktemp("crds")
    for name in CRD_FILES:
        crd = yaml.safe_load((bases / name).read_text())
        if "resourcebindings" in name:
            _accept_legacy_names(crd)
        (work / Path(name).name).write_text(yaml.safe_dump(crd, sort_keys=False))
    with ControlPlane(control_plane.binaries) as second:
        second.kubectl("apply", "--server-side", "--field-manager=envtest", "-f", str(work))
        second.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all", timeout=70)
        yield second


def _accept_legacy_names(schema: Any) -> None:
    """Every purgeMode enum extended with Immediately and Graciously, as Karmada v1.15-v1.18 declared them."""
    if isinstance(schema, dict):
        enum = (schema.get("purgeMode") or {}).get("enum") if isinstance(schema.get("purgeMode"), dict) else None
        if isinstance(enum, list) and "Directly" in enum:
            enum.extend(["Immediately", "Graciously"])
        for value in schema.values():
            _accept_legacy_names(value)
    elif isinstance(schema, list):
        for value in schema:
            _accept_legacy_names(value)


def kubectl_accepts(plane: ControlPlane, manifest: Path) -> tuple[bool, str]:
    result = plane.kubectl("apply", "--dry-run=server", "-f", str(manifest), check=False)
    return result.returncode == 0, result.stdout + result.stderr


def relay_check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "relay.cli", "check", *args], capture_output=True, text=True, timeout=120, cwd=REPO_ROOT
    )


@pytest.mark.parametrize(("manifest",), [pytest.param(text, id=case) for case, text in CASES])
def test_check_server_agrees_with_kubectl_dry_run(plane: ControlPlane, tmp_path: Path, manifest: str) -> None:
    path = tmp_path / "object.yaml"
    path.write_text(manifest)
    accepted, said = kubectl_accepts(plane, path)

    result = relay_check("--server", "--kubeconfig", str(plane.kubeconfig_path), str(path))

    assert (result.returncode == 0) == accepted, f"kubectl: {said}\ncheck: {result.stdout}{result.stderr}"
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(("manifest",), [pytest.param(text, id=case) for case, text in CASES])
def test_offline_check_agrees_with_the_apiserver(plane: ControlPlane, tmp_path: Path, manifest: str) -> None:
    path = tmp_path / "object.yaml"
    path.write_text(manifest)
    accepted, said = kubectl_accepts(plane, path)
    from relay.commands.documents import documents

    (obj,) = list(documents(path))
    result = check_object(copy.deepcopy(obj), bundled(), relay_mutation=False)

    assert (result.status in ("allowed", "warning")) == accepted, f"kubectl: {said}\ncheck: {result.line}"


def test_the_listing_finds_legacy_names_a_v1_18_crd_let_through(plane: ControlPlane) -> None:
    binding = {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {"name": "legacy", "namespace": "default"},
        "spec": {
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "failover": {"application": {"decisionConditions": {"tolerationSeconds": 60}, "purgeMode": "Immediately"}},
            "gracefulEvictionTasks": [
                {"fromCluster": "member1", "reason": "ApplicationFailure", "producer": "x", "purgeMode": "Graciously"}
            ],
        },
    }
    plane.kubectl("apply", "-f", "-", input=yaml.safe_dump(binding))

    lines = list(legacy_lines(load_api_client(plane.kubeconfig_path)))

    assert lines == [
        "ResourceBinding default/legacy: spec.failover.application.purgeMode: Immediately -> write Directly before "
        "upgrading to Karmada v1.19",
        "ResourceBinding default/legacy: spec.gracefulEvictionTasks[0].purgeMode: Graciously -> write Gracefully "
        "before upgrading to Karmada v1.19",
    ]
    result = subprocess.run(
        [sys.executable, "-m", "relay.cli", "legacy-purge-modes", "--kubeconfig", str(plane.kubeconfig_path)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
    )
    assert result.returncode == 1 and result.stdout.splitlines() == lines


def test_the_loop_spelling_follows_the_installed_crd(plane: ControlPlane) -> None:
    api = load_api_client(plane.kubeconfig_path)
    # v1.18's enum (both spellings): the setting decides.
    assert installed_spelling(api, "legacy") == "legacy"
    # Karmada v1.19's own CRD: never legacy, whatever the setting says.
    plane.kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=envtest",
        "-f",
        str(karmada_crd_dir() / "work" / "work.karmada.io_resourcebindings.yaml"),
    )
    crd = yaml.safe_load(plane.kubectl("get", "crd", "resourcebindings.work.karmada.io", "-o", "yaml").stdout)
    assert "Immediately" not in (crd_purge_mode_enum(crd) or ())
    assert installed_spelling(api, "legacy") == "new"
