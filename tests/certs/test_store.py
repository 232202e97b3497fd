"""The cert dir: issuing, reusing, renewing (with CA overlap), external files, corrupt files, the CA bundle."""

from __future__ import annotations

import stat
from datetime import UTC, timedelta
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from certs.authority import generate_ca, generate_serving_certificate
from certs.serving import DEFAULT_CERT_VALIDITY, DEFAULT_RENEW_BEFORE, ensure_certificates
from certs.store import MAX_FILE_BYTES, CertificateError, CertificateFilesInvalid, certificate_expiry, read_ca_bundle
from tests.certs.cert_files import NOW, bundle, certificate

FILES = ("ca.crt", "ca.key", "tls.crt", "tls.key")


def snapshot(cert_dir: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(cert_dir.iterdir())}


def write_external(cert_dir: Path, *, with_ca: bool = True, key_of_other: bool = False) -> dict[str, bytes]:
    """Files as cert-manager mounts them: ca.crt, tls.crt, tls.key, and no ca.key."""
    ca = generate_ca("cert-manager-ca", NOW, timedelta(days=365))
    leaf = generate_serving_certificate(ca, ["webhook.example"], [], NOW, timedelta(days=90))
    key = leaf.private_key_pem
    if key_of_other:
        key = generate_serving_certificate(ca, ["other.example"], [], NOW, timedelta(days=90)).private_key_pem
    cert_dir.mkdir(exist_ok=True)
    (cert_dir / "tls.crt").write_bytes(leaf.certificate_pem)
    (cert_dir / "tls.key").write_bytes(key)
    if with_ca:
        (cert_dir / "ca.crt").write_bytes(ca.certificate_pem)
    return snapshot(cert_dir)


# --- issuing ---------------------------------------------------------------------------------------------------


def test_empty_dir_gets_ca_and_serving_certificate(tmp_path):
    cert_dir = tmp_path / "certs"

    files = ensure_certificates(cert_dir, "failover-relay", "karmada-system", NOW)

    assert sorted(path.name for path in cert_dir.iterdir()) == sorted(FILES)
    assert files.managed and files.renewed
    assert (files.ca_file, files.cert_file, files.key_file) == (
        cert_dir / "ca.crt",
        cert_dir / "tls.crt",
        cert_dir / "tls.key",
    )
    leaf = certificate(files.cert_file)
    leaf.verify_directly_issued_by(certificate(files.ca_file))
    sans = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(sans.get_values_for_type(x509.DNSName)) == {
        "failover-relay",
        "failover-relay.karmada-system",
        "failover-relay.karmada-system.svc",
        "failover-relay.karmada-system.svc.cluster.local",
        "localhost",
    }
    assert {str(address) for address in sans.get_values_for_type(x509.IPAddress)} == {"127.0.0.1", "::1"}
    assert files.not_after == leaf.not_valid_after_utc == NOW + DEFAULT_CERT_VALIDITY


def test_key_files_are_private_and_the_dir_is_owner_only(tmp_path):
    cert_dir = tmp_path / "certs"

    ensure_certificates(cert_dir, None, None, NOW)

    modes = {name: stat.S_IMODE((cert_dir / name).stat().st_mode) for name in FILES}
    assert modes == {"ca.crt": 0o644, "tls.crt": 0o644, "ca.key": 0o600, "tls.key": 0o600}
    assert stat.S_IMODE(cert_dir.stat().st_mode) == 0o700


def test_no_temporary_files_are_left_behind(tmp_path):
    ensure_certificates(tmp_path, None, None, NOW)

    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(FILES)


def test_issued_key_matches_the_certificate(tmp_path):
    files = ensure_certificates(tmp_path, None, None, NOW)

    key = serialization.load_pem_private_key(files.key_file.read_bytes(), password=None)
    assert key.public_key() == certificate(files.cert_file).public_key()


# --- reuse and renewal -----------------------------------------------------------------------------------------


def test_valid_files_are_reused_byte_for_byte(tmp_path):
    ensure_certificates(tmp_path, "failover-relay", "karmada-system", NOW)
    before = snapshot(tmp_path)

    files = ensure_certificates(tmp_path, "failover-relay", "karmada-system", NOW + timedelta(days=59))

    assert snapshot(tmp_path) == before
    assert not files.renewed and files.managed


