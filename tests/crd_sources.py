"""Where the tests' CRDs come from: Karmada's own source tree and the Flink operator's chart, never hand-written copies.

- Karmada's CRDs are ``charts/karmada/_crds`` of the Karmada source that ``hack/build-karmada.sh`` unpacks into the
  cache (``$KARMADA_SRC`` when set, else the tarball in ``../shared/karmada/``, else a clone). The script is the one
  place that knows the cache layout; this module only runs it and reads the directory it prints.
- The FlinkDeployment CRD is the Flink Kubernetes operator's own (``helm/flink-kubernetes-operator/crds/``), shipped
  beside the project in ``../shared/flink-operator/`` or wherever ``$FLINK_OPERATOR_CRDS`` points.
- The prometheus-operator's PrometheusRule and ServiceMonitor CRDs (for manifests/monitoring/) are committed in
  ``tests/crds/prometheus-operator/``, copied unchanged from the prometheus-operator repository at the tag its
  kustomization names.

``karmada_crds(tree, target, conversion=...)`` writes a kustomization of Karmada's CRDs for ``kubectl apply -k``: with a
conversion webhook (the real control plane, where karmada-webhook serves ``/convert``) or without (a bare
kube-apiserver, see ``karmada_crds``); ``envtest_crds`` is the whole set for a bare kube-apiserver. Nothing here
imports pytest.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parent.parent
KARMADA_BUILD_SCRIPT = REPO_ROOT / "hack" / "build-karmada.sh"
KARMADA_CRDS = Path("charts") / "karmada" / "_crds"
# Karmada serves Cluster from karmada-aggregated-apiserver, not a CRD; a bare kube-apiserver gets this stand-in.
CLUSTER_STAND_IN_CRD = REPO_ROOT / "tests" / "e2e" / "clusters.cluster.karmada.io.yaml"
FLINK_DEPLOYMENT_CRD_FILE = "flinkdeployments.flink.apache.org-v1.yml"
PROMETHEUS_OPERATOR_CRDS = REPO_ROOT / "tests" / "crds" / "prometheus-operator"
# hack/build-karmada.sh's exit codes for "nothing to build from" and "nothing to build with".
EXIT_NO_SOURCE, EXIT_NO_GO = 3, 4


class KarmadaUnavailable(RuntimeError):
    """No Karmada source, or no Go to build the binaries: a reason to skip locally (never on CI)."""


class KarmadaBuildFailed(RuntimeError):
    """hack/build-karmada.sh failed for another reason: always a failure."""


@dataclass(frozen=True)
class KarmadaTree:
    """One cache directory of hack/build-karmada.sh: ``src/`` (the source tree) and, after a full build, ``bin/``."""

    root: Path

    @property
    def source(self) -> Path:
        return self.root / "src"

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    @property
    def version(self) -> str:
        """The cache key: the commit the binaries were built from (``v1.19.0-rc.0-18-gf8fdd02df``)."""
        return self.root.name


def karmada_tree(*, source_only: bool, log: Path | None = None) -> KarmadaTree:
    """Run hack/build-karmada.sh (``--source-only`` for the CRDs alone) and return its cache directory.

    Warm, this costs a few milliseconds; cold, a full build takes about 7 minutes on two cores (the script holds a
    lock, so a parallel caller waits for the first). The script's progress goes to ``log`` when given.
    """
    command = ["bash", str(KARMADA_BUILD_SCRIPT), *(["--source-only"] if source_only else [])]
    with log.open("ab") if log else open(os.devnull, "wb") as progress:
        result = subprocess.run(command, stdout=subprocess.PIPE, stderr=progress, text=True)
    if result.returncode in (EXIT_NO_SOURCE, EXIT_NO_GO):
        if result.returncode == EXIT_NO_GO:
            why = "the Karmada binaries are not built and there is no Go to build them"
        elif os.environ.get("KARMADA_SRC"):
            why = f"KARMADA_SRC={os.environ['KARMADA_SRC']} is not a Karmada source tree"
        else:
            why = "no Karmada source (set KARMADA_SRC to a checkout)"
        raise KarmadaUnavailable(f"{why}; see `bash hack/build-karmada.sh --help`" + (f", log: {log}" if log else ""))
    if result.returncode != 0:
        raise KarmadaBuildFailed(
            f"{KARMADA_BUILD_SCRIPT.name} failed with exit code {result.returncode}" + (f"; log: {log}" if log else "")
        )
    return KarmadaTree(Path(result.stdout.strip().splitlines()[-1]))


def flink_deployment_crd() -> Path:
    """The Flink operator's FlinkDeployment CRD: ``$FLINK_OPERATOR_CRDS`` or ``../shared/flink-operator/``."""
    directory = Path(os.environ.get("FLINK_OPERATOR_CRDS") or REPO_ROOT.parent / "shared" / "flink-operator")
    path = directory / FLINK_DEPLOYMENT_CRD_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"no {FLINK_DEPLOYMENT_CRD_FILE} in {directory}: set FLINK_OPERATOR_CRDS to the Flink "
            f"operator's helm/flink-kubernetes-operator/crds directory"
        )
    return path


