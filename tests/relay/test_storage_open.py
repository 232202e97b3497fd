"""A checkpoint root whose filesystem cannot be opened (it connects when created, and the host does not resolve or
refuses) stops `inject`, `status` and `serve` with one line naming the root and the cause, exit 2.

Hosts are under .invalid (RFC 2606: it never resolves) or a closed loopback port: nothing here leaves the machine."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from relay.cli import main
from relay.settings import SettingsError, load_settings
from tests.processes import free_port

UNRESOLVABLE = "ftp://no-such-host.invalid/checkpoints"  # fsspec's ftp filesystem logs in when it is created
FLINK = """apiVersion: flink.apache.org/v1beta1
kind: FlinkDeployment
metadata: {name: basic-example, namespace: flink, labels: {application.karmada.io/failover-jobid: "%s"}}
spec: {image: "flink:1.17", job: {jarURI: "local:///x.jar", upgradeMode: savepoint}}
""" % ("0" * 32)


def refusal(root: str, key: str = "savepoint.checkpointRoot") -> re.Pattern[str]:
    return re.compile(rf"failover-relay: {re.escape(key)} {re.escape(root)}: cannot open: [^\n<>]+\n")


def assert_one_line(error: str, root: str, key: str = "savepoint.checkpointRoot") -> None:
    last = error.splitlines(keepends=True)[-1]
    assert refusal(root, key).fullmatch(last), error
    assert "Traceback" not in error and "cannot listen" not in error and " at 0x" not in error


@pytest.mark.parametrize("root", [UNRESOLVABLE, "ftp://127.0.0.1:{port}/checkpoints"])
def test_inject_names_the_root_it_cannot_open(tmp_path: Path, capsys: pytest.CaptureFixture[str], root: str) -> None:
    root = root.format(port=free_port())
    manifest = tmp_path / "flink.yaml"
    manifest.write_text(FLINK)
    assert main(["inject", "--checkpoint-root", root, str(manifest)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert refusal(root).fullmatch(captured.err), captured.err


def test_inject_names_the_allowed_root_it_cannot_open(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest, config = tmp_path / "flink.yaml", tmp_path / "relay.yaml"
    manifest.write_text(FLINK)
    config.write_text(f"savepoint:\n  checkpointRoot: {tmp_path}\n  allowedRoots: ['{UNRESOLVABLE}']\n")
    assert main(["inject", "--config", str(config), str(manifest)]) == 2
    assert refusal(UNRESOLVABLE, "savepoint.allowedRoots[0]").fullmatch(capsys.readouterr().err)


def test_status_names_the_root_it_cannot_open(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The storage is opened before the Karmada apiserver is asked, so no kubeconfig is needed to get here.
    argv = ["status", "--kubeconfig", str(tmp_path / "kubeconfig"), "--checkpoint-root", UNRESOLVABLE]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert refusal(UNRESOLVABLE).fullmatch(captured.err), captured.err


def test_serve_names_the_root_it_cannot_open_not_the_listener(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["serve", "--port", "0", "--cert-dir", str(tmp_path / "certs"), "--no-controllers"]
    assert main([*argv, "--checkpoint-root", UNRESOLVABLE]) == 2
    assert_one_line(capsys.readouterr().err, UNRESOLVABLE)


def test_storage_options_must_be_named_by_strings(tmp_path: Path) -> None:
    # fsspec takes them as keyword arguments: a YAML key such as 1 or true was a TypeError traceback at start-up.
    config = tmp_path / "relay.yaml"
    config.write_text("savepoint:\n  checkpointRoot: s3://flink/checkpoints\n  storageOptions: {1: 2}\n")
    with pytest.raises(SettingsError) as raised:
        load_settings(config)
    assert str(raised.value) == "savepoint.storageOptions: option names must be strings (1 is int)"


def test_a_cause_is_one_clean_line_without_the_credentials() -> None:
    from relay.settings import one_line_cause

    error = ConnectionError(
        "<urllib3.connection.HTTPConnection object at 0x7f3a2c1b9d50>: Failed to establish a new connection:\n"
        "  [Errno -2] Name or service not known (secret flink-s3cret)"
    )
    options = {"key": "flink", "secret": "flink-s3cret", "client_kwargs": {"aws_session_token": "t0ken-value"}}
    assert one_line_cause(error, options) == (
        "Failed to establish a new connection: Name or service not known (secret ***)"
    )
    assert one_line_cause(OSError(111, "Connection refused")) == "Connection refused"
    assert one_line_cause(TimeoutError()) == "TimeoutError"
    assert len(one_line_cause(ValueError("x" * 1000))) == 200
