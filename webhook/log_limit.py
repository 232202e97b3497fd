"""Bad requests logged once per source and period: a scanner must not fill the logs.

Every bad request is still counted (`failover_relay_admission_errors_total{reason}`); the log says which source sends
them, once per `period` seconds, with how many lines it held back since the last. Malformed HTTP that aiohttp itself
answers 400 (a bad request line or header) goes the same way, at WARNING and without a traceback, instead of
aiohttp's ERROR line with one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from aiohttp.http_exceptions import HttpProcessingError

# One line per source per minute: enough to see who is sending garbage, at most a line a minute per address.
PERIOD_SECONDS = 60.0
# Sources remembered at once; when full, those whose period has passed are forgotten, and a new source beyond that
# is not logged (still counted in the metrics): the limiter's memory is bounded under a flood from many addresses.
MAX_SOURCES = 4096


class LogLimiter:
    """Decides, as a function of the source and the injected clock, whether a line may be written now."""

    def __init__(
        self, clock: Callable[[], float], period: float = PERIOD_SECONDS, max_sources: int = MAX_SOURCES
    ) -> None:
        self.clock, self.period, self.max_sources = clock, period, max_sources
        self._windows: dict[str, tuple[float, int]] = {}  # source -> (when its last line was written, held back)

    def admit(self, source: str) -> int | None:
        """None: hold this line back; else the number of lines held back for `source` since its last one."""
        now = self.clock()
        window = self._windows.get(source)
        if window is not None and now - window[0] < self.period:
            self._windows[source] = (window[0], window[1] + 1)
            return None
        if window is None and len(self._windows) >= self.max_sources:
            self._windows = {key: value for key, value in self._windows.items() if now - value[0] < self.period}
            if len(self._windows) >= self.max_sources:
                return None
        self._windows[source] = (now, 0)
        return window[1] if window is not None else 0


class HttpErrorLog:
    """Stands in for aiohttp's server logger (`aiohttp.server`) in its RequestHandler: malformed HTTP, which aiohttp
    logs with `exception` from `handle_error`, becomes one limited WARNING line without a traceback; anything else
    goes to aiohttp's logger as before."""

    def __init__(self, limiter: LogLimiter, log: Any, fallback: logging.Logger | None = None) -> None:
        self.limiter, self.log = limiter, log
        self.fallback = fallback or logging.getLogger("aiohttp.server")

    def exception(self, message: str, *args: Any, exc_info: Any = None, **kwargs: Any) -> None:
        if isinstance(exc_info, HttpProcessingError):
            source = str(args[0]) if args else ""
            held_back = self.limiter.admit(source)
            if held_back is not None:
                self.log.warning(
                    "bad_request",
                    source=source,
                    status=exc_info.code,
                    reason=type(exc_info).__name__,
                    message=" ".join(str(exc_info.message).split())[:200],
                    held_back=held_back,
                )
            return
        self.fallback.exception(message, *args, exc_info=exc_info, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.fallback, name)
