"""Our own CA and serving certificate in a cert dir: issuing, reusing, renewing and repairing them.

Only a cert dir that is ours (certs/store.py, `CertDir.is_external`) comes here, and only from here is `cryptography`
imported (through certs/authority.py): a relay serving certificates from elsewhere never needs it.

Our own CA rotates with overlap: when it is renewed, the previous CA stays in ``ca.crt`` after the new one until
it expires, so a caBundle rendered from ``ca.crt`` verifies both the replicas already serving the new leaf and
those still serving the old one (the ~1 min of x509 errors after rotation in gatekeeper#1045).

A damaged CA of ours is repaired only in ways that keep every client working, and each repair is reported in
``CertificateFiles.repairs`` (the server logs it as an error and counts it):

- ``ca.crt`` missing, unreadable or no longer holding the CA of ``ca.key``: the CA certificate is rebuilt for the
  same key and name, so it verifies the served leaf, and the old CA certificate in every client's caBundle still
  verifies it too;
- ``ca.key`` missing or unreadable beside a ``ca.crt`` of ours: a new CA is added to ``ca.crt`` in front of the
  old one, and the served leaf (signed by the old CA, which clients trust) is kept until its renewal, by which time
  the new CA has long been published. Only when the leaf itself is unusable is one issued at once by the new CA,
  and the report says that clients need the new ``ca.crt``.

Writers on one directory are serialised with flock on the directory, so two instances starting on an empty
directory cannot end up with a ``ca.crt`` that does not verify the served certificate.
"""

from __future__ import annotations

import fcntl
import ipaddress
import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes, PublicKeyTypes
from cryptography.x509.oid import NameOID

from certs.authority import SIGNING_KEY_TYPES, KeyPair, generate_ca, generate_serving_certificate
from certs.store import (
    CA_CERT_NAME,
    CA_COMMON_NAME,
    CA_KEY_NAME,
    CertDir,
    CertificateError,
    CertificateFiles,
    CertificateFilesInvalid,
    not_a_certificate,
    not_a_private_key,
    read_file,
)

_KEY_MODE = 0o600
_CERT_MODE = 0o644
_DIR_MODE = 0o700


def ensure_managed(
    directory: CertDir,
    dns_names: Sequence[str],
    ip_addresses: Sequence[str],
    now: datetime,
    ca_valid_for: timedelta,
    cert_valid_for: timedelta,
    renew_before: timedelta,
) -> CertificateFiles:
    """`ensure_certificates` for a cert dir of ours, under the directory's lock (writers are serialised): the CA to
    sign with (`_signing_ca`), then the served leaf, kept while it is reusable and otherwise issued by that CA."""
    _create(directory.root)
    with _locked(directory.root):
        repairs: list[str] = []
        ca, leaf, keep_leaf = _signing_ca(directory, now, ca_valid_for, renew_before, repairs)
        # A leaf of an older CA of ours that ca.crt still holds is as trusted as one of the current CA: after a lost
        # ca.key it is what keeps the clients with the old caBundle working (module docstring).
        issuers = [ca.certificate, *(c for c in _read_own_ca_bundle(directory) if _is_our_ca(c))]
        renewed = leaf is None or not _reusable(leaf, issuers, dns_names, ip_addresses, now, renew_before)
        if renewed and keep_leaf:
            repairs.append(
                f"{directory.cert}: could not be kept, so it was issued by the new CA at once; clients that "
                f"trust only the old CA fail until they get the new {CA_CERT_NAME} (the caBundle sync)"
            )
        if renewed:
            leaf = generate_serving_certificate(ca, dns_names, ip_addresses, now, cert_valid_for)
            # Key first: a reader that sees the new certificate must find its key already in place.
            _write(directory.key, leaf.private_key_pem, _KEY_MODE)
            _write(directory.cert, leaf.certificate_pem, _CERT_MODE)
        assert leaf is not None
        return CertificateFiles(
            ca_file=directory.ca_cert,
            cert_file=directory.cert,
            key_file=directory.key,
            not_after=leaf.not_after,
            managed=True,
            renewed=renewed,
            repairs=tuple(repairs),
        )


def load_certificates(data: bytes, source: Path) -> list[x509.Certificate]:
    """Parse every PEM certificate in ``data``; ``source`` names the file in the error."""
    try:
        return x509.load_pem_x509_certificates(data)
    except ValueError:
        raise not_a_certificate(source) from None


def load_private_key(data: bytes, source: Path) -> PrivateKeyTypes:
    """Parse an unencrypted PEM private key; ``source`` names the file in the error.

    The underlying error is not chained: parsers may echo part of their input, and this input is a key.
    """
    try:
        return serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        raise not_a_private_key(source) from None


def require_matching_key(
    certificate: x509.Certificate, key: PrivateKeyTypes, cert_source: Path, key_source: Path
) -> None:
    """Refuse a key that is not the certificate's: the TLS server would fail every handshake with it."""
    if _public_key_bytes(certificate.public_key()) != _public_key_bytes(key.public_key()):
        raise CertificateFilesInvalid(f"{key_source}: is not the private key of the certificate in {cert_source}")


