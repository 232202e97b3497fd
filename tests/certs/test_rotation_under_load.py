"""Certificate renewal under load (issue 7, item 1): the serving certificate is replaced on disk by a renewal and
swapped into the running server while clients keep opening new TLS connections and reusing old ones.
Zero requests may fail, and every handshake that starts after the swap must get the new certificate.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp
import pytest
import structlog
from cryptography import x509

from certs.serving import DEFAULT_CERT_VALIDITY, DEFAULT_RENEW_BEFORE, ensure_certificates
from relay.serve import RelayServer
from relay.settings import Settings
from tests.admission_reviews import admission_review
from tests.policies import flink_policy
from tests.reporting import report
from tests.tls_clients import client_tls

NEW_CONNECTION_CLIENTS = 4
LOAD_SECONDS_EACH_SIDE = 1.0
# The certificate in place at start-up is this far from its renewal window, so the server's own start-up check
# keeps it; the renewal is then triggered with a `now` this far past the window's start.
MARGIN = timedelta(minutes=2)


def serial_of_pem(path: Path) -> int:
    return x509.load_pem_x509_certificate(path.read_bytes()).serial_number


@dataclass
class Tally:
    ok: int = 0
    failures: list[str] = field(default_factory=list)
    # (monotonic time the handshake started, serial the server presented)
    handshakes: list[tuple[float, int]] = field(default_factory=list)


async def one_request_on_a_new_connection(port: int, tls: ssl.SSLContext, tally: Tally) -> None:
    """The apiserver's first call to a freshly routed replica: TCP, TLS handshake, one POST, close."""
    review = admission_review(flink_policy())
    body = json.dumps(review).encode()
    started = time.monotonic()
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port, ssl=tls, server_hostname="localhost"), 5
        )
    except (TimeoutError, OSError, ssl.SSLError) as error:
        tally.failures.append(f"connect: {type(error).__name__}: {error}")
        return
    try:
        peer = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        tally.handshakes.append((started, x509.load_der_x509_certificate(peer).serial_number))
        writer.write(
            b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            b"Connection: close\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
        )
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), 5)
        head, _, payload = answer.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200 "):
            tally.failures.append(f"status: {head.splitlines()[0] if head else b'(nothing)'!r}")
        elif json.loads(payload)["response"]["uid"] != review["request"]["uid"]:
            tally.failures.append("answer for another uid")
        else:
            tally.ok += 1
    except (TimeoutError, OSError, ssl.SSLError, ValueError, KeyError) as error:
        tally.failures.append(f"request: {type(error).__name__}: {error}")
    finally:
        writer.close()


async def new_connection_client(port: int, tls: ssl.SSLContext, tally: Tally, stop: asyncio.Event) -> None:
    while not stop.is_set():
        await one_request_on_a_new_connection(port, tls, tally)


async def keep_alive_client(session: aiohttp.ClientSession, url: str, tally: Tally, stop: asyncio.Event) -> None:
    """A connection established before the swap keeps its certificate and keeps working."""
    while not stop.is_set():
        review = admission_review(flink_policy())
        try:
            async with session.post(url, json=review) as response:
                answer = await response.json()
            if response.status == 200 and answer["response"]["uid"] == review["request"]["uid"]:
                tally.ok += 1
            else:
                tally.failures.append(f"keep-alive status {response.status}")
        except (TimeoutError, aiohttp.ClientError, ValueError, KeyError) as error:
            tally.failures.append(f"keep-alive: {type(error).__name__}: {error}")


@pytest.fixture
async def relay(tmp_path: Path) -> AsyncIterator[RelayServer]:
    cert_dir = tmp_path / "certs"
    # Issue the CA and the leaf as if 60 days ago, less the margin: the leaf enters its renewal window in MARGIN.
    issued = datetime.now(UTC) - (DEFAULT_CERT_VALIDITY - DEFAULT_RENEW_BEFORE) + MARGIN
    ensure_certificates(cert_dir, None, None, issued)
    server = RelayServer(Settings(port=0, cert_dir=cert_dir))
    assert not server.files.renewed
    await server.start()
    yield server
    await server.stop()


async def test_renewal_under_load_fails_no_request_and_new_handshakes_get_the_new_serial(
    relay: RelayServer, request: pytest.FixtureRequest
) -> None:
    assert relay.files.ca_file is not None
    tls = client_tls(relay.files.ca_file)
    old_serial = serial_of_pem(relay.files.cert_file)
    fresh, reused, stop = Tally(), Tally(), asyncio.Event()
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=tls, limit=1))
    url = f"https://localhost:{relay.port}/validate"
    with structlog.testing.capture_logs() as logs:
        clients = [
            asyncio.create_task(new_connection_client(relay.port, tls, fresh, stop))
            for _ in range(NEW_CONNECTION_CLIENTS)
        ]
        clients.append(asyncio.create_task(keep_alive_client(session, url, reused, stop)))
        await asyncio.sleep(LOAD_SECONDS_EACH_SIDE)
        before_rotation = fresh.ok + reused.ok

        # The renewal writes new files while requests are being served (off the loop, as a kubelet or a second
        # replica's write would be), then the server's periodic check picks them up.
        renewal_now = datetime.now(UTC) + MARGIN * 2
        renewed = await asyncio.to_thread(ensure_certificates, relay.settings.cert_dir, None, None, renewal_now)
        assert renewed.renewed
        new_serial = serial_of_pem(renewed.cert_file)
        assert new_serial != old_serial
        during_rotation = fresh.ok + reused.ok - before_rotation
        relay.refresh_certificate()
        swapped_at = time.monotonic()

        await asyncio.sleep(LOAD_SECONDS_EACH_SIDE)
        stop.set()
        await asyncio.gather(*clients)
    await session.close()

    assert fresh.failures == [] and reused.failures == []
    before = {serial for started, serial in fresh.handshakes if started < swapped_at}
    after = {serial for started, serial in fresh.handshakes if started > swapped_at}
    assert old_serial in before
    assert after == {new_serial}
    assert relay.tls.not_after == renewed.not_after
    assert (
        relay.metrics.registry.get_sample_value("failover_relay_certificate_expiry_timestamp_seconds")
        == renewed.not_after.timestamp()
    )
    assert [entry["event"] for entry in logs if entry["event"].startswith("certificate")] == ["certificate_reloaded"]
    key_pem = await asyncio.to_thread(Path(renewed.key_file).read_text)
    key_lines = {line for line in key_pem.splitlines() if "-----" not in line}
    logged = " ".join(str(value) for entry in logs for value in entry.values())
    assert "PRIVATE KEY" not in logged and not any(line in logged for line in key_lines)

    total = fresh.ok + reused.ok
    new_handshakes_after = sum(1 for started, _ in fresh.handshakes if started > swapped_at)
    line = (
        f"{total} requests, 0 failed ({fresh.ok} on new TLS connections, {reused.ok} on one keep-alive "
        f"connection; {during_rotation} while the files were rewritten; {new_handshakes_after} handshakes after "
        f"the swap, all with the new serial)"
    )
    report(request, "rotation under load", line)
    assert total > 100
