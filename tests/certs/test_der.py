"""certs/der.py: the names and expiry read without `cryptography` are the ones `cryptography` reads, and anything
that is not a well-formed certificate is refused with one line."""

from __future__ import annotations

import base64
from datetime import timedelta
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.name import _ASN1Type
from cryptography.x509.oid import NameOID

from certs.authority import generate_ca, generate_serving_certificate
from certs.der import DerError, pem_certificates, read_certificate, read_pem_certificates
from certs.serving import ensure_certificates
from certs.store import CertificateFilesInvalid, certificate_expiry, read_ca_bundle
from tests.certs.cert_files import NOW

# RFC 5280, 4.1.2.5: dates through 2049 are UTCTime, from 2050 GeneralizedTime.
BEFORE_2050 = timedelta(days=365)
AFTER_2050 = timedelta(days=365 * 30)
KEYS = {
    "rsa": lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048),
    "ec": lambda: ec.generate_private_key(ec.SECP384R1()),
    "ed25519": ed25519.Ed25519PrivateKey.generate,
}


def common_names(name: x509.Name) -> tuple[str, ...]:
    return tuple(attribute.value for attribute in name.get_attributes_for_oid(NameOID.COMMON_NAME))


def assert_reads_as_cryptography_does(pem: bytes) -> None:
    ours, theirs = read_pem_certificates(pem), x509.load_pem_x509_certificates(pem)
    assert len(ours) == len(theirs)
    for mine, reference in zip(ours, theirs, strict=True):
        assert mine.subject_common_names == common_names(reference.subject)
        assert mine.issuer_common_names == common_names(reference.issuer)
        assert mine.not_after == reference.not_valid_after_utc
        assert x509.load_pem_x509_certificate(mine.pem) == reference


@pytest.mark.parametrize("valid_for", [BEFORE_2050, AFTER_2050], ids=["UTCTime", "GeneralizedTime"])
@pytest.mark.parametrize("key", sorted(KEYS))
def test_ca_and_leaf_read_as_cryptography_reads_them(key, valid_for):
    ca = generate_ca("cert-manager-ca", NOW, valid_for, key=KEYS[key]())
    leaf = generate_serving_certificate(ca, ["webhook.example"], ["10.0.0.1"], NOW, valid_for)

    assert_reads_as_cryptography_does(ca.certificate_pem)
    assert_reads_as_cryptography_does(leaf.certificate_pem)
    assert read_pem_certificates(leaf.certificate_pem)[0].not_after == NOW + valid_for


def test_after_2050_is_generalized_time_and_before_utc_time():
    # The parametrisation above covers both encodings only if cryptography really switches at 2050.
    short, long = (
        generate_ca("ca", NOW, valid_for).certificate.tbs_certificate_bytes for valid_for in (BEFORE_2050, AFTER_2050)
    )
    assert b"\x17\x0d" + b"260301120000Z" in short
    assert b"\x18\x0f" + b"20550222120000Z" in long


def test_a_chain_with_text_around_and_between_the_blocks_reads_every_certificate():
    root = generate_ca("root", NOW, AFTER_2050)
    leaf = generate_serving_certificate(root, ["a.example"], [], NOW, BEFORE_2050)
    # As `openssl x509 -text` and some tools write it: text before each block, CRLF lines, a key block in between.
    pem = (
        b"subject=CN = a.example\r\nissuer=CN = root\r\n"
        + leaf.certificate_pem.replace(b"\n", b"\r\n")
        + b"# comment\n"
        + leaf.private_key_pem
        + b"Certificate:\n    Data: ...\n"
        + root.certificate_pem
    )

    assert_reads_as_cryptography_does(pem)
    assert [fields.subject_common_names for fields in read_pem_certificates(pem)] == [("a.example",), ("root",)]


