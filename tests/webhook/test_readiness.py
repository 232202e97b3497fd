"""/readyz over the real listener: it verifies the served chain and its validity, never the dialled name, and
answers 503 with a reason (never 500) whatever state the CA file is in."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp
import pytest

from certs.authority import generate_ca, generate_serving_certificate
from relay.serve import RelayServer
from relay.settings import Settings

SERVICE_NAME = "failover-relay.failover-relay.svc"


def cert_manager_dir(
    path: Path,
    *,
    names: tuple[str, ...] = (SERVICE_NAME,),
    now: datetime | None = None,
    valid_for: timedelta = timedelta(days=90),
    other_ca: bool = False,
) -> Path:
    """A cert dir as cert-manager fills it: ca.crt, tls.crt, tls.key and no ca.key; the leaf names only `names`."""
    now = now or datetime.now(UTC)
    ca = generate_ca("cert-manager-ca", now, timedelta(days=365))
    leaf = generate_serving_certificate(ca, names, (), now, valid_for)
    path.mkdir(parents=True)
    trusted = generate_ca("some-other-ca", now, timedelta(days=365)) if other_ca else ca
    (path / "ca.crt").write_bytes(trusted.certificate_pem)
    (path / "tls.crt").write_bytes(leaf.certificate_pem)
    (path / "tls.key").write_bytes(leaf.private_key_pem)
    return path


Started = Callable[..., Awaitable[RelayServer]]


@pytest.fixture
async def started(tmp_path: Path) -> AsyncIterator[Started]:
    servers: list[RelayServer] = []

    async def start(cert_dir: Path | None = None, host: str = "127.0.0.1") -> RelayServer:
        server = RelayServer(Settings(host=host, port=0, cert_dir=cert_dir or tmp_path / "certs"))
        await server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        await server.stop()


async def readyz(relay: RelayServer) -> tuple[int, str]:
    """What `curl -k https://HOST:PORT/readyz` sees."""
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{relay.url}/readyz", ssl=False) as response:
            return response.status, await response.text()


async def test_a_certificate_naming_only_the_service_is_ready(tmp_path: Path, started: Started) -> None:
    relay = await started(cert_manager_dir(tmp_path / "cm"))
    assert not relay.files.managed
    assert await readyz(relay) == (200, "ok\n")


async def test_listening_on_an_address_the_certificate_does_not_name_is_ready(started: Started) -> None:
    # The managed certificate names 127.0.0.1 and ::1; 127.0.0.2 (as a pod IP would be) is not among them.
    relay = await started(host="127.0.0.2")
    assert await readyz(relay) == (200, "ok\n")


async def test_a_chain_the_ca_does_not_verify_is_not_ready(tmp_path: Path, started: Started) -> None:
    relay = await started(cert_manager_dir(tmp_path / "cm", other_ca=True))
    status, text = await readyz(relay)
    assert status == 503 and "CERTIFICATE_VERIFY_FAILED" in text


async def test_an_expired_certificate_is_not_ready(tmp_path: Path, started: Started) -> None:
    long_ago = datetime.now(UTC) - timedelta(days=30)
    relay = await started(cert_manager_dir(tmp_path / "cm", now=long_ago, valid_for=timedelta(days=1)))
    status, text = await readyz(relay)
    assert status == 503 and "expired" in text


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"", "not a PEM CA bundle"),
        (b"not a certificate\n", "not a PEM CA bundle"),
        (b"\xff\xfe latin-1 \xe9", "not a PEM CA bundle"),
        (None, "missing"),
    ],
)
async def test_a_broken_ca_file_is_503_with_the_reason(started: Started, content: bytes | None, problem: str) -> None:
    relay = await started()
    assert relay.files.ca_file is not None
    if content is None:
        relay.files.ca_file.unlink()
    else:
        relay.files.ca_file.write_bytes(content)
    relay.readiness._cached = None  # the next probe, not the one cached a moment ago
    status, text = await readyz(relay)
    assert status == 503 and problem in text and "ca.crt" in text
