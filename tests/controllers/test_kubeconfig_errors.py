"""A kubeconfig the relay cannot use is named in one line, with where and why (controllers/access/kube.py)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from urllib3.exceptions import InsecureRequestWarning

from controllers.access.kube import NoClusterConfig, load_api_client


def refusal(kubeconfig: Path) -> str:
    with pytest.raises(NoClusterConfig) as raised:
        load_api_client(kubeconfig)
    message = str(raised.value)
    assert "\n" not in message
    return message


def test_a_directory_is_named_as_one(tmp_path: Path) -> None:
    assert refusal(tmp_path) == f"kubeconfig {tmp_path} is a directory, not a kubeconfig file"


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    assert refusal(tmp_path / "nope") == f"no kubeconfig at {tmp_path / 'nope'}"


def test_broken_yaml_gives_line_and_column(tmp_path: Path) -> None:
    broken = tmp_path / "config"
    broken.write_text("apiVersion: v1\nclusters: [\n  {name: a\n")
    message = refusal(broken)
    assert message.startswith(f"kubeconfig {broken}:") and "unusable: invalid YAML: " in message
    line = int(message.split(":")[1])
    assert 2 <= line <= 4


def test_a_kubeconfig_without_tls_verification_gets_no_warning_on_every_request(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1', insecure-skip-tls-verify: true}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_api_client(kubeconfig)
        warnings.warn("Unverified HTTPS request", InsecureRequestWarning, stacklevel=1)
    assert caught == []  # as kubectl, which honours insecure-skip-tls-verify without a word
