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


class NamedWriteLogger(structlog.WriteLogger):
    """structlog's WriteLogger that keeps the name given to `get_logger("failover_relay.webhook")`, so each line
    can say which component wrote it (the plain factory drops the name)."""

    def __init__(self, file: TextIO, name: str | None) -> None:
        super().__init__(file)
        self.name = name


def add_component(logger: object, _: str, event_dict: dict) -> dict:
    """`logger` field: the name of our logger, or of the library's standard-library logger."""
    name = getattr(logger, "name", None)
    if name and "logger" not in event_dict:
        event_dict["logger"] = name
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
            add_component,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(_LEVELS[level]),
        logger_factory=lambda *args: NamedWriteLogger(stream, str(args[0]) if args else None),
        cache_logger_on_first_use=True,
    )
    # Libraries (aiohttp, kubernetes) log through the standard library: render their records the same way.
    handler = logging.StreamHandler(stream)
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        foreign_pre_chain=[
            structlog.stdlib.add_log_level,
            structlog.stdlib.add_logger_name,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            # A library's logger.exception() hands over exc_info as a tuple; render it as the traceback text,
            # not the repr of a traceback object.
            structlog.processors.format_exc_info,
        ],
    ))
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(max(_LEVELS[level], logging.WARNING))
