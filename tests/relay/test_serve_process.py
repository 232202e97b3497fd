"""`failover-relay serve` as an operator runs it: a real process, its own certificates, JSON logs, clean SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.admission_reviews import admission_review
from tests.policies import flink_policy
from tests.processes import free_port
from tests.tls_clients import client_tls

START_TIMEOUT_SECONDS = 30.0


class RunningRelay:
    def __init__(self, process: subprocess.Popen[str], port: int, cert_dir: Path, log: Path) -> None:
        self.process, self.port, self.cert_dir, self.log = process, port, cert_dir, log

    def get(self, path: str) -> tuple[int, str]:
        return self.request(path, None)

    def request(self, path: str, body: bytes | None) -> tuple[int, str]:
        request = urllib.request.Request(
            f"https://localhost:{self.port}{path}", data=body, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, context=client_tls(self.cert_dir / "ca.crt"), timeout=5) as reply:
                return reply.status, reply.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def log_records(self) -> list[dict]:
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.startswith("{")]


@pytest.fixture
def running_relay(tmp_path: Path) -> Iterator[RunningRelay]:
    port, cert_dir, log = free_port(), tmp_path / "certs", tmp_path / "relay.log"
    with log.open("w") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "relay.cli", "serve", "--port", str(port), "--cert-dir", str(cert_dir)],
            stdout=sink,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    relay = RunningRelay(process, port, cert_dir, log)
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while True:
        if process.poll() is not None:
            pytest.fail(f"failover-relay exited with {process.returncode}:\n{log.read_text()}")
        try:
            if (cert_dir / "ca.crt").exists() and relay.get("/readyz")[0] == 200:
                break
        except OSError:
            pass
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"failover-relay not ready after {START_TIMEOUT_SECONDS} s:\n{log.read_text()}")
        time.sleep(0.1)
    yield relay
    if process.poll() is None:
        process.kill()
        process.wait()


def test_serve_generates_certificates_answers_and_logs_json(running_relay: RunningRelay) -> None:
    assert sorted(p.name for p in running_relay.cert_dir.iterdir()) == ["ca.crt", "ca.key", "tls.crt", "tls.key"]
    assert (running_relay.cert_dir / "tls.key").stat().st_mode & 0o077 == 0

    review = admission_review(flink_policy(purgeMode="Gracefully"))
    status, body = running_relay.request("/validate", json.dumps(review).encode())
    assert status == 200
    answer = json.loads(body)
    assert answer["response"]["uid"] == review["request"]["uid"]
    assert answer["response"]["allowed"] is False

    status, body = running_relay.request("/validate", b"not json")
    assert status == 400 and "not JSON" in body

    running_relay.process.send_signal(signal.SIGTERM)
    assert running_relay.process.wait(timeout=15) == 0

    records = running_relay.log_records()
    review_logs = [r for r in records if r.get("event") == "admission_review"]
    assert len(review_logs) == 1
    logged = review_logs[0]
    assert logged["uid"] == review["request"]["uid"]
    assert logged["kind"] == "PropagationPolicy"
    assert logged["object"] == "default/flink-pp"
    assert logged["operation"] == "CREATE"
    assert logged["verdict"] == "denied"
    assert isinstance(logged["latency_ms"], float)
    assert {"serving", "shutting_down", "stopped"} <= {r.get("event") for r in records}


def test_serve_reuses_its_certificate_across_restarts(tmp_path: Path, running_relay: RunningRelay) -> None:
    certificate = (running_relay.cert_dir / "tls.crt").read_bytes()
    running_relay.process.send_signal(signal.SIGTERM)
    running_relay.process.wait(timeout=15)
    second = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "relay.cli",
            "serve",
            "--port",
            str(running_relay.port),
            "--cert-dir",
            str(running_relay.cert_dir),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            try:
                if RunningRelay(second, running_relay.port, running_relay.cert_dir, tmp_path).get("/healthz")[0] == 200:
                    break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("second failover-relay did not start")
    finally:
        second.send_signal(signal.SIGTERM)
        assert second.wait(timeout=15) == 0
    assert (running_relay.cert_dir / "tls.crt").read_bytes() == certificate


def test_serve_refuses_a_bad_config_with_exit_2(tmp_path: Path) -> None:
    config = tmp_path / "relay.yaml"
    config.write_text("server:\n  port: seventy\n")
    result = subprocess.run(
        [sys.executable, "-m", "relay.cli", "serve", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert "port" in result.stderr and "Traceback" not in result.stderr


def test_serve_reports_a_taken_port_without_a_traceback(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "relay.cli", "serve", "--port", str(port), "--cert-dir", str(tmp_path / "c")],
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert result.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr
