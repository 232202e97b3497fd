"""Starting the reconcile loop from the program: find cluster access, build the settings, run until cancelled."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import structlog
from prometheus_client import CollectorRegistry

from controllers.cabundle import CaBundleInjector
from controllers.fence_store import FenceStore
from controllers.kube import NoClusterConfig, load_api_client
from controllers.manager import LoopSettings, ReconcileLoop, default_lease_namespace
from relay.migration import installed_spelling
from relay.settings import ControllerMode, ControllerSettings, Settings, open_injection

log = structlog.get_logger("failover_relay")


def loop_settings(settings: ControllerSettings) -> LoopSettings:
    return LoopSettings(
        lease_namespace=settings.lease_namespace or default_lease_namespace(),
        lease_name=settings.lease_name,
        workers=settings.workers,
        decisions=settings.decisions,
    )


def cluster_loop_settings(api_client: Any, settings: ControllerSettings, fence: Settings | None = None) -> LoopSettings:
    """`loop_settings`, with the purge-mode spelling the installed CRD accepts: never legacy on Karmada v1.19; with
    `fence` (the whole settings) and `fence.storage` on, the storage fence's store below the checkpoint root."""
    looped = loop_settings(settings)
    spelling = installed_spelling(api_client, looped.decisions.purge_mode_spelling)  # karmada#7792
    looped = replace(looped, decisions=replace(looped.decisions, purge_mode_spelling=spelling))
    if fence is None or not fence.fence.storage:
        return looped
    store = FenceStore(open_injection(fence.savepoint).store)
    log.info("storage_fence", checkpoint_root=store.store.url_root, poll_seconds=fence.fence.poll_seconds)
    return replace(looped, fences=store, fence_poll=timedelta(seconds=fence.fence.poll_seconds))


def start_cabundle_sync(settings: Settings, registry: CollectorRegistry) -> asyncio.Task[None] | None:
    """The caBundle updater as a task on every replica (also with --no-controllers, e.g. in member clusters), or
    None when it is off or there is no cluster access."""
    if not settings.cabundle_sync:
        return None
    kubeconfig = settings.controllers.kubeconfig
    try:
        api_client = load_api_client(Path(kubeconfig) if kubeconfig else None)
    except NoClusterConfig as error:
        log.info("cabundle_sync_disabled", reason=str(error))
        return None
    injector = CaBundleInjector(api_client, settings.cert_dir, registry)
    return asyncio.create_task(injector.run(), name="cabundle-sync")


def start_reconcile_loop(
    settings: ControllerSettings, registry: CollectorRegistry, fence: Settings | None = None
) -> asyncio.Task[None] | None:
    """The loop as a task, or None when it is off or (in auto mode) no cluster config is found; `fence`: as in
    `cluster_loop_settings`."""
    if settings.mode == ControllerMode.OFF:
        log.info("controllers_disabled")
        return None
    try:
        api_client = load_api_client(Path(settings.kubeconfig) if settings.kubeconfig else None)
    except NoClusterConfig as error:
        if settings.mode == ControllerMode.ON:
            raise
        log.info("controllers_disabled", reason=str(error))
        return None
    loop = ReconcileLoop(api_client, cluster_loop_settings(api_client, settings, fence), registry)
    log.info("controllers_enabled", host=api_client.configuration.host, lease_namespace=loop.settings.lease_namespace)
    return asyncio.create_task(loop.run(), name="reconcile-loop")