def _create(root: Path) -> None:
    if root.exists():
        return
    try:
        root.mkdir(parents=True, mode=_DIR_MODE, exist_ok=True)
        os.chmod(root, _DIR_MODE)  # mkdir's mode is filtered by the umask
    except OSError as error:
        raise CertificateError(f"{root}: cannot create ({error.strerror})") from None


@contextmanager
def _locked(root: Path) -> Iterator[None]:
    """Hold an exclusive lock on the directory while its files are read and written (flock on the directory itself,
    so no file is added to a cert dir)."""
    try:
        descriptor = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:  # not a directory: the first write names the file that failed
        yield
        return
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # releases the lock


def _signing_ca(
    directory: CertDir, now: datetime, ca_valid_for: timedelta, renew_before: timedelta, repairs: list[str]
) -> tuple[KeyPair, KeyPair | None, list[x509.Certificate]]:
    """The CA to sign the serving certificate with, the served leaf (None: a new CA, so a new leaf), and the old CA
    certificates whose leaf may still be served (`_recover_ca`). The CA is ours as ca.key and ca.crt hold it (repaired
    if damaged); when it is missing or due for renewal, the staged successor promoted (or a fresh CA); otherwise the
    CA as it is, with its successor staged one renewal window before it is needed."""
    ca_bundle = _read_own_ca_bundle(directory)
    ca, keep_leaf = _recover_ca(directory, ca_bundle, now, ca_valid_for, repairs)
    if ca is None or _renewal_due(ca, now, renew_before):
        # The staged next CA has been in ca.crt (and so in every caBundle) since it was made, a whole renewal window
        # ago: switching the leaf to it fails no handshake. Without one (first start, or a server that was down
        # for the whole window) a fresh CA is the only choice.
        staged = _read_own_key_pair(directory.next_ca_cert, directory.next_ca_key)
        ca = (
            staged
            if staged is not None and not _renewal_due(staged, now, renew_before)
            else generate_ca(CA_COMMON_NAME, now, ca_valid_for)
        )
        # Key, bundle, then the staged files: a crash between any two leaves a mismatch that the next call repairs
        # by promoting the still-present staged CA again.
        _write(directory.ca_key, ca.private_key_pem, _KEY_MODE)
        _write_ca_bundle(directory, ca, ca_bundle, now)
        _remove(directory.next_ca_cert, directory.next_ca_key)
        return ca, None, keep_leaf
    if (
        now >= ca.not_after - 2 * renew_before
        and _read_own_key_pair(directory.next_ca_cert, directory.next_ca_key) is None
    ):
        # Stage the successor one renewal window before it is needed, trusted but not yet used to sign, so the
        # caBundle sync has long published it when the serving certificate moves to it (gatekeeper#1045: x509
        # errors while the bundle lags behind the certificate).
        successor = generate_ca(CA_COMMON_NAME, now, ca_valid_for)
        _write(directory.next_ca_key, successor.private_key_pem, _KEY_MODE)
        _write(directory.next_ca_cert, successor.certificate_pem, _CERT_MODE)
        _write_ca_bundle(directory, ca, [*ca_bundle, successor.certificate], now)
    return ca, _read_own_key_pair(directory.cert, directory.key), keep_leaf


def _recover_ca(
    directory: CertDir, ca_bundle: list[x509.Certificate], now: datetime, ca_valid_for: timedelta, repairs: list[str]
) -> tuple[KeyPair | None, list[x509.Certificate]]:
    """Our CA as ca.key and ca.crt hold it, repairing either if damaged (module docstring); None on a first start.

    Also returns the old CA certificates whose leaf may still be served (only after a lost ca.key)."""
    key_pem, key_problem = _read_own_key(directory.ca_key)
    if key_pem is not None:
        key = load_private_key(key_pem, directory.ca_key)
        own = [
            certificate
            for certificate in ca_bundle
            if _public_key_bytes(certificate.public_key()) == _public_key_bytes(key.public_key())
        ]
        if own and own[0] == ca_bundle[0]:  # own is taken from ca_bundle, so that is not empty
            return KeyPair(certificate_pem=_pem_of(own[:1]), private_key_pem=key_pem), []
        if own:  # ours, but not first: the first certificate is read back as the CA
            ca = KeyPair(certificate_pem=_pem_of(own[:1]), private_key_pem=key_pem)
            _write_ca_bundle(directory, ca, ca_bundle, now)
            return ca, []
        if not isinstance(key, SIGNING_KEY_TYPES):
            raise CertificateFilesInvalid(f"{directory.ca_key}: not a key that can sign certificates")
        ca = generate_ca(CA_COMMON_NAME, now, ca_valid_for, key=key)
        state = (
            "is missing"
            if not directory.ca_cert.exists()
            else "is not PEM"
            if not ca_bundle
            else f"does not hold the CA of {CA_KEY_NAME}"
        )
        _write_ca_bundle(directory, ca, [*ca_bundle, *_staged_ca(directory)], now)
        repairs.append(
            f"{directory.ca_cert} {state}: rebuilt from {directory.ca_key} with the same key and name, "
            "so the served certificate and every client's caBundle stay valid"
        )
        return ca, []
    ours = [certificate for certificate in ca_bundle if _is_our_ca(certificate)]
    if key_problem is None and not ours:
        return None, []  # a first start
    ca = generate_ca(CA_COMMON_NAME, now, ca_valid_for)
    _write(directory.ca_key, ca.private_key_pem, _KEY_MODE)
    _write_ca_bundle(directory, ca, ca_bundle, now)
    _remove(directory.next_ca_cert, directory.next_ca_key)
    repairs.append(
        f"{directory.ca_key} {key_problem or 'is missing'}: a new CA now signs, added to "
        f"{directory.ca_cert} in front of the old one; the served certificate, signed by the old CA, is "
        "kept until its renewal"
    )
    return ca, ours


