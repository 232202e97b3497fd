"""failover-relay's command line as the tests run it."""

from __future__ import annotations

import sys
from pathlib import Path


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
