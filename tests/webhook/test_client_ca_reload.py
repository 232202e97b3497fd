"""mTLS: the client CA file is reloaded like the serving certificate, and a CA taken out of it stops being trusted."""

from __future__ import annotations

import ssl
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from certs.authority import KeyPair, generate_ca
from relay.serve import RelayServer
from relay.settings import Settings
from tests.admission_reviews import admission_review
from tests.policies import flink_policy
from tests.tls_clients import client_tls


def client_certificate(ca: KeyPair, path: Path) -> Path:
    now = datetime.now(UTC)
    key = ec.generate_private_key(ec.SECP256R1())
    certificate = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "api")]))
        .issuer_name(ca.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=1))
        .not_valid_after(now + timedelta(hours=1))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca.private_key, hashes.SHA256())
    )
    path.write_bytes(
        certificate.public_bytes(serialization.Encoding.PEM)
        + key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return path


async def status_with(relay: RelayServer, client_pem: Path) -> int | str:
    assert relay.files.ca_file is not None
    context = client_tls(relay.files.ca_file)
    context.load_cert_chain(client_pem)
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context, force_close=True)) as session:
            async with session.post(
                f"{relay.url.replace('127.0.0.1', 'localhost')}/validate", json=admission_review(flink_policy())
            ) as response:
                return response.status
    except (aiohttp.ClientError, ssl.SSLError, OSError) as error:
        return type(error).__name__


async def test_a_replaced_client_ca_is_used_for_new_connections(tmp_path: Path) -> None:
    now = datetime.now(UTC)
    old_ca, new_ca = (generate_ca(name, now, timedelta(days=1)) for name in ("apiserver-ca-1", "apiserver-ca-2"))
    old_client = client_certificate(old_ca, tmp_path / "old.pem")
    new_client = client_certificate(new_ca, tmp_path / "new.pem")
    client_ca_file = tmp_path / "client-ca.crt"
    client_ca_file.write_bytes(old_ca.certificate_pem)
    relay = RelayServer(Settings(port=0, cert_dir=tmp_path / "certs", client_ca_file=client_ca_file))
    await relay.start()
    try:
        assert await status_with(relay, old_client) == 200
        assert await status_with(relay, new_client) != 200

        client_ca_file.write_bytes(new_ca.certificate_pem)  # the apiserver's client CA rotated
        relay.refresh_certificate()

        assert await status_with(relay, new_client) == 200
        assert await status_with(relay, old_client) != 200, "a CA taken out of the file is still trusted"
    finally:
        await relay.stop()
