"""`failover-relay status` on bad input: one line, exit 2, no traceback (the view itself: tests/failover/
test_status_view.py; against real Karmada during a failover: tests/karmada/test_status.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from relay.cli import main
from tests.processes import free_port

UNREACHABLE = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:%d", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
"""


@pytest.mark.parametrize(
    "case", ["missing", "garbage", "a-list", "unreachable", "bad-root", "bad-interval", "cluster-and-workload"]
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    argv = ["status", "--kubeconfig", str(kubeconfig)]
    if case == "garbage":
        kubeconfig.write_text("clusters: [[[")
    elif case == "a-list":
        kubeconfig.write_text("- just\n- a list\n")
    elif case != "missing":
        kubeconfig.write_text(UNREACHABLE % free_port())
    if case == "bad-root":
        argv += ["--checkpoint-root", "gopher://nowhere"]
    if case == "bad-interval":
        argv += ["--watch", "--interval", "0"]
    if case == "cluster-and-workload":
        argv += ["--cluster", "member1", "default/job"]
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and error.startswith("failover-relay: ") and "Traceback" not in error
