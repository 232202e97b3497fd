"""`status` and `legacy-purge-modes` pointed at a kube-apiserver that is not Karmada's (a member cluster, the host
cluster): they exit 2 with one line instead of listing nothing and reporting an all-clear."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.envtest import ControlPlane

pytestmark = pytest.mark.envtest


@pytest.fixture(scope="module")
def plain_apiserver(envtest_binaries: Path) -> Iterator[ControlPlane]:
    """A real kube-apiserver with no CRD at all: what a member's kubeconfig points at."""
    with ControlPlane(envtest_binaries) as plane:
        yield plane


@pytest.mark.parametrize("command", ["status", "legacy-purge-modes"])
def test_a_cluster_without_karmadas_apis_is_one_line_and_exit_2(plain_apiserver: ControlPlane, command: str) -> None:
    # A process of its own, as a user runs it: the CLI configures logging for the whole process, which must not
    # reach the reconcile loops other tests of this session run in theirs.
    run = subprocess.run(
        [sys.executable, "-m", "relay.cli", command, "--kubeconfig", str(plain_apiserver.kubeconfig_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr == (
        f"failover-relay: {plain_apiserver.server_url} does not serve Karmada's APIs "
        "(policy.karmada.io/v1alpha1 not found): point --kubeconfig at the karmada-apiserver\n"
    )
