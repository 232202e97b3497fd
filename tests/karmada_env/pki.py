"""The environment's PKI, as Karmada's ``hack/deploy-karmada.sh`` makes it with openssl: one CA (serving and client
certificates), a front-proxy CA for the aggregation layer, a client certificate in ``system:masters`` for Karmada's
components and the tests, one for the relay as its ServiceAccount (so the RBAC of ``manifests/deploy/rbac.yaml`` is
what it gets), the ServiceAccount signing key, and a static token for the member clusters."""

from __future__ import annotations

import datetime
import ipaddress
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.apiserver import write_token_file
from tests.processes import LOOPBACK

# Who the member clusters' static token is (the Clusters' secrets carry it).
MEMBER_USER = "karmada-member-admin"


@dataclass(frozen=True)
class CertPair:
    cert: Path
    key: Path


class Authority:
    """A CA that writes PEM files: what ``util::create_certkey`` of Karmada's scripts does with openssl."""

    def __init__(self, directory: Path, name: str) -> None:
        self.directory = directory
        self._key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = datetime.datetime.now(datetime.UTC)
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    key_cert_sign=True,
                    crl_sign=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self._key, hashes.SHA256())
        )
        self.pem = self._cert.public_bytes(serialization.Encoding.PEM)
        self.cert_file = directory / f"{name}.crt"
        self.cert_file.write_bytes(self.pem)

    def issue(
        self,
        name: str,
        *,
        common_name: str,
        organizations: Sequence[str] = (),
        dns: Sequence[str] = (),
        ips: Sequence[str] = (),
        server: bool = False,
        client: bool = False,
    ) -> CertPair:
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name(
            [
                x509.NameAttribute(NameOID.COMMON_NAME, common_name),
                *(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations),
            ]
        )
        now = datetime.datetime.now(datetime.UTC)
        usages = ([ExtendedKeyUsageOID.SERVER_AUTH] if server else []) + (
            [ExtendedKeyUsageOID.CLIENT_AUTH] if client else []
        )
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        )
        names = [x509.DNSName(n) for n in dns] + [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        pair = CertPair(self.directory / f"{name}.crt", self.directory / f"{name}.key")
        pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        pair.key.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        pair.key.chmod(0o600)
        return pair

    def issue_member(self, member: str) -> CertPair:
        """A member kube-apiserver's serving certificate, for its loopback address."""
        return self.issue(member, common_name=member, server=True, dns=["localhost"], ips=[LOOPBACK])


def write_pki(
    directory: Path, *, members: Sequence[str], member_token: str, relay_user: str, relay_namespace: str
) -> Authority:
    """Everything the start needs, in ``directory`` (owner only); the CA, which signs a member added later."""
    directory.mkdir(mode=0o700)
    ca = Authority(directory, "ca")
    front_proxy = Authority(directory, "front-proxy-ca")
    front_proxy.issue("front-proxy-client", common_name="front-proxy-client", client=True)
    local = dict(dns=["localhost"], ips=[LOOPBACK])
    ca.issue(
        "karmada-apiserver",
        common_name="karmada-apiserver",
        server=True,
        dns=["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"],
        ips=[LOOPBACK],
    )
    # The aggregator dials the Service's externalName (localhost) and verifies the name <service>.<ns>.svc.
    ca.issue(
        "karmada-aggregated-apiserver",
        common_name="karmada-aggregated-apiserver",
        server=True,
        dns=["karmada-aggregated-apiserver.karmada-system.svc", "localhost"],
        ips=[LOOPBACK],
    )
    webhook_dir = directory / "karmada-webhook"
    webhook_dir.mkdir()
    webhook = ca.issue("karmada-webhook", common_name="karmada-webhook", server=True, **local)
    shutil.copy(webhook.cert, webhook_dir / "tls.crt")
    shutil.copy(webhook.key, webhook_dir / "tls.key")
    for member in members:
        ca.issue_member(member)
    ca.issue("admin", common_name="karmada-admin", organizations=["system:masters"], client=True)
    ca.issue(
        "relay",
        common_name=relay_user,
        organizations=["system:serviceaccounts", f"system:serviceaccounts:{relay_namespace}"],
        client=True,
    )
    sa_key = ec.generate_private_key(ec.SECP256R1())
    (directory / "sa.key").write_bytes(
        sa_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    (directory / "sa.pub").write_bytes(
        sa_key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    write_token_file(directory / "member-tokens.csv", member_token, MEMBER_USER, "system:masters")
    return ca