def test_names_in_other_string_types_and_several_common_names_are_read():
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, "ünïcode", _ASN1Type.BMPString),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "org"),
            x509.NameAttribute(NameOID.COMMON_NAME, "printable", _ASN1Type.PrintableString),
        ]
    )
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(NOW)
        .not_valid_after(NOW + BEFORE_2050)
        .sign(key, hashes.SHA256())
    )

    fields = read_certificate(certificate.public_bytes(serialization.Encoding.DER))

    assert fields.subject_common_names == ("ünïcode", "printable") == fields.issuer_common_names


# --- hostile input -------------------------------------------------------------------------------------------------


def der_of_a_certificate() -> bytes:
    return pem_certificates(generate_ca("ca", NOW, BEFORE_2050).certificate_pem)[0]


def pem_block(der: bytes) -> bytes:
    return b"-----BEGIN CERTIFICATE-----\n" + base64.encodebytes(der) + b"-----END CERTIFICATE-----\n"


def malformed() -> dict[str, bytes]:
    der = der_of_a_certificate()
    return {
        "empty": b"",
        "text": b"hello",
        "binary": bytes(range(256)),
        "a key only": generate_ca("ca", NOW, BEFORE_2050).private_key_pem,
        "unterminated block": b"-----BEGIN CERTIFICATE-----\n" + base64.encodebytes(der),
        "unterminated second block": pem_block(der) + b"-----BEGIN CERTIFICATE-----\n" + base64.encodebytes(der),
        "a block inside a block": b"-----BEGIN CERTIFICATE-----\n" + pem_block(der),
        # Read in one pass: a lazy regular expression would scan to the end once per line, for hours.
        "BEGIN lines only": b"-----BEGIN CERTIFICATE-----\n" * 30_000,  # 840 KB: under the size limit
        "not base64": b"-----BEGIN CERTIFICATE-----\nnot*base64!\n-----END CERTIFICATE-----\n",
        "PEM headers": b"-----BEGIN CERTIFICATE-----\nProc-Type: 4,ENCRYPTED\n\nAAAA\n-----END CERTIFICATE-----\n",
        "empty block": pem_block(b""),
        "truncated": pem_block(der[:-1]),
        "truncated header": pem_block(der[:1]),
        "trailing bytes": pem_block(der + b"\x00"),
        "not a SEQUENCE": pem_block(b"\x31" + der[1:]),
        "indefinite length": pem_block(b"\x30\x80" + der[4:] + b"\x00\x00"),
        "length past the end": pem_block(b"\x30\x84\x7f\xff\xff\xff" + der[4:]),
        "absurd length": pem_block(b"\x30\x89" + b"\xff" * 9 + der[4:]),
        "non-minimal length": pem_block(b"\x30\x83\x00" + der[2:]),
        "high tag number": pem_block(b"\x3f\x81\x00"),
        "empty SEQUENCE": pem_block(b"\x30\x00"),
        "nested garbage": pem_block(b"\x30\x06\x30\x04\x02\x02\x01\x01"),
        "tbs fields missing": pem_block(b"\x30\x0b\x30\x03\x02\x01\x01\x30\x00\x03\x02\x00\x00"),
        "bad time": pem_block(der.replace(b"260301120000Z", b"269901120000Z")),
        "time without Z": pem_block(der.replace(b"260301120000Z", b"2603011200000")),
        "time of the wrong type": pem_block(der.replace(b"\x17\x0d260301120000Z", b"\x04\x0d260301120000Z")),
        "CN not a string": pem_block(der.replace(b"\x55\x04\x03\x0c\x02ca", b"\x55\x04\x03\x04\x02ca")),
        "CN not UTF-8": pem_block(der.replace(b"\x55\x04\x03\x0c\x02ca", b"\x55\x04\x03\x0c\x02\xff\xfe")),
    }


@pytest.mark.parametrize("shape", sorted(malformed()))
def test_malformed_input_is_refused_with_der_error(shape):
    with pytest.raises(DerError) as refused:
        read_pem_certificates(malformed()[shape])
    assert "\n" not in str(refused.value) and len(str(refused.value)) < 100


