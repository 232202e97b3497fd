"""`failover-relay serve`: certificates, the TLS admission server, and their upkeep, wired together."""

from __future__ import annotations

import asyncio
import gc
import signal
from datetime import datetime, timezone

import structlog
from aiohttp import web

from certs.reload import ReloadingSSLContext
from certs.store import ensure_certificates
from relay.settings import Settings
from webhook.handlers import AdmissionHandlers
from webhook.health import Readiness
from webhook.metrics import AdmissionMetrics
from webhook.server import AdmissionServer

# How often the certificate files are re-checked: renewal happens days before expiry, and files mounted from a
# Secret are updated by the kubelet within about a minute, so a minute is fine-grained enough.
CERTIFICATE_CHECK_SECONDS = 60.0
# In-flight reviews get this long to finish on shutdown; the apiserver's own webhook timeout is at most 30 s and
# ours are 3-5 s.
SHUTDOWN_GRACE_SECONDS = 10.0

log = structlog.get_logger("failover_relay")


def now_utc() -> datetime:
    return datetime.now(timezone.utc)


class RelayServer:
    """The running admission server and the tasks that keep its certificate fresh."""

    def __init__(self, settings: Settings, handlers: AdmissionHandlers | None = None) -> None:
        self.settings = settings
        self.metrics = AdmissionMetrics()
        self.files = ensure_certificates(settings.cert_dir, settings.service_name, settings.namespace, now_utc())
        self.tls = ReloadingSSLContext(self.files.cert_file, self.files.key_file)
        self.metrics.certificate_expiry.set(self.tls.not_after.timestamp())
        self.readiness = Readiness(
            host=settings.host, port=settings.port, ca_file=self.files.ca_file,
            certificate_not_after=lambda: self.tls.not_after)
        self.server = AdmissionServer(handlers or AdmissionHandlers(), self.readiness, self.metrics,
                                      settings.max_body_bytes)
        self.runner: web.AppRunner | None = None
        self.port = settings.port

    @property
    def url(self) -> str:
        host = self.readiness.dial_host()
        return f"https://{'[' + host + ']' if ':' in host else host}:{self.port}"

    async def start(self) -> None:
        self.runner = web.AppRunner(self.server.application(), access_log=None,
                                    shutdown_timeout=SHUTDOWN_GRACE_SECONDS, handle_signals=False)
        await self.runner.setup()
        site = web.TCPSite(self.runner, self.settings.host, self.settings.port, ssl_context=self.tls.context)
        await site.start()
        # With --port 0 the kernel picks the port; readiness must dial the one actually bound.
        self.readiness.port = self.port = self.runner.addresses[0][1]
        log.info("serving", url=self.url, cert_dir=str(self.settings.cert_dir), ca_file=str(self.files.ca_file),
                 certificate_not_after=self.tls.not_after.isoformat(), managed_certificate=self.files.managed)

    async def keep_certificate_fresh(self) -> None:
        while True:
            await asyncio.sleep(CERTIFICATE_CHECK_SECONDS)
            self.refresh_certificate()

    def refresh_certificate(self) -> None:
        try:
            self.files = ensure_certificates(self.settings.cert_dir, self.settings.service_name,
                                             self.settings.namespace, now_utc())
        except Exception as error:  # keep serving with the loaded certificate; readiness reports expiry
            log.error("certificate_renewal_failed", error=str(error))
            return
        if self.tls.maybe_reload():
            log.info("certificate_reloaded", not_after=self.tls.not_after.isoformat())
        elif self.tls.last_error:
            log.error("certificate_reload_failed", error=self.tls.last_error)
        self.metrics.certificate_expiry.set(self.tls.not_after.timestamp())

    async def stop(self) -> None:
        self.readiness.shutting_down = True
        if self.runner is not None:
            await self.runner.cleanup()
        log.info("stopped")


async def serve(settings: Settings, handlers: AdmissionHandlers | None = None) -> None:
    relay = RelayServer(settings, handlers)
    await relay.start()
    # Everything allocated at start-up (modules, settings, the SSL context) is long-lived: move it out of the
    # cyclic GC's generations so full collections stay short on the request path.
    gc.freeze()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    upkeep = asyncio.create_task(relay.keep_certificate_fresh())
    try:
        await stop.wait()
        log.info("shutting_down")
    finally:
        upkeep.cancel()
        await relay.stop()