@dataclass(frozen=True)
class ConversionWebhook:
    """Where karmada-webhook serves ``/convert`` and the CA its certificate chains to."""

    url: str
    ca_pem: bytes


def karmada_crds(tree: KarmadaTree, target: Path, *, conversion: ConversionWebhook | None) -> Path:
    """Write Karmada's CRD kustomization into ``target`` (created) and return it, ready for ``kubectl apply -k``.

    With ``conversion``, the kustomization's two patches point (Cluster)ResourceBinding conversion at that URL, as
    Karmada's ``hack/deploy-karmada.sh`` does with the karmada-webhook Service. Without, the patches are left out: on a
    bare kube-apiserver no karmada-webhook runs, and a CRD whose conversion webhook is unreachable fails every read in a
    version other than the stored one. Only v1alpha2 (Karmada's storage version, the one failover-relay reads and
    writes) is then usable, which is all such a control plane needs.
    """
    source = tree.source / KARMADA_CRDS
    if not (source / "kustomization.yaml").is_file():
        raise FileNotFoundError(f"{source} has no kustomization.yaml: not a Karmada source tree")
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target)
    kustomization_path = target / "kustomization.yaml"
    kustomization = yaml.safe_load(kustomization_path.read_text())
    if conversion is None:
        kustomization.pop("patches", None)
    else:
        ca_bundle = base64.b64encode(conversion.ca_pem).decode()
        for patch in kustomization.get("patches", []):
            path = target / patch["path"]
            document = yaml.safe_load(path.read_text())
            client_config = document["spec"]["conversion"]["webhook"]["clientConfig"]
            client_config.clear()
            client_config.update({"url": conversion.url, "caBundle": ca_bundle})
            path.write_text(yaml.safe_dump(document, sort_keys=False))
    kustomization_path.write_text(yaml.safe_dump(kustomization, sort_keys=False))
    return target


def envtest_crds(tree: KarmadaTree, target: Path) -> list[Path]:
    """What a bare kube-apiserver (the envtest tier, the reconcile benchmark) gets, for ``ControlPlane.apply_crds``:
    Karmada's CRDs without conversion webhook, the Flink operator's FlinkDeployment, the Cluster stand-in and the
    prometheus-operator's CRDs of manifests/monitoring/."""
    return [
        karmada_crds(tree, target, conversion=None),
        flink_deployment_crd(),
        CLUSTER_STAND_IN_CRD,
        PROMETHEUS_OPERATOR_CRDS,
    ]


# cert-manager's CRDs (the chart's certificates.mode certManager renders Issuers and Certificates), from
# cert-manager's own Go module: `go mod download` fetches it through the module proxy into Go's module cache, and
# its deploy/crds are the controller-gen output cert-manager's chart is built from.
CERT_MANAGER_MODULE = "github.com/cert-manager/cert-manager"
CERT_MANAGER_VERSION = "v1.21.2"
CERT_MANAGER_CRDS = (
    "cert-manager.io_issuers.yaml",
    "cert-manager.io_clusterissuers.yaml",
    "cert-manager.io_certificates.yaml",
    "cert-manager.io_certificaterequests.yaml",
)


class CertManagerUnavailable(RuntimeError):
    """No Go to download cert-manager's module with: a reason to skip locally (never on CI)."""


def cert_manager_crds() -> list[Path]:
    """The CRD files of cert-manager ``CERT_MANAGER_VERSION`` (cert-manager.io group), from its Go module."""
    if shutil.which("go") is None:
        raise CertManagerUnavailable("go is not on PATH; it downloads cert-manager's module for its CRDs")
    module = f"{CERT_MANAGER_MODULE}@{CERT_MANAGER_VERSION}"
    result = subprocess.run(
        ["go", "mod", "download", "-json", module],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "GOFLAGS": "-mod=mod", "GOWORK": "off"},
        cwd=REPO_ROOT,
    )
    if result.returncode != 0:
        raise RuntimeError(f"go mod download {module} failed: {result.stdout.strip()} {result.stderr.strip()}")
    directory = Path(json.loads(result.stdout)["Dir"]) / "deploy" / "crds"
    files = [directory / name for name in CERT_MANAGER_CRDS]
    missing = [str(path) for path in files if not path.is_file()]
    if missing:
        raise FileNotFoundError(f"{module} has no {', '.join(missing)}")
    return files
