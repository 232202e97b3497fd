"""The aiohttp application: `/validate`, `/mutate`, `/healthz`, `/readyz`, `/metrics`.

Request handling reads as a straight line of guard clauses (after controller-runtime's `admission/http.go`):
wrong content type or encoding → 415, too large → 413, body too slow → 408, empty or undecodable or not an
AdmissionReview v1 → 400, each answered with a one-line reason and logged once. Only a well-formed review reaches
the handlers, and whatever they raise is turned into an AdmissionReview error response, never a 500 from the server.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import structlog
from aiohttp import web
from aiohttp.web_protocol import RequestPayloadError
from structlog.contextvars import bind_contextvars, reset_contextvars

from failover.core.verdict import Verdict, clip
from webhook.handlers import AdmissionHandlers
from webhook.health import Readiness
from webhook.log_limit import HttpErrorLog, LogLimiter
from webhook.metrics import AdmissionMetrics
from webhook.review import (
    AdmissionRequest,
    BodyTooLarge,
    ClientCertificateRequired,
    MalformedReview,
    ReviewError,
    UnsupportedMediaType,
    answer,
    encode,
    failed,
    parse_review,
)

# Slow clients. The apiserver writes a review in one go and stops waiting for us after the webhook's timeoutSeconds
# (at most 30 s), so a body still arriving after 10 s comes from something else: answer 408 and free the connection.
BODY_READ_TIMEOUT_SECONDS = 10.0
# aiohttp's keep-alive timer starts when a connection is accepted and restarts after every response; it closes a
# connection on which no complete request head has arrived by then. So this one number is both the idle timeout and
# the header timeout that cuts off a client trickling its request line and headers (slowloris). Closing an idle
# connection costs the apiserver one new handshake at its next call; 15 s keeps a busy apiserver's connections open.
HEADER_AND_IDLE_TIMEOUT_SECONDS = 15.0
# Header limits: Kubernetes sends a dozen short headers; these are aiohttp's defaults, restated so they are deliberate.
MAX_REQUEST_LINE_BYTES = 8190
MAX_HEADER_BYTES = 8190
MAX_HEADERS = 128
# After an early answer (413, 415) aiohttp reads and discards the rest of the body so the client sees the answer
# rather than a reset; 2 s is plenty for the 3 MiB we accept, and a slow sender cannot hold the connection longer.
LINGERING_SECONDS = 2.0

# Bodies up to this size are parsed inline; a real review (one object, or two on UPDATE) is a few kilobytes.
INLINE_PARSE_BYTES = 256 * 1024

# The `kind` label of requests whose kind no rule or mutator serves.
OTHER_KIND = "other"

Handler = Callable[[AdmissionRequest], Awaitable[Verdict | None]]


class BodyReadTimeout(ReviewError):
    """The request body did not arrive within `body_timeout` seconds."""

    status = 408


class UnreadableBody(ReviewError):
    """The body breaks HTTP framing (a bad chunk, fewer bytes than Content-Length announced)."""


def connection_options(header_and_idle_timeout: float = HEADER_AND_IDLE_TIMEOUT_SECONDS) -> dict[str, Any]:
    """aiohttp `AppRunner` keyword arguments that bound what one connection may hold (see the constants above)."""
    # auto_decompress off: the apiserver never compresses a review, and a compressed body is a decompression bomb
    # we need not defuse; it is refused with 415 before it is read.
    return {
        "keepalive_timeout": header_and_idle_timeout,
        "max_line_size": MAX_REQUEST_LINE_BYTES,
        "max_field_size": MAX_HEADER_BYTES,
        "max_headers": MAX_HEADERS,
        "lingering_time": LINGERING_SECONDS,
        "auto_decompress": False,
    }


class AdmissionServer:
    def __init__(
        self,
        handlers: AdmissionHandlers,
        readiness: Readiness,
        metrics: AdmissionMetrics | None = None,
        *,
        max_body_bytes: int,  # relay/settings/declarations.py declares the limit (server.maxBodyBytes) and why
        logger: Any = None,
        body_timeout: float = BODY_READ_TIMEOUT_SECONDS,
        require_client_certificate: bool = False,
    ) -> None:
        self.handlers = handlers
        self.readiness = readiness
        self.metrics = metrics or AdmissionMetrics()
        self.max_body_bytes = max_body_bytes
        self.body_timeout = body_timeout
        # mTLS: the TLS layer verifies any client certificate against the client CA (CERT_OPTIONAL, so the kubelet's
        # probes and our own readiness dial need none); admissions without one are refused here.
        self.require_client_certificate = require_client_certificate
        self.log = logger or structlog.get_logger("failover_relay.webhook")
        # Bad requests: one line per source and period (webhook/log_limit.py); aiohttp's own 400s go the same way.
        self.log_limiter = LogLimiter(time.monotonic)
        self.http_error_log = HttpErrorLog(self.log_limiter, self.log)
        self._large_parse = asyncio.Semaphore(1)
        # Bodies still arriving, and the loop time by which one must have arrived once the server is stopping.
        self._body_reads: set[asyncio.Timeout] = set()
        self._body_deadline: float | None = None

    def cut_body_reads(self, deadline: float) -> None:
        """Stopping: a body still arriving must be complete by `deadline` (loop time), else it is answered 408 with
        Connection: close, so its caller gets an answer within the grace instead of a connection cut under it."""
        self._body_deadline = deadline
        for timeout in self._body_reads:
            when = timeout.when()
            if when is None or when > deadline:
                timeout.reschedule(deadline)

    def application(self) -> web.Application:
        # client_max_size makes aiohttp refuse a larger body while reading it, before it is buffered whole.
        app = web.Application(client_max_size=self.max_body_bytes)
        app.router.add_post("/validate", self._validate)
        app.router.add_post("/mutate", self._mutate)
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics)
        app.on_response_prepare.append(self._close_while_draining)
        return app

    async def _close_while_draining(self, _: web.Request, response: web.StreamResponse) -> None:
        # Once unready, every answer says Connection: close and the connection ends after it, so callers open their
        # next connection elsewhere instead of writing into one we are about to close.
        if self.readiness.shutting_down:
            response.force_close()
            response.headers["Connection"] = "close"

    async def _validate(self, request: web.Request) -> web.Response:
        return await self._serve(request, "validate", self.handlers.validate)

    async def _mutate(self, request: web.Request) -> web.Response:
        return await self._serve(request, "mutate", self.handlers.mutate)

    async def _serve(self, http: web.Request, endpoint: str, handler: Handler) -> web.Response:
        started = time.perf_counter()
        metrics = self.metrics
        metrics.requests_in_flight += 1
        try:
            # No transport (the peer is gone) reads as no certificate: refused, not an AttributeError.
            if self.require_client_certificate and not http.get_extra_info("peercert"):
                return self._bad_request(
                    endpoint,
                    ClientCertificateRequired("a client certificate signed by the configured client CA is required"),
                    started,
                    http.remote,
                )
            try:
                admission = await self._parse_bounded(endpoint, await self._read_body(http))
            except ReviewError as error:
                return self._bad_request(endpoint, error, started, http.remote)
            # Every line this review causes carries its uid, also from the lookup threads (webhook/blocking.py);
            # the review's `admission_review` line names its kind and operation. Bound and reset by hand: the
            # context manager (`bound_contextvars`, a generator) costs several times as much per review.
            tokens = bind_contextvars(uid=admission.uid)
            try:
                return await self._answer(endpoint, handler, admission, started)
            finally:
                reset_contextvars(**tokens)
        finally:
            metrics.requests_in_flight -= 1

    async def _answer(
        self, endpoint: str, handler: Handler, admission: AdmissionRequest, started: float
    ) -> web.Response:
        """The handler's verdict on a well-formed review as the HTTP answer, counted and logged."""
        metrics = self.metrics
        try:
            verdict = await handler(admission)
        except Exception as error:  # a bug in a rule must not take the server down or answer 500
            self.log.exception("review_failed", endpoint=endpoint, uid=admission.uid, kind=admission.kind)
            reason = type(error).__name__
            body = encode(
                admission, failed(admission, clip(f"failover-relay could not evaluate {admission.kind}: {reason}", 200))
            )
            summary, warnings, audit = "error", 0, None
            metrics.errors.labels(endpoint, "internal").inc()
        else:
            body = answer(admission, verdict)
            if verdict is None:
                summary, reason, warnings, audit = "allowed", "not-handled", 0, None
            else:
                summary, reason = verdict.summary, verdict.message
                warnings, audit = len(verdict.warnings), (dict(verdict.audit) if verdict.audit else None)
        elapsed = time.perf_counter() - started
        metrics.count_answer(endpoint, self._kind_label(admission), summary, elapsed)
        # One line at info for what an operator acts on (a denial, a patch, a warning, an error); a review
        # allowed unchanged is counted in the metrics above and logged at debug only (docs/operations.md).
        if summary != "allowed" or warnings:
            self._log_review(self.log.info, endpoint, admission, summary, reason, warnings, audit, elapsed)
        elif self.log.is_enabled_for(logging.DEBUG):
            self._log_review(self.log.debug, endpoint, admission, summary, reason, warnings, audit, elapsed)
        return web.Response(body=body, content_type="application/json")

    @staticmethod
    def _log_review(
        write: Callable[..., Any],
        endpoint: str,
        admission: AdmissionRequest,
        summary: str,
        reason: str,
        warnings: int,
        audit: dict[str, str] | None,
        elapsed: float,
    ) -> None:
        write(
            "admission_review",
            endpoint=endpoint,
            uid=admission.uid,
            kind=admission.kind,
            object=admission.display_name or _object_name(admission),
            operation=admission.operation,
            dry_run=admission.dry_run,
            verdict=summary,
            reason=reason or None,
            warnings=warnings,
            audit=audit,
            latency_ms=round(elapsed * 1000, 3),
        )

    def _kind_label(self, admission: AdmissionRequest) -> str:
        # The kind comes from the caller; naming only the kinds we serve keeps the series bounded when something
        # other than the apiserver posts reviews of made-up kinds.
        return admission.kind if admission.group_kind in self.handlers.kinds else OTHER_KIND

    async def _parse_bounded(self, endpoint: str, body: bytes) -> AdmissionRequest:
        """Small bodies (every real review) are parsed on the event loop; large ones in a worker thread, one at a
        time: the interpreter then switches back to the loop every few milliseconds, so /healthz and small reviews
        keep being answered while a 3 MiB body of empty objects is decoded and checked."""
        if len(body) <= INLINE_PARSE_BYTES:
            return self._parse(endpoint, body)
        async with self._large_parse:
            return await asyncio.to_thread(self._parse, endpoint, body)

    def _parse(self, endpoint: str, body: bytes) -> AdmissionRequest:
        try:
            return parse_review(body)
        except ReviewError:
            raise
        except Exception as error:  # a gap in parse_review's checks is still a bad request: 400, never a 500
            self.log.exception("review_unparsable", endpoint=endpoint)
            raise MalformedReview(f"request is not a well-formed AdmissionReview ({type(error).__name__})") from None

    async def _read_body(self, http: web.Request) -> bytes:
        if http.content_type != "application/json":
            raise UnsupportedMediaType(
                f"content type {clip(http.content_type, 60)!r} is not supported; send application/json"
            )
        encoding = http.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding != "identity":
            raise UnsupportedMediaType(
                f"content encoding {clip(encoding, 60)!r} is not supported; send the review uncompressed"
            )
        if http.content_length is not None and http.content_length > self.max_body_bytes:
            raise BodyTooLarge(
                f"request body of {http.content_length} bytes exceeds the limit of {self.max_body_bytes}"
            )
        try:
            if http.content.is_eof():  # the whole body arrived with the head, as the apiserver sends it
                return await http.read()
            deadline = asyncio.get_running_loop().time() + self.body_timeout
            if self._body_deadline is not None:
                deadline = min(deadline, self._body_deadline)
            async with asyncio.timeout_at(deadline) as timeout:
                self._body_reads.add(timeout)
                try:
                    return await http.read()
                finally:
                    self._body_reads.discard(timeout)
        except web.HTTPRequestEntityTooLarge:
            raise BodyTooLarge(f"request body exceeds the limit of {self.max_body_bytes} bytes") from None
        except RequestPayloadError as error:
            raise UnreadableBody(f"request body cannot be read: {clip(' '.join(str(error).split()), 100)}") from None
        except TimeoutError:
            if self._body_deadline is not None:
                raise BodyReadTimeout("request body still arriving when the server stopped") from None
            raise BodyReadTimeout(f"request body did not arrive within {self.body_timeout:g} s") from None

    def _bad_request(self, endpoint: str, error: ReviewError, started: float, source: str | None) -> web.Response:
        reason = type(error).__name__
        self.metrics.errors.labels(endpoint, reason).inc()
        self.metrics.latency.labels(endpoint).observe(time.perf_counter() - started)
        held_back = self.log_limiter.admit(source or "")
        if held_back is not None:
            self.log.warning(
                "bad_request",
                endpoint=endpoint,
                source=source,
                status=error.status,
                reason=reason,
                message=str(error),
                held_back=held_back,
            )
        return web.Response(status=error.status, text=str(error) + "\n")

    async def _healthz(self, _: web.Request) -> web.Response:
        # Answered by the event loop that serves admissions: a reply means the loop is running.
        return web.Response(text="ok\n")

    async def _readyz(self, _: web.Request) -> web.Response:
        try:
            problems = await self.readiness.problems()
        except Exception as error:  # a probe answers 503 with a reason, never 500
            self.log.exception("readiness_check_failed")
            problems = (f"readiness check failed: {type(error).__name__}",)
        if problems:
            return web.Response(status=503, text="not ready: " + "; ".join(problems) + "\n")
        return web.Response(text="ok\n")

    async def _metrics(self, _: web.Request) -> web.Response:
        response = web.Response(body=self.metrics.exposition())
        response.headers["Content-Type"] = self.metrics.content_type
        return response


def _object_name(admission: AdmissionRequest) -> str:
    metadata = (admission.object or admission.old_object or {}).get("metadata")
    if not isinstance(metadata, dict):
        return ""
    name = metadata.get("name") or metadata.get("generateName") or ""
    return str(name)[:253]
