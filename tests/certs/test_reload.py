"""ReloadingSSLContext over real TLS sockets: rotation without restart, broken files, protocol floor."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cryptography import x509

from certs.authority import generate_ca, generate_serving_certificate
from certs.reload import ReloadingSSLContext
from certs.serving import ensure_certificates
from certs.store import CertificateFilesInvalid
from relay.serve import RelayServer
from relay.settings import Settings

# The TLS client checks validity against the real clock, so these certificates are issued for the real time.
NOW = datetime.now(UTC)
SERVED_WITHIN_SECONDS = 10  # a rotated certificate reaches a client's handshake within this, however loaded
SECRET_LINE = "c2VjcmV0LWtleS1tYXRlcmlhbC10aGF0LW11c3Qtbm90LWxlYWs="


def serial_in(path: Path) -> int:
    return x509.load_pem_x509_certificate(path.read_bytes()).serial_number


def rotate(cert_dir: Path, step: int) -> int:
    """Have the store issue a new serving certificate from the same CA (a new Service name forces it)."""
    files = ensure_certificates(cert_dir, f"relay-{step}", "karmada-system", datetime.now(UTC))
    assert files.renewed
    return serial_in(files.cert_file)


def not_after_in(path: Path) -> datetime:
    return x509.load_pem_x509_certificate(path.read_bytes()).not_valid_after_utc


async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while line := await reader.readline():
            writer.write(line)
            await writer.drain()
    except (ConnectionError, ssl.SSLError):
        pass
    finally:
        writer.close()


@asynccontextmanager
async def tls_server(context: ssl.SSLContext) -> AsyncIterator[int]:
    server = await asyncio.start_server(echo, "127.0.0.1", 0, ssl=context)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()


class Connection:
    """A verified TLS client connection; `serial` is the serial number of the certificate the server presented."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        peer = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        self.serial = x509.load_der_x509_certificate(peer).serial_number
        self.version = writer.get_extra_info("ssl_object").version()
        self.cipher = writer.get_extra_info("cipher")[0]

    @classmethod
    async def open(cls, port: int, trust: ssl.SSLContext) -> Connection:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port, ssl=trust, server_hostname="127.0.0.1"), 5
        )
        return cls(reader, writer)

    async def round_trip(self, text: str) -> str:
        self.writer.write(text.encode() + b"\n")
        await self.writer.drain()
        return (await asyncio.wait_for(self.reader.readline(), 5)).decode().rstrip("\n")

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except (ConnectionError, ssl.SSLError):
            pass


def trusting(ca_file: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(ca_file))


@pytest.fixture
def cert_dir(tmp_path: Path) -> Path:
    ensure_certificates(tmp_path, None, None, NOW)
    return tmp_path


@pytest.fixture
def reloading(cert_dir: Path) -> ReloadingSSLContext:
    return ReloadingSSLContext(cert_dir / "tls.crt", cert_dir / "tls.key")


async def test_serves_the_certificate_in_the_files(cert_dir, reloading):
    async with tls_server(reloading.context) as port:
        connection = await Connection.open(port, trusting(cert_dir / "ca.crt"))

        assert connection.serial == serial_in(cert_dir / "tls.crt")
        assert await connection.round_trip("hello") == "hello"
        await connection.close()
    assert reloading.last_error is None
    assert reloading.not_after == not_after_in(cert_dir / "tls.crt")


async def test_rotated_files_reach_new_handshakes_while_open_connections_keep_working(cert_dir, reloading):
    trust = trusting(cert_dir / "ca.crt")
    old_serial = serial_in(cert_dir / "tls.crt")
    async with tls_server(reloading.context) as port:
        established = await Connection.open(port, trust)
        new_serial = rotate(cert_dir, 1)

        assert reloading.maybe_reload() is True

        fresh = await Connection.open(port, trust)
        assert (established.serial, fresh.serial) == (old_serial, new_serial) and old_serial != new_serial
        assert await established.round_trip("still here") == "still here"
        assert await fresh.round_trip("new") == "new"
        await established.close()
        await fresh.close()
    assert reloading.not_after == not_after_in(cert_dir / "tls.crt")


def test_unchanged_files_are_not_reloaded(reloading):
    assert reloading.maybe_reload() is False
    assert reloading.last_error is None


def write_garbage_certificate(cert_dir: Path) -> None:
    (cert_dir / "tls.crt").write_bytes(b"this is not a certificate\n")


