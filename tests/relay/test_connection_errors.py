"""A server the command line cannot reach is one readable line: the cause, never urllib3's reprs."""

from __future__ import annotations

from pathlib import Path

import pytest
import urllib3

from relay.cli import main
from relay.connection_errors import connection_problem
from tests.processes import free_port

KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "%s", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
"""


def failure_of(url: str) -> BaseException:
    try:
        urllib3.PoolManager(retries=urllib3.Retry(0)).request("GET", url, timeout=5)
    except urllib3.exceptions.HTTPError as error:
        return error
    raise AssertionError(f"{url} answered")


def test_a_refused_connection_is_said_plainly() -> None:
    assert connection_problem(failure_of(f"https://127.0.0.1:{free_port()}/")) == "connection refused"


def test_an_unknown_host_is_said_plainly() -> None:
    problem = connection_problem(failure_of("https://no-such-host.invalid/"))
    assert problem.startswith("cannot resolve its host name (") and "Connection" not in problem


@pytest.mark.parametrize("command", [["status"], ["legacy-purge-modes"], ["check", "--server"]])
def test_every_command_says_it_in_one_line_without_reprs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    server = f"https://127.0.0.1:{free_port()}"
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG % server)
    objects = tmp_path / "objects.yaml"
    objects.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    paths = [str(objects)] if command[0] == "check" else []

    assert main([*command, "--kubeconfig", str(kubeconfig), *paths]) == 2
    assert capsys.readouterr().err == f"failover-relay: cannot reach {server}: connection refused\n"