def test_serving_certificate_is_renewed_once_inside_the_renewal_window(tmp_path):
    ensure_certificates(tmp_path, None, None, NOW)
    before = snapshot(tmp_path)
    later = NOW + DEFAULT_CERT_VALIDITY - DEFAULT_RENEW_BEFORE

    files = ensure_certificates(tmp_path, None, None, later)

    after = snapshot(tmp_path)
    assert files.renewed and files.not_after == later + DEFAULT_CERT_VALIDITY
    assert after["tls.crt"] != before["tls.crt"] and after["tls.key"] != before["tls.key"]
    assert (after["ca.crt"], after["ca.key"]) == (before["ca.crt"], before["ca.key"]), "the CA is not due yet"
    certificate(tmp_path / "tls.crt").verify_directly_issued_by(certificate(tmp_path / "ca.crt"))


def test_serving_certificate_is_reused_just_before_the_renewal_window(tmp_path):
    ensure_certificates(tmp_path, None, None, NOW)
    before = snapshot(tmp_path)

    ensure_certificates(tmp_path, None, None, NOW + DEFAULT_CERT_VALIDITY - DEFAULT_RENEW_BEFORE - timedelta(seconds=1))

    assert snapshot(tmp_path) == before


def test_renewed_ca_keeps_the_old_ca_in_the_bundle_until_it_expires(tmp_path):
    ca_valid_for, cert_valid_for, renew_before = timedelta(days=100), timedelta(days=40), timedelta(days=10)
    ensure_certificates(tmp_path, None, None, NOW, ca_valid_for, cert_valid_for, renew_before)
    old_ca = certificate(tmp_path / "ca.crt")
    renewal = NOW + ca_valid_for - renew_before

    files = ensure_certificates(tmp_path, None, None, renewal, ca_valid_for, cert_valid_for, renew_before)

    new_ca, kept = bundle(tmp_path / "ca.crt")
    assert kept == old_ca and new_ca != old_ca
    assert new_ca.not_valid_after_utc == renewal + ca_valid_for
    assert files.renewed
    certificate(files.cert_file).verify_directly_issued_by(new_ca)
    ca_key = serialization.load_pem_private_key((tmp_path / "ca.key").read_bytes(), password=None)
    assert ca_key.public_key() == new_ca.public_key()

    # The next CA renewal happens after the first CA expired: only then does it leave the bundle.
    second_renewal = renewal + ca_valid_for - renew_before
    ensure_certificates(tmp_path, None, None, second_renewal, ca_valid_for, cert_valid_for, renew_before)

    newest, still_kept = bundle(tmp_path / "ca.crt")
    assert still_kept == new_ca and newest not in (old_ca, new_ca)


def test_bundle_with_the_old_ca_verifies_a_leaf_of_either_ca(tmp_path):
    ca_valid_for, cert_valid_for, renew_before = timedelta(days=100), timedelta(days=40), timedelta(days=10)
    ensure_certificates(tmp_path, None, None, NOW, ca_valid_for, cert_valid_for, renew_before)
    old_leaf = certificate(tmp_path / "tls.crt")

    ensure_certificates(
        tmp_path, None, None, NOW + ca_valid_for - renew_before, ca_valid_for, cert_valid_for, renew_before
    )

    new_leaf = certificate(tmp_path / "tls.crt")
    new_ca, old_ca = bundle(tmp_path / "ca.crt")
    old_leaf.verify_directly_issued_by(old_ca)
    new_leaf.verify_directly_issued_by(new_ca)


def test_requesting_a_new_service_name_reissues_the_certificate(tmp_path):
    ensure_certificates(tmp_path, None, None, NOW)
    before = snapshot(tmp_path)

    files = ensure_certificates(tmp_path, "failover-relay", "karmada-system", NOW + timedelta(minutes=1))

    assert files.renewed
    assert snapshot(tmp_path)["tls.crt"] != before["tls.crt"]
    assert snapshot(tmp_path)["ca.crt"] == before["ca.crt"]
    sans = certificate(files.cert_file).extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "failover-relay.karmada-system.svc" in sans.get_values_for_type(x509.DNSName)


