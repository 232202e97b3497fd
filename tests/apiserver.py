"""etcd and kube-apiserver as the test tiers run them, and what a test does with an apiserver: a kubeconfig, kubectl,
CRDs applied until Established.

The envtest tier (``tests/envtest.py``) runs one of each; the Karmada tier (``tests/karmada_env/``) one etcd for
karmada-apiserver and a kube-apiserver per member cluster, each a cluster as the envtest tier runs it. The flags
mirror controller-runtime's ``pkg/internal/testing/controlplane/apiserver.go`` and Karmada's
``artifacts/deploy/karmada-apiserver.yaml``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from tests.kube_api import Api, resource_path
from tests.processes import LOOPBACK, loopback_env

SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
# The default `kubectl wait` and API calls of a single test should never take longer than this.
KUBECTL_TIMEOUT_SECONDS = 120.0


class KubectlError(subprocess.CalledProcessError):
    """kubectl exited non-zero; unlike CalledProcessError, the message includes what kubectl wrote to stderr."""

    def __str__(self) -> str:
        return f"{super().__str__()}\nstderr:\n{self.stderr}"


def etcd_command(
    binary: Path, *, name: str, data_dir: Path, client_url: str, peer_url: str, extra: Sequence[str] = ()
) -> list[str]:
    """A single-member etcd on loopback URLs. The data dir is made afresh for every start: an etcd that failed to
    bind (its port taken meanwhile) may have written its member id there."""
    shutil.rmtree(data_dir, ignore_errors=True)
    data_dir.mkdir(mode=0o700)
    return [
        str(binary),
        f"--name={name}",
        f"--data-dir={data_dir}",
        f"--listen-client-urls={client_url}",
        f"--advertise-client-urls={client_url}",
        f"--listen-peer-urls={peer_url}",
        f"--initial-advertise-peer-urls={peer_url}",
        f"--initial-cluster={name}={peer_url}",
        "--logger=zap",
        "--log-outputs=stderr",
        *extra,
    ]


def kube_apiserver_command(
    binary: Path,
    *,
    port: int,
    etcd_url: str,
    service_account_key: Path,
    service_account_signing_key: Path,
    extra: Sequence[str] = (),
) -> list[str]:
    """A kube-apiserver on loopback, what every apiserver of the tests has in common; ``extra`` says how it serves
    (its certificates) and whom it lets in."""
    return [
        str(binary),
        f"--advertise-address={LOOPBACK}",
        f"--bind-address={LOOPBACK}",
        f"--secure-port={port}",
        f"--etcd-servers={etcd_url}",
        f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
        f"--service-account-key-file={service_account_key}",
        f"--service-account-signing-key-file={service_account_signing_key}",
        "--allow-privileged=true",
        "--profiling=false",
        *extra,
    ]


def token_cluster_flags(token_file: Path) -> list[str]:
    """A cluster as the envtest tier runs it (and the Karmada tier each member): users from a static token file,
    RBAC, and no ServiceAccount admission plugin, since no controller manager creates the tokens it waits for."""
    return [
        f"--token-auth-file={token_file}",
        "--authorization-mode=RBAC",
        f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
        "--disable-admission-plugins=ServiceAccount",
    ]


def write_token_file(path: Path, token: str, user: str, group: str) -> None:
    """kube-apiserver's ``--token-auth-file``, one user. Columns: token, user name, user uid, "group1,group2"."""
    path.write_text(f'{token},{user},{user},"{group}"\n')


def write_kubeconfig(
    path: Path, server: str, ca_file: Path, user: Mapping[str, str], *, cluster: str = "c", user_name: str = "u"
) -> None:
    """A kubeconfig of one cluster, one user and the context joining them; ``user`` holds the credentials (a
    ``token``, or ``client-certificate`` and ``client-key``). JSON, which is valid YAML and every loader reads."""
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": cluster, "cluster": {"server": server, "certificate-authority": str(ca_file)}}],
                "users": [{"name": user_name, "user": dict(user)}],
                "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": user_name}}],
                "current-context": cluster,
            },
            indent=2,
        )
    )
    path.chmod(0o600)


def run_kubectl(
    kubeconfig: Path,
    cache_dir: Path,
    *args: str,
    input: str | None = None,
    check: bool = True,
    timeout: float = KUBECTL_TIMEOUT_SECONDS,
) -> subprocess.CompletedProcess[str]:
    """Run kubectl with ``kubeconfig``; raise KubectlError on a non-zero exit unless ``check`` is off. The discovery
    cache is keyed by host:port and every session has new ports: it stays in ``cache_dir``, the session's, instead of
    piling up under ~/.kube/cache."""
    command = ["kubectl", f"--kubeconfig={kubeconfig}", f"--cache-dir={cache_dir}", *args]
    result = subprocess.run(command, input=input, capture_output=True, text=True, timeout=timeout, env=loopback_env())
    if check and result.returncode != 0:
        raise KubectlError(result.returncode, command, result.stdout, result.stderr)
    return result


def apply_until_established(
    kubectl: Callable[..., subprocess.CompletedProcess[str]],
    api: Api,
    source: Sequence[str],
    *,
    field_manager: str,
    timeout: float,
    wait: Callable[[Callable[[], bool], float, str], object],
    where: str = "",
) -> list[str]:
    """Apply CRDs (``source``: ``-k DIR`` or ``-f FILE``) with ``kubectl`` and wait with ``wait`` (a ``wait_until``)
    until each is Established; return their names, e.g. ``propagationpolicies.policy.karmada.io``.

    Server-side apply, because client-side apply stores the whole object in the last-applied annotation, which large
    CRDs (Karmada's PropagationPolicy schema) push past the 256 KiB annotation limit.
    """
    applied = kubectl(
        "apply", "--server-side", "--force-conflicts", f"--field-manager={field_manager}", "-o", "name", *source
    )
    names = [
        line.split("/", 1)[1]
        for line in applied.stdout.split()
        if line.startswith("customresourcedefinition.apiextensions.k8s.io/")
    ]

    def established() -> bool:
        # Polled instead of `kubectl wait --for=condition=Established`, which fails at once on a CRD whose status
        # has no conditions yet (a large CRD, a busy apiserver).
        for name in names:
            crd = api.get(resource_path("apiextensions.k8s.io/v1", "customresourcedefinitions", name)) or {}
            conditions = (crd.get("status") or {}).get("conditions") or []
            if not any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
                return False
        return True

    wait(established, timeout, f"CRDs Established{where}: {names}")
    return names
