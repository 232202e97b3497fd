"""Starting the reconcile loop from the program: find cluster access, build the settings (with the purge-mode spelling
the installed CRDs accept), run until cancelled."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import structlog
from kubernetes import client
from prometheus_client import CollectorRegistry

from controllers.access.fence_store import FenceStore
from controllers.access.kube import NoClusterConfig, load_api_client
from controllers.cabundle import CaBundleInjector
from controllers.manager import LoopSettings, ReconcileLoop, default_lease_namespace
from controllers.reconcilers.restore_watch import RestoreWatch
from failover.core.api import FLINK_DEPLOYMENT, RESOURCE_BINDINGS, PurgeModeSpelling
from failover.reconcile.purge_spelling import crd_purge_mode_enum, spelling_to_write
from relay.kube_requests import raw_request
from relay.settings import ControllerMode, ControllerSettings, Settings, open_injection

log = structlog.get_logger("failover_relay")
# The purge-mode spelling's lines keep the logger they have always had.
spelling_log = structlog.get_logger("failover_relay.migration")


def loop_settings(settings: ControllerSettings) -> LoopSettings:
    return LoopSettings(
        lease_namespace=settings.lease_namespace or default_lease_namespace(),
        lease_name=settings.lease_name,
        workers=settings.workers,
        decisions=settings.decisions,
    )


def cluster_loop_settings(api_client: Any, settings: ControllerSettings, fence: Settings | None = None) -> LoopSettings:
    """`loop_settings`, with the purge-mode spelling the installed CRD accepts: never legacy on Karmada v1.19; with
    `fence` (the whole settings) and a checkpoint root, the storage read for a moved copy's first checkpoint, and with
    the storage fence on (`Settings.storage_fence_on`), the storage fence's store below that root."""
    looped = loop_settings(settings)
    spelling = installed_spelling(api_client, looped.decisions.purge_mode_spelling)  # karmada#7792
    looped = replace(looped, decisions=replace(looped.decisions, purge_mode_spelling=spelling))
    if fence is None or not fence.savepoint.checkpoint_root:
        # A moved copy is restored once its job completed a checkpoint, which only the storage shows: without it,
        # once it is Healthy (failover/state/restoration.py).
        log.warning("restored_when_healthy", reason="no savepoint.checkpointRoot: the loop cannot see checkpoints")
        return looped
    setup = open_injection(fence.savepoint)
    looped = replace(
        looped, restore_watch=RestoreWatch(setup.profiles[FLINK_DEPLOYMENT], (setup.store, *setup.allowed_roots))
    )
    if not fence.storage_fence_on():
        return looped
    store = FenceStore(setup.store)
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


def installed_spelling(api_client: client.ApiClient, configured: PurgeModeSpelling) -> PurgeModeSpelling:
    """The spelling the loop may write on this control plane, from the installed ResourceBinding CRD's enum (the
    object the loop writes eviction tasks into); the configured one when the CRD cannot be read."""
    name = f"{RESOURCE_BINDINGS.plural}.{RESOURCE_BINDINGS.group}"
    try:
        # The raw JSON: the typed model renames schema keys (openAPIV3Schema) and validates more than needed.
        status, _, data = raw_request(
            api_client, "GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
        )
        if status != 200:
            raise LookupError(f"HTTP {status}")
        crd = json.loads(data)
    except Exception as error:  # noqa: BLE001  no RBAC for CRDs, an old cluster, anything: the setting stays in charge
        spelling_log.warning(
            "purge_mode_spelling_undetected", crd=name, error=type(error).__name__, configured=configured
        )
        return configured
    enum = crd_purge_mode_enum(crd)
    spelling = spelling_to_write(enum, configured)
    if spelling != configured:
        spelling_log.warning(
            "purge_mode_spelling_overridden", configured=configured, written=spelling, crd_enum=sorted(enum or ())
        )
    return spelling