def test_clock_gone_back_before_the_certificate_reissues_it(tmp_path):
    ensure_certificates(tmp_path, None, None, NOW)
    before = snapshot(tmp_path)

    ensure_certificates(tmp_path, None, None, NOW - timedelta(days=1))

    assert snapshot(tmp_path)["ca.crt"] != before["ca.crt"]
    assert certificate(tmp_path / "tls.crt").not_valid_before_utc <= NOW - timedelta(days=1)


def test_renewal_window_as_long_as_the_validity_is_refused(tmp_path):
    with pytest.raises(ValueError, match="renew_before"):
        ensure_certificates(
            tmp_path, None, None, NOW, cert_valid_for=timedelta(days=10), renew_before=timedelta(days=10)
        )
    assert list(tmp_path.iterdir()) == []


def test_naive_now_is_refused(tmp_path):
    with pytest.raises(ValueError, match="timezone-aware"):
        ensure_certificates(tmp_path, None, None, NOW.replace(tzinfo=None))


# --- our own files, broken ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, content",
    [
        ("tls.crt", b"garbage"),
        ("tls.key", b"-----BEGIN PRIVATE KEY-----\nnot base64\n-----END PRIVATE KEY-----\n"),
        ("tls.crt", b""),
    ],
)
def test_corrupt_serving_files_of_our_own_are_reissued(tmp_path, name, content):
    ensure_certificates(tmp_path, None, None, NOW)
    ca_before = (tmp_path / "ca.crt").read_bytes()
    (tmp_path / name).write_bytes(content)

    files = ensure_certificates(tmp_path, None, None, NOW)

    assert files.renewed
    assert (tmp_path / "ca.crt").read_bytes() == ca_before, "a broken leaf does not cost the CA"
    certificate(files.cert_file).verify_directly_issued_by(certificate(files.ca_file))


def test_half_rotated_key_of_our_own_is_reissued(tmp_path):
    """A crash between writing the new key and its certificate leaves a key that is not the certificate's."""
    ensure_certificates(tmp_path, None, None, NOW)
    (tmp_path / "tls.key").write_bytes(generate_ca("other", NOW, timedelta(days=1)).private_key_pem)

    files = ensure_certificates(tmp_path, None, None, NOW)

    key = serialization.load_pem_private_key(files.key_file.read_bytes(), password=None)
    assert files.renewed and key.public_key() == certificate(files.cert_file).public_key()


def test_corrupt_ca_key_of_our_own_gets_a_new_ca_and_keeps_the_served_leaf(tmp_path):
    # The leaf is not reissued at once: a leaf signed by the new CA would fail every client that still trusts the old
    # one. The served leaf is kept, and the new CA signs from its renewal on.
    ensure_certificates(tmp_path, None, None, NOW)
    old_ca, leaf_before = (tmp_path / "ca.crt").read_bytes(), (tmp_path / "tls.crt").read_bytes()
    (tmp_path / "ca.key").write_bytes(b"garbage")

    files = ensure_certificates(tmp_path, None, None, NOW)

    assert not files.renewed and files.managed and files.cert_file.read_bytes() == leaf_before
    assert "ca.key is not a usable private key" in files.repairs[0]
    new_bundle = bundle(files.ca_file)
    assert new_bundle[1] == x509.load_pem_x509_certificate(old_ca)
    certificate(files.cert_file).verify_directly_issued_by(new_bundle[1])
    key = serialization.load_pem_private_key((tmp_path / "ca.key").read_bytes(), password=None)
    assert key.public_key() == new_bundle[0].public_key(), "the new ca.key is the first CA of ca.crt"


def test_cert_dir_that_cannot_be_created_is_a_certificate_error(tmp_path):
    (tmp_path / "file").write_text("not a directory")

    with pytest.raises(CertificateError, match="cannot create"):
        ensure_certificates(tmp_path / "file" / "certs", None, None, NOW)


def test_cert_dir_that_cannot_be_written_is_a_certificate_error(tmp_path):
    (tmp_path / "file").write_text("not a directory")

    with pytest.raises(CertificateError, match="ca.key: cannot write"):
        ensure_certificates(tmp_path / "file", None, None, NOW)


# --- external files (cert-manager) -------------------------------------------------------------------------------


