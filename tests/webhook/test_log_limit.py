"""Bad requests logged once per source and period, at WARNING, without a traceback (issue 28)."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

from relay.serve import RelayServer
from relay.settings import Settings
from tests.tls_clients import client_tls
from webhook.log_limit import LogLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_one_line_per_source_and_period_with_what_was_held_back() -> None:
    clock = Clock()
    limiter = LogLimiter(clock, period=60)
    assert limiter.admit("10.0.0.1") == 0
    assert [limiter.admit("10.0.0.1") for _ in range(5)] == [None] * 5
    assert limiter.admit("10.0.0.2") == 0  # another source has its own period
    clock.now += 59.9
    assert limiter.admit("10.0.0.1") is None
    clock.now += 0.1
    assert limiter.admit("10.0.0.1") == 6  # the period is over: a line, saying six were held back


def test_the_sources_remembered_are_bounded() -> None:
    clock = Clock()
    limiter = LogLimiter(clock, period=60, max_sources=2)
    assert limiter.admit("a") == 0 and limiter.admit("b") == 0
    assert limiter.admit("c") is None  # full, none expired: not logged (still counted in the metrics)
    clock.now += 60
    assert limiter.admit("c") == 0  # expired ones are forgotten to make room


async def send(relay: RelayServer, payload: bytes, source: str) -> bytes:
    assert relay.files.ca_file is not None
    context = client_tls(relay.files.ca_file)
    context.check_hostname = False
    reader, writer = await asyncio.open_connection("127.0.0.1", relay.port, ssl=context, local_addr=(source, 0))
    writer.write(payload)
    answer = await reader.read()
    writer.close()
    return answer


BAD_HEADER = b"GET /healthz HTTP/1.1\r\nHost: relay\r\nBad Header\r\n\r\n"
NOT_JSON = (
    b"POST /validate HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\nContent-Length: 3\r\n"
    b"Connection: close\r\n\r\n{x}"
)


async def test_a_scanner_gets_one_warning_line_per_source_without_a_traceback(
    tmp_path: Path, json_lines: io.StringIO
) -> None:
    relay = RelayServer(Settings(port=0, cert_dir=tmp_path / "certs"))
    await relay.start()
    try:
        for _ in range(5):
            assert (await send(relay, BAD_HEADER, "127.0.0.1")).startswith(b"HTTP/1.0 400")
            assert (await send(relay, NOT_JSON, "127.0.0.1")).startswith(b"HTTP/1.1 400")
        assert (await send(relay, BAD_HEADER, "127.0.0.2")).startswith(b"HTTP/1.0 400")
    finally:
        await relay.stop()
    records = [json.loads(line) for line in json_lines.getvalue().splitlines()]
    bad = [record for record in records if record.get("event") == "bad_request"]
    assert [(record["source"], record["level"]) for record in bad] == [
        ("127.0.0.1", "warning"),
        ("127.0.0.2", "warning"),
    ], bad
    assert not [record for record in records if record.get("level") == "error"], "an error line for a bad request"
    assert "Traceback" not in json_lines.getvalue()
    # Every one is still counted.
    assert b'failover_relay_admission_errors_total{endpoint="validate",reason="MalformedReview"} 5.0' in (
        relay.metrics.exposition()
    )
