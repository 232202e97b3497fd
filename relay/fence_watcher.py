"""Wiring of the member relay's fence watcher (`serve --member --fence-cluster NAME`): from the settings, the member
cluster's access (`fence.memberKubeconfig`, or in-cluster), the fence records' store below the checkpoint root, and
the watcher's parts on the shared access (its objects, Events and metrics: controllers/member/member_fence.py), then
the task. Imported only when the watcher is on, so a member relay without it never loads the Kubernetes client.

The wiring stays here, in the program, rather than in the member relay's room (`controllers/member`), as the loop's
does (relay/start_controllers.py): it reads `Settings`, opens the checkpoint storage as savepoint injection does
(`open_injection`), turns a missing cluster access into the start-up error `SettingsError`, and hands the records to
the webhook's `FencedCopies`, all of which that room may not import (it imports `failover` and `controllers.access`
alone). What the room holds is the process itself: the watcher and the member's objects it acts on.
"""

from __future__ import annotations

import asyncio
import socket

from prometheus_client import CollectorRegistry

from controllers.access.events import EventRecorder
from controllers.access.fence_metrics import MemberFenceMetrics
from controllers.access.fence_store import FenceStore
from controllers.access.kube import NoClusterConfig, load_api_client
from controllers.member.member_fence import MemberFenceWatcher, MemberObjects
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
        MemberObjects(api_client),
        # The pod's name (its hostname) names the writer of its Events, as a kubelet's names its node.
        EventRecorder(api_client, socket.gethostname()),
        MemberFenceMetrics(registry),
        settings.fence.poll_seconds,
        fenced.update,
    )
    return asyncio.create_task(watcher.run(), name="fence-watcher")
