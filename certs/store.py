"""The certificate directory: which files are there, whose they are, and reading them safely.

A cert dir holds the names cert-manager and controller-runtime use, so a cert-manager Secret can be mounted as-is:

- ``tls.crt`` / ``tls.key``: the serving certificate and its key;
- ``ca.crt``: the CA bundle the apiserver needs as ``caBundle``;
- ``ca.key``: only when we run our own CA. It, or a ``ca.crt``/``tls.crt`` naming our CA (``failover-relay-ca``),
  marks the directory as ours: a directory that holds certificate files but neither came from elsewhere and is used
  exactly as it is, never written to.

Which of the two a directory gets is certs/serving.py (`ensure_certificates`); issuing, renewing and repairing our
own CA and serving certificate is certs/managed.py, built on this module. Files from elsewhere, as a member cluster's
relay serves them, are read here with the standard library alone: certs/der.py for the names and the expiry, OpenSSL
through `ssl` for the certificates as a whole and the key.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from certs.der import CertificateFields, DerError, read_pem_certificates

CA_CERT_NAME = "ca.crt"
CA_KEY_NAME = "ca.key"
# The successor CA, staged in ca.crt one renewal window before it signs anything.
NEXT_CA_CERT_NAME = "next-ca.crt"
NEXT_CA_KEY_NAME = "next-ca.key"
CERT_NAME = "tls.crt"
KEY_NAME = "tls.key"

CA_COMMON_NAME = "failover-relay-ca"

# A Secret holds at most 1 MiB, so no certificate, key or CA bundle file is larger.
MAX_FILE_BYTES = 1024 * 1024

# What OpenSSL says when a key loads but is not the certificate's: KEY_VALUES_MISMATCH for a key of the
# certificate's algorithm (X509_check_private_key); NO_CERTIFICATE_ASSIGNED for a key of another algorithm, which
# OpenSSL files in that algorithm's slot, where there is no certificate (ssl/ssl_rsa.c: ssl_set_pkey, then
# SSL_CTX_check_private_key).
KEY_MISMATCH_REASONS = frozenset({"KEY_VALUES_MISMATCH", "NO_CERTIFICATE_ASSIGNED"})


class CertificateError(Exception):
    """Base of every certificate problem: the server cannot get a usable certificate from the cert dir.

    Raised as-is when a file cannot be written (read-only mount, full disk).
    """


class CertificateFilesInvalid(CertificateError):
    """A certificate file exists (or must exist) but cannot be used: missing, unreadable, not PEM, or a key that is
    not the certificate's. The message names the file, never its content."""


@dataclass(frozen=True)
class CertificateFiles:
    """Where the serving certificate is, and what ``ensure_certificates`` (certs/serving.py) did to get it.

    ``ca_file`` is None only for external files that come without a ``ca.crt``. ``managed`` says we issued the
    files (and may rewrite them); ``renewed`` says this call wrote a new serving certificate; ``repairs`` says, one
    line each, what damage this call found and how it repaired it (certs/managed.py).
    """

    ca_file: Path | None
    cert_file: Path
    key_file: Path
    not_after: datetime
    managed: bool
    renewed: bool
    repairs: tuple[str, ...] = field(default=())


def read_ca_bundle(cert_dir: Path) -> bytes:
    """Return the PEM the apiserver should trust for this server: ``ca.crt``, else the chain in ``tls.crt``.

    Without a ``ca.crt`` (a publicly issued or self-signed certificate) the served chain itself is the trust
    anchor: Go's verifier accepts a certificate that is in the root pool as it is.
    """
    directory = CertDir(cert_dir)
    for path in (directory.ca_cert, directory.cert):
        if path.exists():
            return pem_of(load_certificates(read_file(path), path))
    raise CertificateFilesInvalid(f"{cert_dir}: holds neither {CA_CERT_NAME} nor {CERT_NAME}")


def certificate_expiry(cert_file: Path) -> datetime:
    """Return when the first (served) certificate in ``cert_file`` expires, in UTC."""
    return load_certificates(read_file(cert_file), cert_file)[0].not_after


def load_certificates(data: bytes, source: Path) -> list[CertificateFields]:
    """Every PEM certificate in ``data``, with its names and expiry; ``source`` names the file in the error."""
    try:
        return read_pem_certificates(data)
    except DerError:
        raise not_a_certificate(source) from None


def pem_of(certificates: Sequence[CertificateFields]) -> bytes:
    """The certificates re-encoded as PEM, so nothing but certificates (no comment, no key) is passed on."""
    return b"".join(certificate.pem for certificate in certificates)


def not_a_certificate(source: Path) -> CertificateFilesInvalid:
    return CertificateFilesInvalid(f"{source}: not a PEM certificate")


