"""TLS contexts of the tests' clients: one that verifies a server as the apiserver does, one that verifies nothing."""

from __future__ import annotations

import ssl
from pathlib import Path


def client_tls(ca_file: Path) -> ssl.SSLContext:
    """What the apiserver does: verify the server against the caBundle, hostname included."""
    return ssl.create_default_context(cafile=str(ca_file))


def unverified_tls() -> ssl.SSLContext:
    """A context that verifies nothing: readiness probes of a server whose certificate may not exist yet (an
    apiserver writing its own) or is signed by a CA the probe does not hold."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context
