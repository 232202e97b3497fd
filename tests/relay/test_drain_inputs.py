"""`failover-relay drain` and `undrain` on bad input: one line, exit 2, no traceback, nothing written (the moves
themselves: tests/failover/moves/test_cluster_drain.py; against real Karmada with a real Flink job:
tests/karmada/test_planned_move.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from relay.cli import main
from tests.processes import free_port
from tests.relay.test_status_inputs import UNREACHABLE

CASES = ["missing", "garbage", "unreachable", "bad-name", "hostile-name", "bad-root"]


@pytest.mark.parametrize(
    ("command", "case"),
    [(command, case) for command in ("drain", "undrain") for case in CASES] + [("drain", "bad-timeout")],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, case: str
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    cluster = {"bad-name": "Member_1", "hostile-name": "../../member1"}.get(case, "member1")
    argv = [command, cluster, "--kubeconfig", str(kubeconfig)]
    if case == "garbage":
        kubeconfig.write_text("clusters: [[[")
    elif case != "missing":
        kubeconfig.write_text(UNREACHABLE % free_port())
    if case == "bad-timeout":  # undrain does not wait
        argv += ["--timeout", "0"]
    if case == "bad-root":
        argv += ["--checkpoint-root", "gopher://nowhere"]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("failover-relay: "), err
    assert "Traceback" not in err
