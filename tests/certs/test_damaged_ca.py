"""A damaged CA of our own: repaired only in ways that keep clients working, and reported.

Clients are modelled by what they trust: the `ca.crt` they were given before the damage (the apiserver's caBundle
until the sync updates it) must still verify the served certificate after the repair, and so must the new one.
"""

from __future__ import annotations

import multiprocessing
from datetime import timedelta
from pathlib import Path

import pytest
from cryptography import x509

from certs.serving import DEFAULT_CERT_VALIDITY, DEFAULT_RENEW_BEFORE, ensure_certificates
from tests.certs.cert_files import NOW, bundle, certificate


def verifies(ca_pem: bytes, cert_file: Path) -> bool:
    leaf = certificate(cert_file)
    for ca in x509.load_pem_x509_certificates(ca_pem):
        try:
            leaf.verify_directly_issued_by(ca)
            return True
        except Exception:  # noqa: BLE001 - any failure means "not this CA"
            continue
    return False


@pytest.mark.parametrize(
    "damage", [None, b"", b"garbage", b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"]
)
def test_a_lost_or_corrupt_ca_crt_is_rebuilt_from_ca_key(tmp_path: Path, damage: bytes | None) -> None:
    ensure_certificates(tmp_path, None, None, NOW)
    trusted_before = (tmp_path / "ca.crt").read_bytes()
    leaf_before = (tmp_path / "tls.crt").read_bytes()
    if damage is None:
        (tmp_path / "ca.crt").unlink()
    else:
        (tmp_path / "ca.crt").write_bytes(damage)

    files = ensure_certificates(tmp_path, None, None, NOW + timedelta(minutes=1))

    assert files.managed and not files.renewed and files.cert_file.read_bytes() == leaf_before
    assert verifies(trusted_before, files.cert_file), "a client with the old caBundle fails"
    assert files.ca_file is not None and verifies(files.ca_file.read_bytes(), files.cert_file)
    assert len(files.repairs) == 1 and "rebuilt from" in files.repairs[0] and "ca.crt" in files.repairs[0]
    # Repaired once: the next check finds nothing to do.
    assert ensure_certificates(tmp_path, None, None, NOW + timedelta(minutes=2)).repairs == ()


def test_a_lost_ca_key_is_not_mistaken_for_an_external_directory(tmp_path: Path) -> None:
    ensure_certificates(tmp_path, None, None, NOW)
    trusted_before = (tmp_path / "ca.crt").read_bytes()
    leaf_before = (tmp_path / "tls.crt").read_bytes()
    (tmp_path / "ca.key").unlink()

    files = ensure_certificates(tmp_path, None, None, NOW + timedelta(minutes=1))

    assert files.managed, "a directory of ours without ca.key was taken as managed elsewhere, never renewed"
    assert not files.renewed and files.cert_file.read_bytes() == leaf_before
    assert verifies(trusted_before, files.cert_file)
    assert files.ca_file is not None and verifies(files.ca_file.read_bytes(), files.cert_file)
    assert "ca.key is missing" in files.repairs[0]
    assert len(bundle(files.ca_file)) == 2, "the new CA is added in front of the old one"
    # From the renewal on, the new CA signs, and the bundle (published since) verifies it.
    renewal = NOW + DEFAULT_CERT_VALIDITY - DEFAULT_RENEW_BEFORE
    renewed = ensure_certificates(tmp_path, None, None, renewal)
    assert renewed.renewed and renewed.repairs == ()
    certificate(renewed.cert_file).verify_directly_issued_by(bundle(files.ca_file)[0])


def test_a_lost_ca_key_with_an_unusable_leaf_says_clients_need_the_new_bundle(tmp_path: Path) -> None:
    ensure_certificates(tmp_path, None, None, NOW)
    (tmp_path / "ca.key").unlink()
    (tmp_path / "tls.crt").write_bytes(b"garbage")

    files = ensure_certificates(tmp_path, None, None, NOW)

    assert files.managed and files.renewed
    assert any("clients that trust only the old CA fail" in repair for repair in files.repairs)


def _start(directory: str, barrier: multiprocessing.synchronize.Barrier) -> None:  # type: ignore[name-defined]
    barrier.wait()
    ensure_certificates(Path(directory), None, None, NOW)


@pytest.mark.parametrize("round_", range(5))
def test_instances_starting_at_once_on_an_empty_dir_agree(tmp_path: Path, round_: int) -> None:
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(4)
    processes = [context.Process(target=_start, args=(str(tmp_path / "certs"), barrier)) for _ in range(4)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(60)
        assert process.exitcode == 0
    files = ensure_certificates(tmp_path / "certs", None, None, NOW)
    assert files.ca_file is not None and verifies(files.ca_file.read_bytes(), files.cert_file)
    assert not files.renewed and files.repairs == ()