def read_file(path: Path) -> bytes:
    """The file's bytes, at most `MAX_FILE_BYTES`: a path that is not a certificate file (`/dev/zero`, a log) is
    refused after reading that much, never read to the end."""
    try:
        with path.open("rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        raise CertificateFilesInvalid(f"{path}: cannot read ({error.strerror})") from None
    if len(data) > MAX_FILE_BYTES:
        raise CertificateFilesInvalid(f"{path}: larger than {MAX_FILE_BYTES} bytes; not a certificate or key file")
    return data


def load_chain(
    context: ssl.SSLContext, cert_pem: bytes, key_pem: bytes, password: Callable[[], bytes] | None = None
) -> None:
    """Load a certificate chain and its key into `context` from one private copy of the bytes already read (bounded
    by `read_file`): OpenSSL never opens the configured paths itself, which may change between two reads or never
    end. Raises `ssl.SSLError` as `load_cert_chain` does."""
    with tempfile.TemporaryDirectory(prefix="failover-relay-tls-") as scratch:
        chain = Path(scratch, "chain.pem")
        descriptor = os.open(chain, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as file:
            file.write(cert_pem + b"\n" + key_pem)
        context.load_cert_chain(chain, password=password)


class CertDir:
    """The well-known paths of a cert dir."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.ca_cert = root / CA_CERT_NAME
        self.ca_key = root / CA_KEY_NAME
        self.next_ca_cert = root / NEXT_CA_CERT_NAME
        self.next_ca_key = root / NEXT_CA_KEY_NAME
        self.cert = root / CERT_NAME
        self.key = root / KEY_NAME

    def is_external(self) -> bool:
        """Files we did not make: there is something here, no CA key, and no certificate naming our CA."""
        if self.ca_key.exists() or not any(p.exists() for p in (self.ca_cert, self.cert, self.key)):
            return False
        return not (_names_our_ca(self.ca_cert, subject=True) or _names_our_ca(self.cert, subject=False))


def _names_our_ca(path: Path, *, subject: bool) -> bool:
    """Whether the first certificate in `path` is our CA (`subject`) or was issued by it; False when unreadable."""
    try:
        first = read_pem_certificates(read_file(path))[0]
    except (CertificateFilesInvalid, DerError):
        return False
    return CA_COMMON_NAME in (first.subject_common_names if subject else first.issuer_common_names)


def use_external(directory: CertDir) -> CertificateFiles:
    """Files from elsewhere, checked to be readable and to match, used as they are: whoever issued them renews them."""
    for path in (directory.cert, directory.key):
        if not path.exists():
            raise CertificateFilesInvalid(
                f"{path}: missing; {directory.root} holds certificate files but no {CA_KEY_NAME}, so it is "
                f"managed elsewhere and needs both {CERT_NAME} and {KEY_NAME}"
            )
    chain = _load_checked(directory.cert)
    _require_key_of(directory.cert, directory.key)
    if directory.ca_cert.exists():
        _load_checked(directory.ca_cert)
    return CertificateFiles(
        ca_file=directory.ca_cert if directory.ca_cert.exists() else None,
        cert_file=directory.cert,
        key_file=directory.key,
        not_after=chain[0].not_after,
        managed=False,
        renewed=False,
    )


def _load_checked(path: Path) -> list[CertificateFields]:
    """The certificates of `path`, each also parsed whole by OpenSSL (certs/der.py reads only a few fields)."""
    data = read_file(path)
    certificates = load_certificates(data, path)
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(
            cadata=b"".join(certificate.der for certificate in certificates)
        )
    except ssl.SSLError:
        raise not_a_certificate(path) from None
    return certificates


class _EncryptedKey(Exception):
    """Raised by the password callback: OpenSSL asks for a password only for an encrypted key."""


def _refuse_password() -> bytes:
    # Without a callback OpenSSL would prompt on a terminal for the password of an encrypted key, and wait.
    raise _EncryptedKey


def _require_key_of(cert_path: Path, key_path: Path) -> None:
    """Refuse a key that is not an unencrypted PEM private key, or not the certificate's: the TLS server would fail
    every handshake with it. OpenSSL decides, loading both as the server will; the certificate has been read whole
    before (`_load_checked`), so any other failure is the key's. No error is chained: it may echo the key."""
    try:
        load_chain(
            ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER),
            read_file(cert_path),
            read_file(key_path),
            password=_refuse_password,
        )
    except ssl.SSLError as error:
        if error.reason in KEY_MISMATCH_REASONS:
            raise CertificateFilesInvalid(
                f"{key_path}: is not the private key of the certificate in {cert_path}"
            ) from None
        raise not_a_private_key(key_path) from None
    except _EncryptedKey:
        raise not_a_private_key(key_path) from None
    except OSError as error:  # the private copy could not be written
        raise CertificateFilesInvalid(f"{key_path}: cannot be checked ({error.strerror})") from None


def not_a_private_key(source: Path) -> CertificateFilesInvalid:
    return CertificateFilesInvalid(f"{source}: not an unencrypted PEM private key (PKCS#8, PKCS#1 or SEC1)")
