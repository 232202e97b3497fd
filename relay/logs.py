"""structlog set-up: one JSON object per line (or console rendering on a terminal), short snake_case events."""

from __future__ import annotations

import json
import logging
import sys
from typing import TextIO

import structlog


def _fallback(value: object) -> str:
    """A value JSON has no type for (an exception, a path) is logged as its repr."""
    return repr(value)


# One encoder for every line: `json.dumps` with structlog's `default=` builds a new encoder per call.
_LINE_ENCODER = json.JSONEncoder(default=_fallback)


def render_json(event_dict: dict, **_: object) -> str:
    return _LINE_ENCODER.encode(event_dict)


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
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(_LEVELS[level]),
        logger_factory=structlog.WriteLoggerFactory(file=stream),
        cache_logger_on_first_use=True,
    )
    # Libraries (aiohttp, kubernetes) log through the standard library: render their records the same way.
    handler = logging.StreamHandler(stream)
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(
        processor=renderer,
        foreign_pre_chain=[
            structlog.stdlib.add_log_level,
            structlog.stdlib.add_logger_name,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
        ],
    ))
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(max(_LEVELS[level], logging.WARNING))
