"""Every CLI input gets a bound and a one-line error with exit 2: binary, latin-1, deeply nested and endless files
given to `inject` and `check`."""

from __future__ import annotations

from pathlib import Path

import pytest

from relay.cli import main

BAD_FILES = {
    "binary": b"\xff\xfe\x00\x01\x02binary",
    "latin-1": b"apiVersion: flink.apache.org/v1beta1\nkind: FlinkDeployment\nmetadata:\n  name: caf\xe9\n",
    "deep": b"a: " + b"[" * 50_000 + b"]" * 50_000 + b"\n",
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
@pytest.mark.parametrize("command", ["inject", "check"])
def test_a_bad_file_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, command: str
) -> None:
    path = tmp_path / f"{name}.yaml"
    path.write_bytes(BAD_FILES[name])
    argv = [command, str(path)] + (["--checkpoint-root", str(tmp_path)] if command == "inject" else [])
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and str(path) in error and "Traceback" not in error


@pytest.mark.parametrize("command", ["inject", "check"])
def test_an_endless_file_is_bounded(tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    argv = [command, "/dev/zero"] + (["--checkpoint-root", str(tmp_path)] if command == "inject" else [])
    assert main(argv) == 2
    assert "exceeds the limit" in capsys.readouterr().err
