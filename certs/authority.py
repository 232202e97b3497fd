"""Certificate authority: make a CA and the webhook's serving certificate.

Pure generation with ``cryptography``: no files, no clock of its own (``now`` is always passed in), so every
validity window can be tested exactly. Storing, renewing and reloading live in ``certs.managed`` and
``certs.reload``.

Why we generate at all: a webhook whose only TLS source is cert-manager makes cert-manager a hard prerequisite
(Flink operator chart, spotify/flink-on-k8s-operator #112), and a webhook whose self-made certificate misses the
Service names fails in-cluster (kopf #785: ``svc.ns.svc`` missing). ``certs.names.serving_names`` lists every name
the apiserver may dial.
"""

from __future__ import annotations

import ipaddress
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cached_property

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

# Certificates start this much before `now`: a node whose clock runs a little behind ours (the apiserver's, or a
# second replica's) would otherwise reject a freshly issued certificate as "not yet valid". Five minutes is the
# skew Kerberos tolerates by default and what cert-manager-style issuers commonly backdate by.
CLOCK_SKEW = timedelta(minutes=5)

SigningKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey | ed448.Ed448PrivateKey
SIGNING_KEY_TYPES = (rsa.RSAPrivateKey, ec.EllipticCurvePrivateKey, ed25519.Ed25519PrivateKey, ed448.Ed448PrivateKey)


@dataclass(frozen=True)
class KeyPair:
    """A certificate and its private key, both PEM, with the fields we decide on parsed out."""

    certificate_pem: bytes
    private_key_pem: bytes

    @cached_property
    def certificate(self) -> x509.Certificate:
        return x509.load_pem_x509_certificate(self.certificate_pem)

    @cached_property
    def private_key(self) -> SigningKey:
        """The key, of a type that can sign certificates (we make ECDSA keys; a CA placed in the cert dir by an
        operator may hold RSA or EdDSA)."""
        key = serialization.load_pem_private_key(self.private_key_pem, password=None)
        if not isinstance(key, SIGNING_KEY_TYPES):
            raise TypeError(f"a KeyPair holds an RSA, ECDSA or EdDSA key, got {type(key).__name__}")
        return key

    @property
    def not_before(self) -> datetime:
        return self.certificate.not_valid_before_utc

    @property
    def not_after(self) -> datetime:
        return self.certificate.not_valid_after_utc

    @property
    def dns_names(self) -> tuple[str, ...]:
        return tuple(_subject_alternative_names(self.certificate).get_values_for_type(x509.DNSName))

    @property
    def ip_addresses(self) -> tuple[str, ...]:
        sans = _subject_alternative_names(self.certificate)
        return tuple(str(address) for address in sans.get_values_for_type(x509.IPAddress))


def generate_ca(common_name: str, now: datetime, valid_for: timedelta, key: SigningKey | None = None) -> KeyPair:
    """Make a self-signed CA that may sign serving certificates and nothing below them.

    ``path_length=0`` keeps a leaked CA key from minting intermediate CAs; the key may only sign certificates
    and CRLs. Validity runs from ``now - CLOCK_SKEW`` (so the leaves it signs, backdated the same way, start
    inside it) to ``now + valid_for``.

    With ``key``, the CA certificate is made for that existing key: with the same name it verifies every leaf the
    key signed before (issuer name and signature are all a verifier compares), which is how a lost ``ca.crt`` is
    rebuilt without failing any client.
    """
    _require_aware(now)
    _require_positive(valid_for)
    key = key or ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    certificate = (
        _certificate_builder(name, name, key, now, now + valid_for, ca=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, _signature_hash(key))
    )
    return _key_pair(certificate, key)


def generate_serving_certificate(
    ca: KeyPair,
    dns_names: Sequence[str],
    ip_addresses: Sequence[str],
    now: datetime,
    valid_for: timedelta,
) -> KeyPair:
    """Make a TLS server certificate for the given names, signed by ``ca``.

    Validity runs from ``now - CLOCK_SKEW`` to ``now + valid_for`` but never past the CA's own expiry: a leaf
    that outlives its issuer fails verification anyway, and the earlier date makes the store renew both together.
    """
    _require_aware(now)
    _require_positive(valid_for)
    if not dns_names and not ip_addresses:
        raise ValueError("a serving certificate needs at least one DNS name or IP address")
    addresses = [ipaddress.ip_address(address) for address in ip_addresses]
    key = ec.generate_private_key(ec.SECP256R1())
    ca_certificate = ca.certificate
    subject_name = dns_names[0] if dns_names else str(addresses[0])
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject_name)])
    certificate = (
        _certificate_builder(subject, ca_certificate.subject, key, now, min(now + valid_for, ca.not_after), ca=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName(name) for name in dns_names] + [x509.IPAddress(address) for address in addresses]
            ),
            critical=False,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.private_key.public_key()),
            critical=False,
        )
        .sign(ca.private_key, _signature_hash(ca.private_key))
    )
    return _key_pair(certificate, key)


def _certificate_builder(
    subject: x509.Name, issuer: x509.Name, key: SigningKey, now: datetime, not_after: datetime, ca: bool
) -> x509.CertificateBuilder:
    """What our CA and serving certificates share: a fresh serial, validity from ``now - CLOCK_SKEW`` to
    ``not_after``, and the critical constraints of their role. A CA (``path_length=0``) may sign certificates and
    CRLs and nothing else; a leaf is no CA and may only sign (its side of a TLS handshake)."""
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(_serial_number())
        .not_valid_before(now - CLOCK_SKEW)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca else None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=not ca,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=ca,
                crl_sign=ca,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    )


def _signature_hash(key: SigningKey) -> hashes.SHA256 | None:
    # EdDSA signs the message itself and takes no separate digest; RSA and ECDSA sign its SHA-256.
    return None if isinstance(key, (ed25519.Ed25519PrivateKey, ed448.Ed448PrivateKey)) else hashes.SHA256()


def _key_pair(certificate: x509.Certificate, key: SigningKey) -> KeyPair:
    return KeyPair(
        certificate_pem=certificate.public_bytes(serialization.Encoding.PEM),
        private_key_pem=key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )


def _subject_alternative_names(certificate: x509.Certificate) -> x509.SubjectAlternativeName:
    try:
        return certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return x509.SubjectAlternativeName([])


def _serial_number() -> int:
    # RFC 5280 caps serials at 20 octets and asks for positive numbers; 159 random bits stay inside both.
    return secrets.randbits(159) | 1


def _require_aware(now: datetime) -> None:
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("now must be timezone-aware (certificate times are UTC)")


def _require_positive(valid_for: timedelta) -> None:
    if valid_for <= timedelta(0):
        raise ValueError("valid_for must be positive")
