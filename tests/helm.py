"""The helm client the chart tests run: built once from its Go module by ``hack/build-helm.sh`` (cached), then
``helm template`` of ``chart/failover-relay`` parsed into objects. Nothing here imports pytest."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parent.parent
HELM_BUILD_SCRIPT = REPO_ROOT / "hack" / "build-helm.sh"
CHART = REPO_ROOT / "chart" / "failover-relay"
RELEASE = "failover-relay"
# hack/build-helm.sh's exit code for "no Go to build helm with".
EXIT_NO_GO = 4
# The labels Helm's conventions add to every object and the kustomize manifests do not carry.
HELM_LABELS = ("app.kubernetes.io/instance", "app.kubernetes.io/managed-by", "helm.sh/chart")


class HelmUnavailable(RuntimeError):
    """No helm and no Go to build it: a reason to skip locally (never on CI)."""


class HelmError(RuntimeError):
    """helm exited non-zero; carries its stderr."""


def helm_binary(log: Path | None = None) -> Path:
    """The helm binary of hack/build-helm.sh (a few milliseconds warm, about two minutes cold on two cores)."""
    with log.open("ab") if log else open(os.devnull, "wb") as progress:
        result = subprocess.run(["bash", str(HELM_BUILD_SCRIPT)], stdout=subprocess.PIPE, stderr=progress, text=True)
    if result.returncode == EXIT_NO_GO:
        raise HelmUnavailable("helm is not built and there is no Go to build it (hack/build-helm.sh)")
    if result.returncode != 0:
        raise HelmError(
            f"hack/build-helm.sh failed with exit code {result.returncode}" + (f"; log: {log}" if log else "")
        )
    return Path(result.stdout.strip().splitlines()[-1]) / "helm"


def helm(binary: Path, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run helm; raise HelmError on a non-zero exit unless ``check`` is off."""
    result = subprocess.run([str(binary), *args], input=input, capture_output=True, text=True, timeout=120)
    if check and result.returncode != 0:
        raise HelmError(f"helm {' '.join(args[:1])} exited {result.returncode}: {result.stderr.strip()}")
    return result


def template_text(binary: Path, namespace: str = RELEASE, values: Mapping[str, Any] | None = None) -> str:
    """``helm template`` of the chart with ``values`` (a values file's content) as YAML text."""
    values_args = ["--values", "-"] if values else []
    return helm(
        binary,
        "template",
        RELEASE,
        str(CHART),
        "--namespace",
        namespace,
        *values_args,
        input=yaml.safe_dump(dict(values)) if values else None,
    ).stdout


def template(binary: Path, namespace: str = RELEASE, values: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The chart's objects as ``helm template`` renders them."""
    return [document for document in yaml.safe_load_all(template_text(binary, namespace, values)) if document]


def without_helm_labels(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` without the labels Helm's conventions add (on the object and on a pod template)."""
    copy: dict[str, Any] = yaml.safe_load(yaml.safe_dump(dict(obj)))
    holders = [copy.get("metadata") or {}, ((copy.get("spec") or {}).get("template") or {}).get("metadata") or {}]
    for metadata in holders:
        labels = metadata.get("labels")
        if labels is not None:
            for key in HELM_LABELS:
                labels.pop(key, None)
    return copy
