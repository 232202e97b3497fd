"""`failover-relay controllers`: the reconcile loop without the webhook, for operators who run them apart."""

from __future__ import annotations

import asyncio
from pathlib import Path

import structlog
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from controllers.access.kube import load_api_client
from controllers.manager import ReconcileLoop
from relay.serve import install_signal_handlers
from relay.settings import Settings
from relay.start_controllers import cluster_loop_settings

log = structlog.get_logger("failover_relay")


async def run_controllers(settings: Settings, metrics_address: tuple[str, int]) -> None:
    """Until SIGTERM/SIGINT: the loop, and /metrics + /healthz over plain HTTP (no secrets are served there)."""
    controller_settings = settings.controllers
    kubeconfig = controller_settings.kubeconfig
    api_client = load_api_client(Path(kubeconfig) if kubeconfig else None)
    registry = CollectorRegistry()
    loop = ReconcileLoop(api_client, cluster_loop_settings(api_client, controller_settings, settings), registry)

    async def metrics(_: web.Request) -> web.Response:
        response = web.Response(body=generate_latest(registry))
        response.headers["Content-Type"] = CONTENT_TYPE_LATEST
        return response

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    await web.TCPSite(runner, *metrics_address).start()
    log.info(
        "controllers_serving_metrics",
        address=f"{metrics_address[0]}:{runner.addresses[0][1]}",
        kubernetes=api_client.configuration.host,
    )

    stop = asyncio.Event()
    install_signal_handlers(stop.set)
    reconcile = asyncio.create_task(loop.run(), name="reconcile-loop")
    waiting = asyncio.create_task(stop.wait())
    try:
        done, _ = await asyncio.wait({reconcile, waiting}, return_when=asyncio.FIRST_COMPLETED)
        if reconcile in done:
            reconcile.result()  # the loop never ends by itself: surface why it did
    finally:
        log.info("shutting_down")
        for task in (reconcile, waiting):
            task.cancel()
        await asyncio.gather(reconcile, waiting, return_exceptions=True)
        await runner.cleanup()