def test_external_files_are_used_as_they_are_and_never_written(tmp_path):
    before = write_external(tmp_path)
    mtimes = {path.name: path.stat().st_mtime_ns for path in tmp_path.iterdir()}

    files = ensure_certificates(tmp_path, "failover-relay", "karmada-system", NOW + timedelta(days=89))

    assert not files.managed and not files.renewed
    assert files.ca_file == tmp_path / "ca.crt"
    assert files.not_after == certificate(tmp_path / "tls.crt").not_valid_after_utc
    assert snapshot(tmp_path) == before
    assert {path.name: path.stat().st_mtime_ns for path in tmp_path.iterdir()} == mtimes


def test_external_files_inside_their_renewal_window_are_not_renewed_by_us(tmp_path):
    before = write_external(tmp_path)

    files = ensure_certificates(tmp_path, None, None, NOW + timedelta(days=365))

    assert not files.renewed and snapshot(tmp_path) == before


def test_external_files_without_ca_crt_have_no_ca_file(tmp_path):
    write_external(tmp_path, with_ca=False)

    files = ensure_certificates(tmp_path, None, None, NOW)

    assert files.ca_file is None and not files.managed


def test_external_key_of_another_certificate_is_refused_naming_the_file_not_the_key(tmp_path):
    before = write_external(tmp_path, key_of_other=True)

    with pytest.raises(CertificateFilesInvalid) as refused:
        ensure_certificates(tmp_path, None, None, NOW)

    message = str(refused.value)
    assert str(tmp_path / "tls.key") in message and "tls.crt" in message
    assert "PRIVATE KEY" not in message and before["tls.key"].decode().splitlines()[1] not in message
    assert refused.value.__cause__ is None
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("name", ["tls.crt", "tls.key", "ca.crt"])
def test_an_external_file_that_never_ends_is_refused_after_the_size_limit(tmp_path, name):
    # /dev/zero mounted where a certificate or key belongs: read up to the limit and refused, not read forever
    # (OpenSSL, given the path, would read it line by line without end).
    write_external(tmp_path)
    (tmp_path / name).unlink()
    (tmp_path / name).symlink_to("/dev/zero")

    with pytest.raises(CertificateFilesInvalid) as refused:
        ensure_certificates(tmp_path, None, None, NOW)

    assert str(refused.value) == f"{tmp_path / name}: larger than {MAX_FILE_BYTES} bytes; not a certificate or key file"


def test_external_key_that_is_not_a_key_is_refused_without_echoing_it(tmp_path):
    write_external(tmp_path)
    secret_line = "c2VjcmV0LWtleS1tYXRlcmlhbC10aGF0LW11c3Qtbm90LWxlYWs="
    (tmp_path / "tls.key").write_text(f"-----BEGIN PRIVATE KEY-----\n{secret_line}\n-----END PRIVATE KEY-----\n")

    with pytest.raises(CertificateFilesInvalid) as refused:
        ensure_certificates(tmp_path, None, None, NOW)

    assert str(tmp_path / "tls.key") in str(refused.value)
    assert secret_line not in str(refused.value) and refused.value.__cause__ is None


@pytest.mark.parametrize("present", ["tls.crt", "tls.key", "ca.crt"])
def test_external_dir_missing_a_serving_file_is_refused_naming_it(tmp_path, present):
    write_external(tmp_path)
    for name in ("tls.crt", "tls.key", "ca.crt"):
        if name != present:
            (tmp_path / name).unlink()

    with pytest.raises(CertificateFilesInvalid, match="missing; .* no ca.key"):
        ensure_certificates(tmp_path, None, None, NOW)
    assert [path.name for path in tmp_path.iterdir()] == [present]


def test_external_certificate_that_is_not_pem_is_refused(tmp_path):
    write_external(tmp_path)
    (tmp_path / "tls.crt").write_bytes(b"\x00\x01 not a certificate")

    with pytest.raises(CertificateFilesInvalid, match="tls.crt: not a PEM certificate"):
        ensure_certificates(tmp_path, None, None, NOW)


def test_external_ca_crt_that_is_not_pem_is_refused(tmp_path):
    write_external(tmp_path)
    (tmp_path / "ca.crt").write_bytes(b"garbage")

    with pytest.raises(CertificateFilesInvalid, match="ca.crt: not a PEM certificate"):
        ensure_certificates(tmp_path, None, None, NOW)


# --- the CA bundle and the expiry ------------------------------------------------------------------------------


