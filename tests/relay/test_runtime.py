"""The Python the server runs on: versions with CPython gh-109534 refused in a cluster, warned about elsewhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import relay.runtime
import relay.serve
from relay.cli import main
from relay.runtime import ALLOW_ENV, affected_by_ssl_leak, ssl_leak_problem

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("version", "affected"),
    [
        ((3, 11, 0), True),
        ((3, 11, 7), True),
        ((3, 11, 8), False),
        ((3, 11, 11), False),
        ((3, 12, 0), True),
        ((3, 12, 1), True),
        ((3, 12, 2), False),
        ((3, 13, 0), False),
        ((3, 10, 13), False),
    ],
)
def test_the_affected_versions(version: tuple[int, int, int], affected: bool) -> None:
    assert affected_by_ssl_leak(version) is affected
    assert (ssl_leak_problem(version) is not None) is affected


@pytest.mark.skipif(not affected_by_ssl_leak(), reason="this Python is not affected")
def test_an_affected_python_is_refused_in_a_cluster_unless_allowed(tmp_path: Path) -> None:
    refused = subprocess.run(
        [
            sys.executable,
            "-m",
            "relay.cli",
            "serve",
            "--cert-dir",
            str(tmp_path / "certs"),
            "--no-controllers",
            "--port",
            "0",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env={
            key: value
            for key, value in {**os.environ, "KUBERNETES_SERVICE_HOST": "10.96.0.1"}.items()
            if key != ALLOW_ENV
        },
    )
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1 and "gh-109534" in refused.stderr and ALLOW_ENV in refused.stderr


@pytest.mark.parametrize(
    ("cluster", "level"),
    [
        (False, "warning"),  # `make run` on a laptop: the listener is on loopback
        (True, "error"),  # allowed by ALLOW_ENV, still exposed to whatever reaches the Service: as before
    ],
)
def test_an_affected_python_that_runs_is_a_warning_outside_a_cluster_and_an_error_inside(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    cluster: bool,
    level: str,
) -> None:
    async def served(settings: object) -> None:
        return None

    monkeypatch.setattr(relay.runtime, "_running", lambda: (3, 11, 7))
    monkeypatch.setattr(relay.serve, "serve", served)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv(ALLOW_ENV, raising=False)
    if cluster:
        monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
        monkeypatch.setenv(ALLOW_ENV, "1")

    code = main(["serve", "--cert-dir", str(tmp_path), "--no-controllers", "--port", "0", "--log-format", "json"])

    assert code == 0
    [line] = [line for line in capsys.readouterr().err.splitlines() if "python_leaks_tls_memory" in line]
    assert json.loads(line)["level"] == level


def test_the_image_pins_a_python_without_the_leak() -> None:
    lines = (REPO / "Dockerfile").read_text().splitlines()
    # Every stage is FROM the one BASE argument, whose default is the official image, pinned.
    assert {line.split()[1] for line in lines if line.startswith("FROM ")} == {"${BASE}"}
    [default] = [line.partition("=")[2] for line in lines if line.startswith("ARG BASE=")]
    tag = default.partition(":")[2]
    version = tuple(int(part) for part in tag.partition("-")[0].split("."))
    assert len(version) == 3, f"the base image {default} is not pinned to a patch release"
    assert not affected_by_ssl_leak(version)  # type: ignore[arg-type]
