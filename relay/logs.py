"""structlog set-up: one JSON object per line (or console rendering on a terminal), short snake_case events."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TextIO

import structlog
import structlog.contextvars
from structlog.typing import EventDict, WrappedLogger

from webhook.encoding import dumps


def _fallback(value: object) -> str:
    """A value JSON has no type for (an exception, a path) is logged as its repr."""
    return repr(value)


def render_json(event_dict: dict, **_: object) -> str:
    """One compact JSON object (webhook/encoding.py: orjson, with the standard library for what it refuses)."""
    return dumps(event_dict, default=_fallback).decode()


class NamedWriteLogger(structlog.WriteLogger):
    """structlog's WriteLogger that keeps the name given to `get_logger("failover_relay.webhook")`, so each line
    can say which component wrote it (the plain factory drops the name)."""

    def __init__(self, file: TextIO, name: str | None) -> None:
        super().__init__(file)
        self.name = name


# structlog's names for the levels of its method names (structlog.processors.add_log_level).
_LEVEL_OF_METHOD = {"warn": "warning", "exception": "error"}
_UTC = UTC


class LineHeader:
    """`logger` (the name of our logger), `level` and `timestamp` of a line, in one processor instead of three:
    12k instructions less per line, on a path that logs every patched review (docs/benchmarks.md). The timestamp is
    what structlog's `TimeStamper(fmt="iso", utc=True)` writes, microseconds and `Z`; the part up to the second is
    formatted once a second."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        # (second, its text) as one value: threads log too (lookups, the loop), and each reads a consistent pair.
        self._second_text: tuple[int, str] = (-1, "")

    def __call__(self, logger: WrappedLogger, method_name: str, event_dict: EventDict) -> EventDict:
        name = getattr(logger, "name", None)
        if name and "logger" not in event_dict:
            event_dict["logger"] = name
        event_dict["level"] = _LEVEL_OF_METHOD.get(method_name, method_name)
        # Rounded to the microsecond as datetime.fromtimestamp rounds, so the line says what TimeStamper would.
        second, microsecond = divmod(round(self.clock() * 1_000_000), 1_000_000)
        cached, text = self._second_text
        if second != cached:
            text = datetime.fromtimestamp(second, _UTC).strftime("%Y-%m-%dT%H:%M:%S")
            self._second_text = (second, text)
        # datetime.isoformat leaves out a zero fraction; so does TimeStamper, and so does this.
        event_dict["timestamp"] = f"{text}.{microsecond:06d}Z" if microsecond else f"{text}Z"
        return event_dict


_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


def configure_logging(log_format: str = "auto", level: str = "info", stream: TextIO | None = None) -> None:
    """`auto` renders for people on a terminal and JSON everywhere else (pods, files, pipes)."""
    stream = stream or sys.stderr
    use_json = log_format == "json" or (log_format == "auto" and not stream.isatty())
    renderer: structlog.typing.Processor
    if use_json:
        renderer = structlog.processors.JSONRenderer(serializer=render_json)
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=False)
    structlog.configure(
        processors=[
            # The context bound for a reconcile (controller, key) or a review (uid, kind, operation).
            structlog.contextvars.merge_contextvars,
            LineHeader(),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(_LEVELS[level]),
        logger_factory=lambda *args: NamedWriteLogger(stream, str(args[0]) if args else None),
        cache_logger_on_first_use=True,
    )
    # Libraries (aiohttp, kubernetes) log through the standard library: render their records the same way.
    handler = logging.StreamHandler(stream)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
            foreign_pre_chain=[
                structlog.contextvars.merge_contextvars,
                structlog.stdlib.add_log_level,
                structlog.stdlib.add_logger_name,
                structlog.processors.TimeStamper(fmt="iso", utc=True),
                # A library's logger.exception() hands over exc_info as a tuple; render it as the traceback text,
                # not the repr of a traceback object.
                structlog.processors.format_exc_info,
            ],
        )
    )
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(max(_LEVELS[level], logging.WARNING))
    # urllib3 logs every retry of the Kubernetes client ("Retrying (Retry(total=2, ...)) after connection broken"),
    # three lines per failed call while an apiserver is down; the caller's own line (lease_update_failed,
    # watch_failed) says what failed and is rate-limited where it repeats.
    logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)
