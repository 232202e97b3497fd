"""Generation of the CA and the serving certificate: names, validity windows, extensions, signatures."""

from __future__ import annotations

import ipaddress
from datetime import timedelta

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from certs.authority import (
    CLOCK_SKEW,
    KeyPair,
    generate_ca,
    generate_serving_certificate,
)
from certs.serving_names import serving_names
from tests.certs.cert_files import NOW

YEAR = timedelta(days=365)
QUARTER = timedelta(days=90)


def test_local_names_only_without_a_service():
    assert serving_names(None, None) == (("localhost",), ("127.0.0.1", "::1"))


def test_service_names_cover_every_spelling_the_apiserver_may_dial():
    dns_names, ip_addresses = serving_names("failover-relay", "karmada-system")

    assert dns_names == (
        "failover-relay",
        "failover-relay.karmada-system",
        "failover-relay.karmada-system.svc",
        "failover-relay.karmada-system.svc.cluster.local",
        "localhost",
    )
    assert ip_addresses == ("127.0.0.1", "::1")


@pytest.mark.parametrize("service, namespace", [("relay", None), (None, "karmada-system")])
def test_service_without_namespace_is_refused(service, namespace):
    with pytest.raises(ValueError, match="go together"):
        serving_names(service, namespace)


def test_serving_certificate_carries_every_san():
    ca = generate_ca("test-ca", NOW, YEAR)
    dns_names, ip_addresses = serving_names("failover-relay", "karmada-system")

    leaf = generate_serving_certificate(ca, dns_names, ip_addresses, NOW, QUARTER)

    assert leaf.dns_names == dns_names
    sans = leaf.certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1")]
    assert leaf.ip_addresses == ("127.0.0.1", "::1")


def test_serving_certificate_is_signed_by_the_ca_for_server_auth_only():
    ca = generate_ca("test-ca", NOW, YEAR)
    leaf = generate_serving_certificate(ca, ["localhost"], ["127.0.0.1"], NOW, QUARTER)

    leaf.certificate.verify_directly_issued_by(ca.certificate)
    extensions = leaf.certificate.extensions
    assert extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    assert list(extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [ExtendedKeyUsageOID.SERVER_AUTH]
    assert extensions.get_extension_for_class(x509.KeyUsage).value.key_cert_sign is False
    assert leaf.certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "localhost"


def test_ca_may_sign_leaves_but_not_intermediate_cas():
    ca = generate_ca("test-ca", NOW, YEAR)

    constraints = ca.certificate.extensions.get_extension_for_class(x509.BasicConstraints)
    assert constraints.critical and constraints.value.ca and constraints.value.path_length == 0
    usage = ca.certificate.extensions.get_extension_for_class(x509.KeyUsage).value
    assert usage.key_cert_sign and usage.crl_sign and not usage.digital_signature
    assert ca.certificate.issuer == ca.certificate.subject


def test_validity_is_backdated_by_the_clock_skew():
    ca = generate_ca("test-ca", NOW, YEAR)
    leaf = generate_serving_certificate(ca, ["localhost"], [], NOW, QUARTER)

    assert ca.not_before == NOW - CLOCK_SKEW and ca.not_after == NOW + YEAR
    assert leaf.not_before == NOW - CLOCK_SKEW and leaf.not_after == NOW + QUARTER


def test_serving_certificate_never_outlives_its_ca():
    ca = generate_ca("test-ca", NOW, timedelta(days=10))

    leaf = generate_serving_certificate(ca, ["localhost"], [], NOW, QUARTER)

    assert leaf.not_after == ca.not_after


def test_serial_numbers_are_positive_random_and_within_20_octets():
    ca = generate_ca("test-ca", NOW, YEAR)
    serials = {
        generate_serving_certificate(ca, ["localhost"], [], NOW, QUARTER).certificate.serial_number for _ in range(5)
    }

    assert len(serials) == 5
    assert all(0 < serial < 2**159 for serial in serials)


def test_ip_only_certificate_is_named_after_its_address():
    ca = generate_ca("test-ca", NOW, YEAR)

    leaf = generate_serving_certificate(ca, [], ["::1"], NOW, QUARTER)

    assert leaf.dns_names == () and leaf.ip_addresses == ("::1",)
    assert leaf.certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "::1"


def test_certificate_without_any_name_is_refused():
    ca = generate_ca("test-ca", NOW, YEAR)
    with pytest.raises(ValueError, match="at least one DNS name or IP address"):
        generate_serving_certificate(ca, [], [], NOW, QUARTER)


def test_naive_time_is_refused():
    with pytest.raises(ValueError, match="timezone-aware"):
        generate_ca("test-ca", NOW.replace(tzinfo=None), YEAR)


@pytest.mark.parametrize("valid_for", [timedelta(0), timedelta(days=-1)])
def test_non_positive_validity_is_refused(valid_for):
    with pytest.raises(ValueError, match="positive"):
        generate_ca("test-ca", NOW, valid_for)


@pytest.mark.parametrize(
    "make_key",
    [
        lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048),
        ed25519.Ed25519PrivateKey.generate,
    ],
    ids=["rsa", "ed25519"],
)
def test_an_operator_supplied_ca_of_another_key_type_can_sign(make_key):
    key = make_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "operator-ca")])
    algorithm = None if isinstance(key, ed25519.Ed25519PrivateKey) else hashes.SHA256()
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(NOW - CLOCK_SKEW)
        .not_valid_after(NOW + YEAR)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(key, algorithm)
    )
    ca = KeyPair(
        certificate_pem=certificate.public_bytes(serialization.Encoding.PEM),
        private_key_pem=key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
    )

    leaf = generate_serving_certificate(ca, ["localhost"], [], NOW, QUARTER)

    leaf.certificate.verify_directly_issued_by(ca.certificate)
