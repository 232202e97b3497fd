"""failover-relay's command line as the tests run it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.processes import ControlPlaneError, loopback_env

REPO_ROOT = Path(__file__).resolve().parent.parent


def serve_command(port: int, cert_dir: Path, *options: str, host: str | None = "127.0.0.1") -> list[str]:
    """`failover-relay serve` under the Python running the tests, on `port` with its certificates in `cert_dir` and
    JSON logs (what the tests read), followed by `options`; `host` None keeps serve's default bind address."""
    return [
        sys.executable,
        "-m",
        "relay.cli",
        "serve",
        *(["--host", host] if host is not None else []),
        "--port",
        str(port),
        "--cert-dir",
        str(cert_dir),
        "--log-format",
        "json",
        *options,
    ]


def relay_command() -> list[str]:
    """The installed ``failover-relay`` console script of this interpreter's environment (``python -m`` else)."""
    script = Path(sys.executable).parent / "failover-relay"
    return [str(script)] if script.exists() else [sys.executable, "-m", "relay.cli"]


def webhook_manifests(*args: str) -> str:
    """What `failover-relay manifests webhook ARGS` prints; a ControlPlaneError when it fails."""
    rendered = subprocess.run(
        [*relay_command(), "manifests", "webhook", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=loopback_env(),
    )
    if rendered.returncode != 0:
        raise ControlPlaneError(f"failover-relay manifests webhook exited {rendered.returncode}: {rendered.stderr}")
    return rendered.stdout
