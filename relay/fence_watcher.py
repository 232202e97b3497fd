"""Wiring of the member relay's fence watcher (`serve --member --fence-cluster NAME`): the member cluster's access,
the fence records' store below the checkpoint root, and the task. Imported only when the watcher is on, so a member
relay without it never loads the Kubernetes client."""

from __future__ import annotations

import asyncio

from prometheus_client import CollectorRegistry

from controllers.access.fence_store import FenceStore
from controllers.access.kube import NoClusterConfig, load_api_client
from controllers.member.member_fence import MemberFenceWatcher
from relay.settings import Settings, SettingsError, open_injection
from webhook.fence_mutator import FencedCopies


def start_fence_watcher(settings: Settings, fenced: FencedCopies, registry: CollectorRegistry) -> asyncio.Task[None]:
    cluster = settings.fence.member_cluster
    assert cluster is not None  # the caller starts it only then
    try:
        api_client = load_api_client(settings.fence.member_kubeconfig)
    except NoClusterConfig as error:  # the watcher was asked for and cannot work: a start-up error, exit 2
        raise SettingsError(f"fence.memberCluster: {error}") from None
    watcher = MemberFenceWatcher(
        cluster,
        FenceStore(open_injection(settings.savepoint).store),
        api_client,
        registry,
        settings.fence.poll_seconds,
        fenced.update,
    )
    return asyncio.create_task(watcher.run(), name="fence-watcher")
