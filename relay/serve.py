"""`failover-relay serve`: certificates, the TLS admission server, and their upkeep, wired together."""

from __future__ import annotations

import asyncio
import gc
import signal
from collections.abc import Callable
from datetime import UTC, datetime

import structlog
from aiohttp import web

from certs.reload import ReloadingSSLContext
from certs.serving import ensure_certificates
from failover.admission.registry import defaulters_for
from failover.core.api import GroupKind
from failover.core.version import package_version, python_version
from failover.fence.member_relay import SUSPENDABLE
from relay.settings import Settings, SettingsError, open_injection
from webhook.blocking import BlockingPool
from webhook.drain import Connection, sweep
from webhook.fence_mutator import FencedCopies, keeping_suspended
from webhook.handlers import AdmissionHandlers, Mutator
from webhook.health import Readiness
from webhook.listener import CappedListener, CappedTLSSite, ConnectionLimits
from webhook.metrics import AdmissionMetrics
from webhook.mutators import injection_off_mutators, lookup_pool, savepoint_mutators
from webhook.server import AdmissionServer, connection_options

# How often the certificate files are re-checked: renewal happens days before expiry, and files mounted from a
# Secret are updated by the kubelet within about a minute, so a minute is fine-grained enough.
CERTIFICATE_CHECK_SECONDS = 60.0
# At the end of the grace, aiohttp's cleanup waits this long for what is still in flight before cancelling it (the
# grace itself is waited for by RelayServer.stop).
CLEANUP_SECONDS = 0.05

log = structlog.get_logger("failover_relay")


def now_utc() -> datetime:
    return datetime.now(UTC)


