"""The JSON log lines `configure_logging` sets up: one object per line, with level and UTC time, any value rendered."""

from __future__ import annotations

import io
import json
import logging
from datetime import UTC, datetime
from pathlib import Path

import pytest
import structlog

from relay.logs import LineHeader


def records(stream: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_a_line_is_one_json_object_with_level_and_utc_time(json_lines: io.StringIO) -> None:
    structlog.get_logger("t").info("admission_review", uid="u-1", reason=None, audit={"savepoint-path": "/x"})

    [record] = records(json_lines)
    assert record["event"] == "admission_review" and record["level"] == "info"
    assert record["uid"] == "u-1" and record["reason"] is None and record["audit"] == {"savepoint-path": "/x"}
    assert record["timestamp"].endswith("Z")


def test_values_json_has_no_type_for_are_logged_as_their_repr(json_lines: io.StringIO) -> None:
    structlog.get_logger("t").info("event", path=Path("/a"), error=ValueError("bad"), raw=b"\xff")

    [record] = records(json_lines)
    assert record["path"] == repr(Path("/a")) and record["error"] == "ValueError('bad')"
    assert record["raw"] == repr(b"\xff")


def test_a_forged_line_break_stays_inside_one_line(json_lines: io.StringIO) -> None:
    structlog.get_logger("t").warning("bad_request", message='x\n{"event": "forged"}')

    assert len(json_lines.getvalue().splitlines()) == 1
    assert records(json_lines)[0]["message"] == 'x\n{"event": "forged"}'


def test_library_records_are_rendered_the_same_way(json_lines: io.StringIO) -> None:
    logging.getLogger("aiohttp.server").error("Error handling request")

    [record] = records(json_lines)
    assert record == {**record, "event": "Error handling request", "level": "error", "logger": "aiohttp.server"}


def test_a_line_names_its_component(json_lines: io.StringIO) -> None:
    structlog.get_logger("failover_relay.webhook").info("bad_request")
    [record] = records(json_lines)
    assert record["logger"] == "failover_relay.webhook"


def test_a_library_exception_is_rendered_with_its_traceback(json_lines: io.StringIO) -> None:
    try:
        raise ConnectionResetError("peer went away")
    except ConnectionResetError:
        logging.getLogger("aiohttp.server").exception("Error handling request")
    [record] = records(json_lines)
    assert record["logger"] == "aiohttp.server" and record["level"] == "error"
    assert "Traceback" in record["exception"] and "ConnectionResetError: peer went away" in record["exception"]
    assert "<traceback object" not in json.dumps(record)


def test_our_exception_is_rendered_with_its_traceback(json_lines: io.StringIO) -> None:
    try:
        raise ValueError("broken rule")
    except ValueError:
        structlog.get_logger("failover_relay.webhook").exception("review_failed")
    [record] = records(json_lines)
    assert "ValueError: broken rule" in record["exception"]


def test_what_orjson_refuses_is_written_by_the_standard_library(json_lines: io.StringIO) -> None:
    # A lone surrogate (a hostile label value echoed in a message), an integer beyond 64 bits, a non-string key.
    structlog.get_logger("t").warning("bad_request", message="bad label \ud800", count=2**70, by_port={443: "x"})

    [record] = records(json_lines)
    assert record["message"] == "bad label \ud800" and record["count"] == 2**70 and record["by_port"] == {"443": "x"}


@pytest.mark.parametrize(
    "now", [0.0, 1764000000.0, 1764000000.5, 1764000000.123456, 1764000000.9999996, 1764000001.000001, 1893456000.25]
)
def test_the_line_header_stamps_what_structlogs_timestamper_writes(now: float) -> None:
    expected = datetime.fromtimestamp(now, UTC).isoformat().replace("+00:00", "Z")

    stamped = LineHeader(clock=lambda: now)(structlog.get_logger("failover_relay.webhook"), "warn", {})

    assert stamped == {"level": "warning", "timestamp": expected}


def test_the_line_header_keeps_its_second_apart_from_the_next() -> None:
    clock = iter([1764000000.999999, 1764000001.0, 1764000001.5, 1764000000.5])
    header = LineHeader(clock=lambda: next(clock))

    stamps = [header(None, "info", {})["timestamp"] for _ in range(4)]

    assert stamps == [
        "2025-11-24T16:00:00.999999Z",
        "2025-11-24T16:00:01Z",
        "2025-11-24T16:00:01.500000Z",
        "2025-11-24T16:00:00.500000Z",
    ]