def _read_own_key(path: Path) -> tuple[bytes | None, str | None]:
    """The PEM of a usable private key at `path`, or None and what is wrong ("is not a private key"); (None, None)
    when there is no file."""
    if not path.exists():
        return None, None
    try:
        data = read_file(path)
        load_private_key(data, path)
    except CertificateFilesInvalid:
        return None, "is not a usable private key"
    return data, None


def _is_our_ca(certificate: x509.Certificate) -> bool:
    return any(
        attribute.value == CA_COMMON_NAME
        for attribute in certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    )


def _staged_ca(directory: CertDir) -> list[x509.Certificate]:
    staged = _read_own_key_pair(directory.next_ca_cert, directory.next_ca_key)
    return [staged.certificate] if staged is not None else []


def _write_ca_bundle(directory: CertDir, ca: KeyPair, others: Sequence[x509.Certificate], now: datetime) -> None:
    """ca.crt: the signing CA first (it is read back as the CA), then every other unexpired one, each once."""
    current = ca.certificate
    rest = [certificate for certificate in others if certificate.not_valid_after_utc > now and certificate != current]
    unique = list({certificate.fingerprint(hashes.SHA256()): certificate for certificate in rest}.values())
    _write(directory.ca_cert, ca.certificate_pem + _pem_of(unique), _CERT_MODE)


def _remove(*paths: Path) -> None:
    for path in paths:
        with suppress(FileNotFoundError):
            path.unlink()


def _read_own_ca_bundle(directory: CertDir) -> list[x509.Certificate]:
    if not directory.ca_cert.exists():
        return []
    try:
        return load_certificates(read_file(directory.ca_cert), directory.ca_cert)
    except CertificateFilesInvalid:
        return []  # ours and unreadable: it is rewritten with a new CA


def _read_own_key_pair(cert_path: Path, key_path: Path) -> KeyPair | None:
    """A key pair we wrote earlier, or None when it is missing, broken or mismatched (so it is reissued)."""
    if not cert_path.exists() or not key_path.exists():
        return None
    certificate_pem, key_pem = read_file(cert_path), read_file(key_path)
    try:
        certificate = load_certificates(certificate_pem, cert_path)[0]
        require_matching_key(certificate, load_private_key(key_pem, key_path), cert_path, key_path)
    except CertificateFilesInvalid:
        return None
    return KeyPair(certificate_pem=_pem_of([certificate]), private_key_pem=key_pem)


def _renewal_due(pair: KeyPair, now: datetime, renew_before: timedelta) -> bool:
    # A certificate that is not valid yet means the clock went back; reissue rather than serve it.
    return now < pair.not_before or now >= pair.not_after - renew_before


def _reusable(
    leaf: KeyPair,
    issuers: Sequence[x509.Certificate],
    dns_names: Sequence[str],
    ip_addresses: Sequence[str],
    now: datetime,
    renew_before: timedelta,
) -> bool:
    if _renewal_due(leaf, now, renew_before):
        return False
    wanted_addresses = {str(ipaddress.ip_address(address)) for address in ip_addresses}
    if not set(dns_names) <= set(leaf.dns_names) or not wanted_addresses <= set(leaf.ip_addresses):
        return False
    for issuer in issuers:
        try:
            leaf.certificate.verify_directly_issued_by(issuer)
            return True
        except (ValueError, TypeError, InvalidSignature):
            continue
    return False


def _write(path: Path, data: bytes, mode: int) -> None:
    """Replace ``path`` atomically: readers (the reloader, a kubelet sync) see the old file or the new, never half."""
    try:
        descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as error:
        raise CertificateError(f"{path}: cannot write ({error.strerror})") from None
    try:
        with os.fdopen(descriptor, "wb") as file:
            os.fchmod(file.fileno(), mode)
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException as error:
        with suppress(FileNotFoundError):
            os.unlink(temporary)
        if isinstance(error, OSError):
            raise CertificateError(f"{path}: cannot write ({error.strerror})") from None
        raise


def _pem_of(certificates: Sequence[x509.Certificate]) -> bytes:
    return b"".join(certificate.public_bytes(serialization.Encoding.PEM) for certificate in certificates)


def _public_key_bytes(public_key: PublicKeyTypes) -> bytes:
    return public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