class RelayServer:
    """The running admission server and the tasks that keep its certificate fresh."""

    def __init__(self, settings: Settings, handlers: AdmissionHandlers | None = None) -> None:
        self.settings = settings
        self.drain_seconds = settings.drain()
        self.grace_seconds = settings.grace_seconds
        self.metrics = AdmissionMetrics()
        self.metrics.build_info.labels(package_version(), python_version()).set(1)
        self.files = ensure_certificates(settings.cert_dir, settings.service_name, settings.namespace, now_utc())
        self._report_repairs()
        self.tls = ReloadingSSLContext(self.files.cert_file, self.files.key_file, settings.client_ca_file)
        self.metrics.certificate_expiry.set(self.tls.not_after.timestamp())
        self.lookup_pool: BlockingPool | None = None
        self.binding_pool: BlockingPool | None = None
        self.fenced = FencedCopies()  # the member's fence records, kept by the fence watcher when it runs
        if handlers is None:
            savepoints = self._savepoint_mutators()
            if settings.member and settings.fence.member_cluster:
                # Fenced copies of the kinds the fence suspends stay suspended through Karmada's drift correction
                # (webhook/fence_mutator.py).
                savepoints = {
                    **savepoints,
                    **{
                        resource.group_kind: keeping_suspended(savepoints.get(resource.group_kind), self.fenced)
                        for resource in SUSPENDABLE
                    },
                }
            works: dict[GroupKind, Mutator] = {}
            if not settings.member:
                # Preserved-state labels on Works: on when the Karmada apiserver is reachable. Imported here: it
                # brings the Kubernetes client, which a member cluster's relay never loads.
                from relay.work_labels import work_mutators

                works, self.binding_pool = work_mutators(settings, savepoints, self.metrics)
            # The spelling the Karmada CRDs accept also decides how a missing policy purgeMode is defaulted.
            handlers = AdmissionHandlers(
                mutators={**savepoints, **works},
                defaulters=defaulters_for(settings.controllers.decisions.purge_mode_spelling),
            )
        self.readiness = Readiness(
            host=settings.host,
            port=settings.port,
            ca_file=self.files.ca_file,
            certificate_not_after=lambda: self.tls.not_after,
        )
        self.server = AdmissionServer(
            handlers,
            self.readiness,
            self.metrics,
            max_body_bytes=settings.max_body_bytes,
            require_client_certificate=settings.client_ca_file is not None,
        )
        self.runner: web.AppRunner | None = None
        self.listener: CappedListener | None = None
        self.port = settings.port

    def _savepoint_mutators(self) -> dict[GroupKind, Mutator]:
        """Savepoint injection, when a checkpoint root is configured (`--checkpoint-root` or the config file)."""
        savepoint = self.settings.savepoint
        if not savepoint.checkpoint_root:
            profiles = savepoint.injection_profiles()
            log.warning(
                "savepoint_injection_off",
                reason="no savepoint.checkpointRoot (--checkpoint-root): a moved copy carrying the failover job id is "
                "admitted unchanged, with a warning, and starts without its state",
                kinds=sorted(map(str, profiles)),
            )
            return injection_off_mutators(profiles)
        profiles, store, allowed_roots = open_injection(savepoint)
        self.lookup_pool = lookup_pool()
        log.info(
            "savepoint_injection",
            checkpoint_root=store.url_root,
            allowed_roots=[root.url_root for root in allowed_roots],
            late_restore=savepoint.late_restore,
            kinds=sorted(map(str, profiles)),
            failure_mode=savepoint.failure_mode,
            deadline_seconds=savepoint.lookup_deadline_seconds,
        )
        return savepoint_mutators(
            profiles,
            store,
            executor=self.lookup_pool,
            deadline=savepoint.lookup_deadline_seconds,
            failure_mode=savepoint.failure_mode,
            cache_ttl=savepoint.cache_ttl_seconds,
            metrics=self.metrics,
            allowed_roots=allowed_roots,
            late_restore=savepoint.late_restore,
        )

    @property
    def url(self) -> str:
        host = self.readiness.dial_host()
        return f"https://{'[' + host + ']' if ':' in host else host}:{self.port}"

    async def start(self) -> None:
        self.runner = web.AppRunner(
            self.server.application(),
            access_log=None,
            shutdown_timeout=CLEANUP_SECONDS,
            handle_signals=False,
            logger=self.server.http_error_log,
            **connection_options(),
        )
        await self.runner.setup()
        settings = self.settings
        site = CappedTLSSite(
            self.runner,
            settings.host,
            settings.port,
            ssl_context=lambda: self.tls.context,
            limits=ConnectionLimits(
                settings.max_connections, settings.max_connections_per_peer, settings.handshake_seconds
            ),
            on_refused=self.metrics.count_refused_connection,
        )
        await site.start()
        self.listener = listener = site.listener
        self.metrics.connections_open.set_function(lambda: listener.open)
        # With --port 0 the kernel picks the port; readiness must dial the one actually bound.
        self.readiness.port = self.port = self.runner.addresses[0][1]
        log.info(
            "serving",
            url=self.url,
            version=package_version(),
            event_loop=type(asyncio.get_running_loop()).__module__.partition(".")[0],
            cert_dir=str(self.settings.cert_dir),
            ca_file=str(self.files.ca_file),
            certificate_not_after=self.tls.not_after.isoformat(),
            managed_certificate=self.files.managed,
        )

    async def keep_certificate_fresh(self) -> None:
        while True:
            await asyncio.sleep(CERTIFICATE_CHECK_SECONDS)
            self.refresh_certificate()

    def refresh_certificate(self) -> None:
        try:
            self.files = ensure_certificates(
                self.settings.cert_dir, self.settings.service_name, self.settings.namespace, now_utc()
            )
        except Exception as error:  # noqa: BLE001  the renewal loop outlives any failure; the loaded cert serves on
            log.error("certificate_renewal_failed", error=str(error))
            self.metrics.certificate_renewal_errors.inc()
            return
        self._report_repairs()
        if self.tls.maybe_reload():
            log.info(
                "certificate_reloaded",
                not_after=self.tls.not_after.isoformat(),
                client_ca_file=str(self.settings.client_ca_file) if self.settings.client_ca_file else None,
            )
        elif self.tls.last_error:
            log.error("certificate_reload_failed", error=self.tls.last_error)
        self.metrics.certificate_expiry.set(self.tls.not_after.timestamp())

    def _report_repairs(self) -> None:
        """Damage found in the cert dir is an error for whoever watches the logs and the metric (certs/managed.py)."""
        for repair in self.files.repairs:
            log.error("certificate_directory_repaired", repair=repair, cert_dir=str(self.settings.cert_dir))
            self.metrics.certificate_repairs.inc()

    async def stop(self) -> None:
        """Drain, in order: report unready and keep serving for `drain_seconds` while endpoints catch up; close the
        listener (what the kernel already queued is still served, new connections are refused); then give what is
        open up to `grace_seconds`: reviews in flight finish, bodies still arriving get until half the grace, and
        every connection ends after its next answer or once it is quietly idle (webhook/drain.py). Only at the end
        of the grace is anything cut."""
        self.readiness.shutting_down = True  # and every answer from now on carries Connection: close
        if self.runner is not None and self.listener is not None:
            listener = self.listener
            loop = asyncio.get_running_loop()
            log.info("draining", drain_seconds=self.drain_seconds, grace_seconds=self.grace_seconds)
            # Idle keep-alive connections are not closed at once: a caller may be writing its next review into one
            # right now. Each is closed once quiet, while the drain still sends callers elsewhere.
            idle_since: dict[Connection, float] = {}
            await sweep(
                lambda: listener.connections,
                until=loop.time() + self.drain_seconds,
                stop_when_empty=False,
                clock=loop.time,
                idle_since=idle_since,
            )
            listener.close()
            deadline = loop.time() + self.grace_seconds
            self.server.cut_body_reads(loop.time() + self.grace_seconds / 2)
            await sweep(
                lambda: listener.connections,
                until=deadline,
                stop_when_empty=True,
                clock=loop.time,
                idle_since=idle_since,
            )
            if listener.connections:
                log.warning("grace_expired", connections=len(listener.connections))
            await self.runner.cleanup()
        if self.lookup_pool is not None:  # a lookup stuck on a hung storage must not hold the exit
            self.lookup_pool.shutdown()
        if self.binding_pool is not None:
            self.binding_pool.shutdown()
        log.info("stopped")