@pytest.mark.parametrize("shape", sorted(malformed()))
@pytest.mark.parametrize("name", ["tls.crt", "ca.crt"])
def test_malformed_external_file_is_refused_with_the_one_line_message(tmp_path, shape, name):
    ca = generate_ca("cert-manager-ca", NOW, BEFORE_2050)
    leaf = generate_serving_certificate(ca, ["webhook.example"], [], NOW, BEFORE_2050)
    files = {"tls.crt": leaf.certificate_pem, "tls.key": leaf.private_key_pem, "ca.crt": ca.certificate_pem}
    for file, content in {**files, name: malformed()[shape]}.items():
        (tmp_path / file).write_bytes(content)

    with pytest.raises(CertificateFilesInvalid) as refused:
        ensure_certificates(tmp_path, None, None, NOW)

    assert str(refused.value) == f"{tmp_path / name}: not a PEM certificate"
    assert refused.value.__cause__ is None


def test_expiry_and_bundle_of_a_malformed_file_are_refused_naming_it(tmp_path):
    (tmp_path / "tls.crt").write_bytes(malformed()["truncated"])

    with pytest.raises(CertificateFilesInvalid, match="tls.crt: not a PEM certificate"):
        certificate_expiry(tmp_path / "tls.crt")
    with pytest.raises(CertificateFilesInvalid, match="tls.crt: not a PEM certificate"):
        read_ca_bundle(tmp_path)


def test_the_bundle_is_the_certificates_alone_re_encoded(tmp_path: Path):
    ca = generate_ca("cert-manager-ca", NOW, BEFORE_2050)
    (tmp_path / "ca.crt").write_bytes(b"# the issuer\n" + ca.certificate_pem + ca.private_key_pem)

    assert read_ca_bundle(tmp_path) == ca.certificate_pem


# --- the key, as OpenSSL loads it ----------------------------------------------------------------------------------


def write_cert_manager_dir(cert_dir: Path, key_pem: bytes | None = None) -> None:
    ca = generate_ca("cert-manager-ca", NOW, BEFORE_2050, key=KEYS["rsa"]())
    leaf = generate_serving_certificate(ca, ["webhook.example"], [], NOW, BEFORE_2050)
    for name, content in (
        ("tls.crt", leaf.certificate_pem),
        ("tls.key", key_pem or leaf.private_key_pem),
        ("ca.crt", ca.certificate_pem),
    ):
        (cert_dir / name).write_bytes(content)


def test_an_encrypted_key_is_refused_without_asking_for_a_password(tmp_path):
    key = ec.generate_private_key(ec.SECP256R1())
    encrypted = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.BestAvailableEncryption(b"secret")
    )
    write_cert_manager_dir(tmp_path, encrypted)

    with pytest.raises(CertificateFilesInvalid) as refused:
        ensure_certificates(tmp_path, None, None, NOW)

    assert str(refused.value) == f"{tmp_path / 'tls.key'}: not an unencrypted PEM private key (PKCS#8, PKCS#1 or SEC1)"


def test_a_key_of_another_algorithm_is_not_the_certificates(tmp_path):
    write_cert_manager_dir(
        tmp_path,
        KEYS["rsa"]().private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
        ),
    )

    with pytest.raises(CertificateFilesInvalid, match="tls.key: is not the private key of the certificate in"):
        ensure_certificates(tmp_path, None, None, NOW)


def test_a_certificate_openssl_cannot_parse_is_refused_though_its_names_read(tmp_path):
    write_cert_manager_dir(tmp_path)
    der = pem_certificates((tmp_path / "ca.crt").read_bytes())[0]
    # The subjectPublicKeyInfo's algorithm OID (rsaEncryption) made one of no known algorithm: names and validity
    # still read, OpenSSL refuses the certificate.
    damaged = der.replace(bytes.fromhex("2a864886f70d010101"), bytes.fromhex("2a864886f70d0101ff"), 1)
    assert damaged != der and read_certificate(damaged).subject_common_names == ("cert-manager-ca",)
    (tmp_path / "ca.crt").write_bytes(pem_block(damaged))

    with pytest.raises(CertificateFilesInvalid, match="ca.crt: not a PEM certificate"):
        ensure_certificates(tmp_path, None, None, NOW)
