"""A server-side TLS context whose certificate can be replaced while the server runs.

aiohttp binds one `ssl.SSLContext` to the listening socket for its whole life. OpenSSL reads the certificate of a
context at each handshake, so loading a new chain into the same context object switches every *new* connection to it
while connections already established keep theirs: no restart, no failed request in flight.

A replacement is first loaded into a scratch context from a private copy of the files, so a half-written file, a key
that does not match its certificate or a rotation caught between the key and the certificate leaves the live
context exactly as it was (the error is kept in `last_error` and the old certificate keeps serving).
"""

from __future__ import annotations

import hashlib
import ssl
from datetime import datetime
from pathlib import Path

from certs.store import CertificateFilesInvalid, load_certificates, load_chain, read_file

# TLS 1.2 suites with forward secrecy and AEAD only (Mozilla "intermediate"); TLS 1.3 suites are fixed by OpenSSL.
TLS12_CIPHERS = "ECDHE+AESGCM:ECDHE+CHACHA20"


def server_context(client_ca_file: Path | None = None) -> ssl.SSLContext:
    """A hardened server context without a certificate: TLS >= 1.2, AEAD ciphers, optional client verification."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_ciphers(TLS12_CIPHERS)
    context.options |= ssl.OP_NO_COMPRESSION | ssl.OP_CIPHER_SERVER_PREFERENCE | ssl.OP_NO_RENEGOTIATION
    if client_ca_file is not None:
        context.load_verify_locations(cafile=str(client_ca_file))
        # Optional at the TLS layer: a certificate that is presented must verify, and the HTTP layer refuses
        # admissions that came without one (probes and the readiness self-dial carry none).
        context.verify_mode = ssl.CERT_OPTIONAL
    return context


class ReloadingSSLContext:
    """Owns the live server context and reloads `cert_file`/`key_file` into it when their content changes."""

    def __init__(self, cert_file: Path, key_file: Path, client_ca_file: Path | None = None) -> None:
        self.cert_file = Path(cert_file)
        self.key_file = Path(key_file)
        self.client_ca_file = client_ca_file
        self._client_ca = self._read_client_ca() if client_ca_file is not None else None
        self.context = server_context(client_ca_file)
        self.last_error: str | None = None
        self._fingerprint = b""
        self.not_after: datetime
        if not self.maybe_reload():
            raise CertificateFilesInvalid(self.last_error or f"{self.cert_file}: cannot be loaded")

    def _read_client_ca(self) -> bytes:
        assert self.client_ca_file is not None
        return read_file(self.client_ca_file)

    def _maybe_reload_client_ca(self) -> bool:
        """A changed client CA file means a new context: OpenSSL can add CAs to a context but never remove one, so
        a CA taken out of the file would stay trusted. The listener reads `context` at every handshake (webhook/
        listener.py), so new connections use the new one and established ones keep theirs."""
        if self.client_ca_file is None:
            return False
        try:
            client_ca = self._read_client_ca()
            if client_ca == self._client_ca:
                return False
            fresh = server_context(self.client_ca_file)
        except (CertificateFilesInvalid, ssl.SSLError, OSError, ValueError) as error:
            self.last_error = (
                str(error)
                if isinstance(error, CertificateFilesInvalid)
                else (f"{self.client_ca_file}: not a PEM CA bundle")
            )
            return False
        try:
            cert_pem, key_pem = read_file(self.cert_file), read_file(self.key_file)
            self._load_verified(cert_pem, key_pem, fresh)
        except (CertificateFilesInvalid, ssl.SSLError, ValueError, OSError):
            return False  # the serving files are mid-rotation; the next check takes both
        self.context, self._client_ca = fresh, client_ca
        self._fingerprint = hashlib.sha256(cert_pem + b"\0" + key_pem).digest()
        self.not_after = load_certificates(cert_pem, self.cert_file)[0].not_after
        return True

    def maybe_reload(self) -> bool:
        """Load the files again if their content changed; True when a new certificate or client CA is now used."""
        if self._maybe_reload_client_ca():
            self.last_error = None
            return True
        try:
            cert_pem, key_pem = read_file(self.cert_file), read_file(self.key_file)
        except CertificateFilesInvalid as error:
            self.last_error = str(error)
            return False
        fingerprint = hashlib.sha256(cert_pem + b"\0" + key_pem).digest()
        if fingerprint == self._fingerprint:
            # The files are what is served (again): an error seen while they were broken no longer applies.
            self.last_error = None
            return False
        try:
            not_after = load_certificates(cert_pem, self.cert_file)[0].not_after
            self._load_verified(cert_pem, key_pem)
        except (CertificateFilesInvalid, ssl.SSLError, ValueError) as error:
            self.last_error = (
                str(error)
                if isinstance(error, CertificateFilesInvalid)
                else (f"{self.cert_file} / {self.key_file}: certificate and key cannot be loaded together")
            )
            return False
        self._fingerprint = fingerprint
        self.not_after = not_after
        self.last_error = None
        return True

    def _load_verified(self, cert_pem: bytes, key_pem: bytes, context: ssl.SSLContext | None = None) -> None:
        # One private copy per load, of the bytes read once: the files may change again between the loads.
        load_chain(ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER), cert_pem, key_pem)
        load_chain(context or self.context, cert_pem, key_pem)