# SIGHUP (a closed terminal, a supervisor's stop) and SIGQUIT drain like SIGTERM and SIGINT: the default action of
# each would end the process without unready, drain or Lease release. SIGUSR1 and SIGUSR2 mean nothing here and are
# ignored with a log line rather than killing the server.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
IGNORED_SIGNALS = (signal.SIGUSR1, signal.SIGUSR2)


def install_signal_handlers(stop: Callable[[], None]) -> None:
    loop = asyncio.get_running_loop()
    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, _stopping, signum, stop)
    for signum in IGNORED_SIGNALS:
        loop.add_signal_handler(signum, _ignored, signum)


def _ignored(signum: int) -> None:
    log.info("signal_ignored", signal=signal.Signals(signum).name)


def _stopping(signum: int, stop: Callable[[], None]) -> None:
    log.info("signal_received", signal=signal.Signals(signum).name)
    stop()


async def serve(settings: Settings, handlers: AdmissionHandlers | None = None) -> None:
    relay = RelayServer(settings, handlers)
    await relay.start()
    # Everything allocated at start-up (modules, settings, the SSL context) is long-lived: move it out of the
    # cyclic GC's generations so full collections stay short on the request path.
    gc.freeze()
    stop = asyncio.Event()
    install_signal_handlers(stop.set)
    upkeep = supervised(asyncio.create_task(relay.keep_certificate_fresh()), "certificate-upkeep", relay.readiness)
    reconcile, cabundle = (
        None if task is None else supervised(task, task.get_name(), relay.readiness)
        for task in _start_cluster_tasks(settings, relay)
    )
    try:
        await stop.wait()
        log.info("shutting_down")
    finally:
        upkeep.cancel()
        # Unready and drained first (the webhook is what the apiserver waits on), then the Lease is released so a
        # standby replica takes over the loop at once rather than after the lease duration.
        await relay.stop()
        for task in (reconcile, cabundle):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)


def supervised(task: asyncio.Task[None], name: str, readiness: Readiness) -> asyncio.Task[None]:
    """`task`, a background task that runs until the relay stops: should it end by itself (a bug, or an error it does
    not live through), the relay turns unready and the cause is logged once, with its traceback. Its outages (an
    apiserver down, the storage unreachable) each task lives through on its own."""

    def ended(done: asyncio.Task[None]) -> None:
        if done.cancelled():
            return
        error = done.exception()
        cause = "it returned" if error is None else f"{type(error).__name__}: {' '.join(str(error).split())}"[:200]
        readiness.stopped_tasks[name] = cause
        log.error("background_task_stopped", task=name, cause=cause, exc_info=error)

    task.add_done_callback(ended)
    return task


def _start_cluster_tasks(settings: Settings, relay: RelayServer) -> tuple[asyncio.Task[None] | None, ...]:
    """The reconcile loop and the caBundle sync (each None when off or without cluster access); none in member mode,
    where the modules they need (the Kubernetes client among them) are never imported."""
    if settings.member:
        log.info("member_mode", serves=sorted(map(str, relay.server.handlers.mutators)))
        if not settings.fence.member_cluster:
            return None, None
        from relay.fence_watcher import start_fence_watcher  # brings the Kubernetes client: only when asked for

        return start_fence_watcher(settings, relay.fenced, relay.metrics.registry), None
    from controllers.access.kube import NoClusterConfig
    from relay.start_controllers import start_cabundle_sync, start_reconcile_loop

    try:
        reconcile = start_reconcile_loop(settings.controllers, relay.metrics.registry, settings)
    except NoClusterConfig as error:  # controllers.mode on without cluster access: a start-up error, exit 2
        raise SettingsError(str(error)) from None
    return reconcile, start_cabundle_sync(settings, relay.metrics.registry)