def write_garbage_key(cert_dir: Path) -> None:
    (cert_dir / "tls.key").write_text(f"-----BEGIN PRIVATE KEY-----\n{SECRET_LINE}\n-----END PRIVATE KEY-----\n")


def write_key_of_another_certificate(cert_dir: Path) -> None:
    other = generate_ca("other", NOW, timedelta(days=1))
    (cert_dir / "tls.key").write_bytes(other.private_key_pem)


def write_half_a_certificate(cert_dir: Path) -> None:
    ca = generate_ca("other", NOW, timedelta(days=1))
    pem = generate_serving_certificate(ca, ["localhost"], ["127.0.0.1"], NOW, timedelta(days=1)).certificate_pem
    (cert_dir / "tls.crt").write_bytes(pem[: len(pem) // 2])


def write_half_a_key(cert_dir: Path) -> None:
    pem = (cert_dir / "tls.key").read_bytes()
    (cert_dir / "tls.key").write_bytes(pem[: len(pem) // 2])


def write_new_certificate_before_its_key(cert_dir: Path) -> None:
    """A rotation caught between the two files: the new certificate is there, its key is not yet."""
    old_key = (cert_dir / "tls.key").read_bytes()
    rotate(cert_dir, 1)
    (cert_dir / "tls.key").write_bytes(old_key)


def remove_key(cert_dir: Path) -> None:
    (cert_dir / "tls.key").unlink()


def key_that_never_ends(cert_dir: Path) -> None:
    """/dev/zero where the key belongs: refused after the size limit, not read forever."""
    (cert_dir / "tls.key").unlink()
    (cert_dir / "tls.key").symlink_to("/dev/zero")


BREAKAGES = [
    write_garbage_certificate,
    write_garbage_key,
    write_key_of_another_certificate,
    write_half_a_certificate,
    write_half_a_key,
    write_new_certificate_before_its_key,
    remove_key,
    key_that_never_ends,
]


@pytest.mark.parametrize("break_files", BREAKAGES, ids=[breakage.__name__ for breakage in BREAKAGES])
async def test_broken_files_keep_the_old_certificate_serving(cert_dir, reloading, break_files):
    trust = trusting(cert_dir / "ca.crt")
    served = serial_in(cert_dir / "tls.crt")
    served_not_after = reloading.not_after
    key_lines = (cert_dir / "tls.key").read_text().splitlines()[1:-1]
    async with tls_server(reloading.context) as port:
        established = await Connection.open(port, trust)
        break_files(cert_dir)

        assert reloading.maybe_reload() is False

        assert reloading.last_error and "\n" not in reloading.last_error
        assert "tls." in reloading.last_error, "the error names the file"
        assert SECRET_LINE not in reloading.last_error and "PRIVATE KEY" not in reloading.last_error
        assert not any(line in reloading.last_error for line in key_lines)
        fresh = await Connection.open(port, trust)
        assert fresh.serial == served and reloading.not_after == served_not_after
        assert await established.round_trip("ok") == "ok"
        await established.close()
        await fresh.close()


async def test_files_fixed_after_a_failed_reload_are_served(cert_dir, reloading):
    write_garbage_key(cert_dir)
    assert reloading.maybe_reload() is False

    new_serial = rotate(cert_dir, 1)

    assert reloading.maybe_reload() is True and reloading.last_error is None
    async with tls_server(reloading.context) as port:
        connection = await Connection.open(port, trusting(cert_dir / "ca.crt"))
        assert connection.serial == new_serial
        await connection.close()


def test_files_restored_after_a_failed_reload_clear_the_error(cert_dir, reloading):
    good_key = (cert_dir / "tls.key").read_bytes()
    write_garbage_key(cert_dir)
    assert reloading.maybe_reload() is False and reloading.last_error

    (cert_dir / "tls.key").write_bytes(good_key)

    assert reloading.maybe_reload() is False, "the restored files are the ones already served"
    assert reloading.last_error is None


def test_broken_files_at_start_are_refused_without_key_material(cert_dir):
    write_garbage_key(cert_dir)

    with pytest.raises(CertificateFilesInvalid) as refused:
        ReloadingSSLContext(cert_dir / "tls.crt", cert_dir / "tls.key")

    assert "tls.key" in str(refused.value) and SECRET_LINE not in str(refused.value)


async def test_rotation_under_load_fails_no_handshake_and_no_request(cert_dir, reloading):
    """Clients connect and talk continuously while the certificate is rotated five times; none of them may fail."""
    trust = trusting(cert_dir / "ca.crt")
    seen: set[int] = set()
    new_serial = asyncio.Event()
    completed = 0
    rotating = True

    async def client() -> None:
        nonlocal completed
        while rotating:
            connection = await Connection.open(port, trust)
            if connection.serial not in seen:
                seen.add(connection.serial)
                new_serial.set()
            assert await connection.round_trip("ping") == "ping"
            await connection.close()
            completed += 1

    async def served(serial: int) -> None:
        # Until a client's handshake got it: a fixed pause lets a loaded machine skip a certificate altogether.
        async with asyncio.timeout(SERVED_WITHIN_SECONDS):
            while serial not in seen:
                new_serial.clear()
                await new_serial.wait()

    async def rotations() -> list[int]:
        serials = [serial_in(cert_dir / "tls.crt")]
        await served(serials[-1])
        for step in range(1, 6):
            serials.append(rotate(cert_dir, step))
            assert reloading.maybe_reload() is True
            await served(serials[-1])
        return serials

    async with tls_server(reloading.context) as port:
        clients = [asyncio.create_task(client()) for _ in range(4)]
        try:
            serials = await rotations()
        finally:
            rotating = False
        await asyncio.gather(*clients)

    assert seen == set(serials), "every certificate was served and no other"
    assert completed >= 12


@pytest.mark.filterwarnings("ignore:ssl.TLSVersion.TLSv1:DeprecationWarning")
async def test_tls_1_1_client_is_refused(cert_dir, reloading):
    legacy = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    legacy.load_verify_locations(cafile=str(cert_dir / "ca.crt"))
    legacy.minimum_version = ssl.TLSVersion.TLSv1
    legacy.maximum_version = ssl.TLSVersion.TLSv1_1
    legacy.set_ciphers("ALL:@SECLEVEL=0")
    # Control: this client does complete a TLS 1.1 handshake with a server that allows it, so the refusal below
    # is our context's doing and not the local OpenSSL's.
    permissive = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    permissive.minimum_version = ssl.TLSVersion.TLSv1
    permissive.set_ciphers("ALL:@SECLEVEL=0")
    permissive.load_cert_chain(cert_dir / "tls.crt", cert_dir / "tls.key")
    async with tls_server(permissive) as port:
        connection = await Connection.open(port, legacy)
        assert connection.version == "TLSv1.1"
        await connection.close()

    async with tls_server(reloading.context) as port:
        with pytest.raises((ssl.SSLError, ConnectionError)):
            await Connection.open(port, legacy)
    assert reloading.context.minimum_version == ssl.TLSVersion.TLSv1_2


async def test_tls_1_2_client_gets_an_aead_suite_with_forward_secrecy(cert_dir, reloading):
    client = trusting(cert_dir / "ca.crt")
    client.maximum_version = ssl.TLSVersion.TLSv1_2

    async with tls_server(reloading.context) as port:
        connection = await Connection.open(port, client)

    assert connection.version == "TLSv1.2"
    assert connection.cipher.startswith("ECDHE-") and ("GCM" in connection.cipher or "CHACHA20" in connection.cipher)
    await connection.close()


async def test_tls_1_3_client_is_served(cert_dir, reloading):
    async with tls_server(reloading.context) as port:
        connection = await Connection.open(port, trusting(cert_dir / "ca.crt"))
        assert connection.version == "TLSv1.3"
        await connection.close()


async def test_a_failed_renewal_is_counted_in_the_metrics(tmp_path: Path) -> None:
    """A renewal that fails is logged and counted (an alert can watch the counter), and the loaded certificate serves
    on."""
    cert_dir = tmp_path / "certs"
    relay = RelayServer(Settings(port=0, cert_dir=cert_dir))
    await relay.start()
    try:
        counter = b"failover_relay_certificate_renewal_errors_total 0.0"
        assert counter in relay.metrics.exposition()
        cert_dir.rename(tmp_path / "elsewhere")
        cert_dir.write_text("not a directory")  # what the periodic check finds: it cannot read or renew there
        relay.refresh_certificate()
        assert b"failover_relay_certificate_renewal_errors_total 1.0" in relay.metrics.exposition()
        relay.refresh_certificate()
        assert b"failover_relay_certificate_renewal_errors_total 2.0" in relay.metrics.exposition()
    finally:
        await relay.stop()
