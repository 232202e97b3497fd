"""`failover-relay readiness` and `drill` on bad input: one line, exit 2, no traceback, nothing written (the judgement:
tests/failover/readiness/; against real Karmada: tests/karmada/test_readiness.py and, for the drill,
tests/karmada/test_planned_move.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from relay.cli import main
from tests.processes import free_port
from tests.relay.test_status_inputs import UNREACHABLE

CASES = ["missing", "garbage", "unreachable", "bad-root", "bad-metrics-url"]


@pytest.mark.parametrize(
    ("command", "case"),
    [(command, case) for command in ("readiness", "drill") for case in CASES]
    + [("readiness", "negative-threshold"), ("drill", "bad-timeout")],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, case: str
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    argv = [command, *(["default/job"] if command == "drill" else []), "--kubeconfig", str(kubeconfig)]
    if case == "garbage":
        kubeconfig.write_text("clusters: [[[")
    elif case != "missing":
        kubeconfig.write_text(UNREACHABLE % free_port())
    argv += {
        "bad-root": ["--checkpoint-root", "gopher://nowhere"],
        "bad-metrics-url": ["--controller-manager-metrics", "file:///etc/passwd"],
        "negative-threshold": ["--cluster-failure-threshold", "-1"],
        "bad-timeout": ["--timeout", "0"],
    }.get(case, [])
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("failover-relay: "), err
    assert "Traceback" not in err
    if case == "bad-metrics-url":
        assert "--controller-manager-metrics" in err
