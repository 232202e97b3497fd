"""Which Python the server may run on.

CPython gh-109534: on 3.11.0-3.11.7 and 3.12.0-3.12.1 asyncio's SSLProtocol stays alive in a reference cycle after
a failed TLS handshake, holding its buffers, so memory taken by connections that never complete a handshake (a port
scan, a flood) is not given back (fixed in 3.11.8 and 3.12.2). The listener caps connections and handshake time
(webhook/listener.py), which bounds the damage of one flood but not of many over a pod's life.

So in a cluster, where anything that can reach the Service can connect, `serve` refuses to start on an affected
Python unless ALLOW_ENV is set to 1, and when allowed logs an error on every start (the exposure stays visible to
alerts on error lines); outside a cluster (the local dev loop on 127.0.0.1) it logs a warning and runs. The image
pins a fixed Python (Dockerfile).
"""

from __future__ import annotations

import sys

ALLOW_ENV = "FAILOVER_RELAY_ALLOW_PYTHON_GH109534"
AFFECTED = (((3, 11, 0), (3, 11, 7)), ((3, 12, 0), (3, 12, 1)))


def _running() -> tuple[int, int, int]:
    """This interpreter's (major, minor, micro)."""
    info = sys.version_info
    return info.major, info.minor, info.micro


def affected_by_ssl_leak(version: tuple[int, int, int] | None = None) -> bool:
    current = version or _running()
    return any(low <= current <= high for low, high in AFFECTED)


def ssl_leak_problem(version: tuple[int, int, int] | None = None) -> str | None:
    """One line saying why this Python is unfit to serve, or None."""
    current = version or _running()
    if not affected_by_ssl_leak(current):
        return None
    return (
        f"Python {'.'.join(map(str, current))} leaks the memory of failed TLS handshakes (CPython gh-109534); "
        f"run on 3.11.8+ or 3.12.2+, or set {ALLOW_ENV}=1 to run anyway"
    )
