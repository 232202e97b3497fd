"""What the cert tests share: the time they issue at, and the certificates of a cert dir's PEM files read back."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from cryptography import x509

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def certificate(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def bundle(path: Path) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(path.read_bytes())
