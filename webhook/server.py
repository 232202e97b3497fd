"""The aiohttp application: `/validate`, `/mutate`, `/healthz`, `/readyz`, `/metrics`.

Request handling reads as a straight line of guard clauses (after controller-runtime's `admission/http.go`):
wrong content type → 415, too large → 413, empty or undecodable or not an AdmissionReview v1 → 400, each answered
with a one-line reason and logged once. Only a well-formed review reaches the handlers, and whatever they raise is
turned into an AdmissionReview error response, never a 500 from the server.
"""

from __future__ import annotations

import time
from typing import Any, Awaitable, Callable

import structlog
from aiohttp import web

from failover.verdict import clip
from webhook import responses
from webhook.handlers import AdmissionHandlers, Outcome
from webhook.health import Readiness
from webhook.metrics import AdmissionMetrics
from webhook.review import AdmissionRequest, BodyTooLarge, ReviewError, UnsupportedMediaType, parse_review
from webhook.serialize import dumps

# An AdmissionReview carries the object and, on UPDATE, the old object. etcd refuses requests over 1.5 MiB by
# default, so one object is at most that; two of them plus the envelope stay under 3 MiB.
DEFAULT_MAX_BODY_BYTES = 3 * 1024 * 1024

Handler = Callable[[AdmissionRequest], Awaitable[Outcome]]


class AdmissionServer:
    def __init__(
        self,
        handlers: AdmissionHandlers,
        readiness: Readiness,
        metrics: AdmissionMetrics | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        logger: Any = None,
    ) -> None:
        self.handlers = handlers
        self.readiness = readiness
        self.metrics = metrics or AdmissionMetrics()
        self.max_body_bytes = max_body_bytes
        self.log = logger or structlog.get_logger("failover_relay.webhook")

    def application(self) -> web.Application:
        # client_max_size makes aiohttp refuse a larger body while reading it, before it is buffered whole.
        app = web.Application(client_max_size=self.max_body_bytes)
        app.router.add_post("/validate", self._validate)
        app.router.add_post("/mutate", self._mutate)
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics)
        return app

    async def _validate(self, request: web.Request) -> web.Response:
        return await self._serve(request, "validate", self.handlers.validate)

    async def _mutate(self, request: web.Request) -> web.Response:
        return await self._serve(request, "mutate", self.handlers.mutate)

    async def _serve(self, http: web.Request, endpoint: str, handler: Handler) -> web.Response:
        started = time.perf_counter()
        metrics = self.metrics
        metrics.in_flight.inc()
        try:
            try:
                admission = parse_review(await self._read_body(http))
            except ReviewError as error:
                return self._bad_request(endpoint, error, started)
            try:
                outcome = await handler(admission)
            except Exception as error:  # a bug in a rule must not take the server down or answer 500
                self.log.exception("review_failed", endpoint=endpoint, uid=admission.uid, kind=admission.kind)
                outcome = Outcome(
                    responses.errored(admission.uid, clip(f"failover-relay could not evaluate {admission.kind}: "
                                                          f"{type(error).__name__}", 200)),
                    "error", type(error).__name__)
            body = dumps(responses.review(admission.api_version, outcome.response))
            elapsed = time.perf_counter() - started
            metrics.requests.labels(endpoint, admission.kind, outcome.verdict).inc()
            metrics.latency.labels(endpoint).observe(elapsed)
            if outcome.verdict == "error":
                metrics.errors.labels(endpoint, "internal").inc()
            self.log.info(
                "admission_review", endpoint=endpoint, uid=admission.uid, kind=admission.kind,
                object=admission.display_name or _object_name(admission), operation=admission.operation,
                dry_run=admission.dry_run, verdict=outcome.verdict, reason=outcome.reason or None,
                warnings=len(outcome.response.get("warnings", ())), latency_ms=round(elapsed * 1000, 3))
            return web.Response(body=body, content_type="application/json")
        finally:
            metrics.in_flight.dec()

    async def _read_body(self, http: web.Request) -> bytes:
        if http.content_type != "application/json":
            raise UnsupportedMediaType(f"content type {clip(http.content_type, 60)!r} is not supported; "
                                       "send application/json")
        if http.content_length is not None and http.content_length > self.max_body_bytes:
            raise BodyTooLarge(f"request body of {http.content_length} bytes exceeds the limit of "
                               f"{self.max_body_bytes}")
        try:
            return await http.read()
        except web.HTTPRequestEntityTooLarge:
            raise BodyTooLarge(f"request body exceeds the limit of {self.max_body_bytes} bytes") from None

    def _bad_request(self, endpoint: str, error: ReviewError, started: float) -> web.Response:
        reason = type(error).__name__
        self.metrics.errors.labels(endpoint, reason).inc()
        self.metrics.latency.labels(endpoint).observe(time.perf_counter() - started)
        self.log.warning("bad_request", endpoint=endpoint, status=error.status, reason=reason, message=str(error))
        return web.Response(status=error.status, text=str(error) + "\n")

    async def _healthz(self, _: web.Request) -> web.Response:
        # Answered by the event loop that serves admissions: a reply means the loop is running.
        return web.Response(text="ok\n")

    async def _readyz(self, _: web.Request) -> web.Response:
        problems = await self.readiness.problems()
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