def test_ca_bundle_is_ca_crt_with_every_kept_ca(tmp_path):
    ca_valid_for, cert_valid_for, renew_before = timedelta(days=100), timedelta(days=40), timedelta(days=10)
    ensure_certificates(tmp_path, None, None, NOW, ca_valid_for, cert_valid_for, renew_before)
    ensure_certificates(
        tmp_path, None, None, NOW + ca_valid_for - renew_before, ca_valid_for, cert_valid_for, renew_before
    )

    pem = read_ca_bundle(tmp_path)

    assert x509.load_pem_x509_certificates(pem) == bundle(tmp_path / "ca.crt")
    assert len(x509.load_pem_x509_certificates(pem)) == 2


def test_ca_bundle_without_ca_crt_is_the_served_chain(tmp_path):
    write_external(tmp_path, with_ca=False)

    assert x509.load_pem_x509_certificates(read_ca_bundle(tmp_path)) == [certificate(tmp_path / "tls.crt")]


def test_ca_bundle_of_an_empty_dir_is_refused(tmp_path):
    with pytest.raises(CertificateFilesInvalid, match="neither ca.crt nor tls.crt"):
        read_ca_bundle(tmp_path)


def test_ca_bundle_that_is_not_pem_is_refused(tmp_path):
    (tmp_path / "ca.crt").write_bytes(b"garbage")

    with pytest.raises(CertificateFilesInvalid, match="ca.crt: not a PEM certificate"):
        read_ca_bundle(tmp_path)


def test_certificate_expiry_is_the_served_certificates(tmp_path):
    files = ensure_certificates(tmp_path, None, None, NOW)

    assert certificate_expiry(files.cert_file) == NOW + DEFAULT_CERT_VALIDITY


def test_certificate_expiry_of_a_missing_file_names_it(tmp_path):
    with pytest.raises(CertificateFilesInvalid, match="tls.crt: cannot read"):
        certificate_expiry(tmp_path / "tls.crt")


def test_the_next_ca_is_trusted_a_renewal_window_before_it_signs(tmp_path):
    """The new CA reaches the caBundle before the server switches to a certificate it signed."""
    from datetime import datetime, timedelta

    from cryptography import x509 as _x509

    from certs.serving import DEFAULT_CA_VALIDITY, DEFAULT_RENEW_BEFORE, ensure_certificates

    start = datetime(2026, 1, 1, tzinfo=UTC)
    first = ensure_certificates(tmp_path, None, None, start)
    first_ca = _x509.load_pem_x509_certificates((tmp_path / "ca.crt").read_bytes())[0]

    staging = start + DEFAULT_CA_VALIDITY - 2 * DEFAULT_RENEW_BEFORE + timedelta(days=1)
    staged = ensure_certificates(tmp_path, None, None, staging)
    bundle = _x509.load_pem_x509_certificates((tmp_path / "ca.crt").read_bytes())
    assert len(bundle) == 2 and bundle[0] == first_ca  # the old CA still signs; the successor is only trusted
    successor = bundle[1]
    assert (tmp_path / "next-ca.key").stat().st_mode & 0o077 == 0
    leaf = _x509.load_pem_x509_certificate((tmp_path / "tls.crt").read_bytes())
    assert leaf.issuer == first_ca.subject and staged.cert_file == first.cert_file
    leaf.verify_directly_issued_by(first_ca)

    # Staging again changes nothing.
    before = (tmp_path / "ca.crt").read_bytes()
    ensure_certificates(tmp_path, None, None, staging + timedelta(days=1))
    assert (tmp_path / "ca.crt").read_bytes() == before

    switch = start + DEFAULT_CA_VALIDITY - DEFAULT_RENEW_BEFORE + timedelta(hours=1)
    renewed = ensure_certificates(tmp_path, None, None, switch)
    assert renewed.renewed
    bundle = _x509.load_pem_x509_certificates((tmp_path / "ca.crt").read_bytes())
    assert bundle[0] == successor and first_ca in bundle  # the staged CA now signs; the old one stays trusted
    _x509.load_pem_x509_certificate((tmp_path / "tls.crt").read_bytes()).verify_directly_issued_by(successor)
    assert not (tmp_path / "next-ca.crt").exists() and not (tmp_path / "next-ca.key").exists()
