"""A warm standby against a real apiserver: two loops, each caching from its start; when the leader stops, the other
takes the Lease and reconciles from the cache it kept current while standby, without listing again.

At this size a list costs milliseconds, so the time from the Lease to the first reconcile proves little here; the
LISTs each loop sends do: the new leader sends none (docs/benchmarks.md has the cost of one at 50,000 bindings)."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes import client, config
from prometheus_client import CollectorRegistry

from controllers import manager
from controllers.access.kube import CustomObjects
from controllers.manager import LoopSettings, ReconcileLoop, watched_resources
from failover.core.api import RESOURCE_BINDINGS, Resource
from failover.reconcile.application_failover import UNHEALTHY_SINCE_ANNOTATION
from relay.settings import ControllerSettings
from tests.e2e.objects import flink_binding, report_health
from tests.envtest import ControlPlane
from tests.waiting import eventually

pytestmark = pytest.mark.envtest

# How long the new leader may take from holding the Lease to its first reconcile: generous, as the proof is the LIST
# count; it fails only if the term waited for something like a list.
FIRST_RECONCILE_SECONDS = 10.0


class CountedLists:
    """The informers' LIST calls (not their watches), by the loop that sent them (its own `api_client`)."""

    def __init__(self) -> None:
        self.by_client: Counter[int] = Counter()

    def objects(self, api_client: client.ApiClient, resource: Resource) -> SimpleNamespace:
        """Stands in for `controllers.access.kube.CustomObjects` in controllers/manager.py."""
        objects = CustomObjects(api_client, resource)

        def list_or_watch(**kwargs: Any) -> Any:
            if not kwargs.get("watch"):
                self.by_client[id(api_client)] += 1
            return objects.list(**kwargs)

        return SimpleNamespace(list=list_or_watch)

    def of(self, loop: ReconcileLoop) -> int:
        return self.by_client[id(loop.api_client)]


@pytest.fixture
def api(control_plane: ControlPlane) -> client.ApiClient:
    return config.new_client_from_config(config_file=str(control_plane.kubeconfig_path))


@pytest.fixture
def lists(monkeypatch: pytest.MonkeyPatch) -> CountedLists:
    counted = CountedLists()
    monkeypatch.setattr(manager, "CustomObjects", counted.objects)
    return counted


@pytest.fixture
async def start_loop(api: client.ApiClient, namespace: str) -> AsyncIterator[Callable[[str], ReconcileLoop]]:
    """`start(identity)`: a loop running on a Lease of this test's own; every one is stopped at the end."""
    lease_name = f"warm-{uuid.uuid4().hex[:6]}"
    running: list[asyncio.Task[None]] = []

    def start(identity: str) -> ReconcileLoop:
        declared = ControllerSettings()
        settings = LoopSettings(namespace, lease_name, declared.workers, identity=identity)
        loop = ReconcileLoop(api, settings, CollectorRegistry())
        loop.run_task = asyncio.create_task(loop.run(), name=identity)  # type: ignore[attr-defined]
        running.append(loop.run_task)  # type: ignore[attr-defined]
        return loop

    yield start
    for task in running:
        task.cancel()
    await asyncio.gather(*running, return_exceptions=True)


def binding_reconciles(loop: ReconcileLoop) -> float:
    """The loop's reconciles of ResourceBindings so far, whatever their result."""
    samples = loop.metrics.reconciles.collect()[0].samples
    return sum(s.value for s in samples if s.name.endswith("_total") and s.labels["controller"] == "resourcebindings")


async def first_reconcile_after_the_lease(loop: ReconcileLoop) -> float:
    """Seconds from the moment `loop` holds the Lease (its elector says so) to its first binding reconcile, both
    seen by polling every 10 ms."""
    clock = asyncio.get_running_loop().time
    async with asyncio.timeout(30):
        while not loop.elector.is_leader:  # noqa: ASYNC110  is_leader is a plain attribute, the elector has no event
            await asyncio.sleep(0.01)
        led_at = clock()
        while not binding_reconciles(loop):  # noqa: ASYNC110  a counter, polled
            await asyncio.sleep(0.01)
    return clock() - led_at


async def test_the_standby_caches_before_it_leads_and_its_term_lists_nothing(
    api: client.ApiClient, namespace: str, lists: CountedLists, start_loop: Callable[[str], ReconcileLoop]
) -> None:
    leader = start_loop("replica-a")
    await eventually(lambda: leader.elector.is_leader, bool, timeout=30)
    standby = start_loop("replica-b")
    # Every replica lists each watched resource once at its start, leader or not.
    await eventually(lambda: lists.of(standby), lambda count: count == len(watched_resources()), timeout=30)

    bindings = CustomObjects(api, RESOURCE_BINDINGS)
    bindings.create(flink_binding("warm-flinkdeployment", namespace, toleration=300))
    key = f"{namespace}/warm-flinkdeployment"
    report_health(bindings, key, "Unhealthy")
    # What the leader wrote reaches the standby's cache by its watch; the standby queues and reconciles nothing.
    cached = await eventually(
        lambda: standby.cache.get(RESOURCE_BINDINGS.kind, key),
        lambda b: b is not None and UNHEALTHY_SINCE_ANNOTATION in b["metadata"].get("annotations", {}),
    )
    stamp = cached["metadata"]["annotations"][UNHEALTHY_SINCE_ANNOTATION]
    assert not standby.elector.is_leader and standby.queues == {} and binding_reconciles(standby) == 0
    listed_as_standby = lists.of(standby)

    leader.run_task.cancel()  # type: ignore[attr-defined]  a clean stop releases the Lease
    await asyncio.gather(leader.run_task, return_exceptions=True)  # type: ignore[attr-defined]
    seconds = await first_reconcile_after_the_lease(standby)

    assert lists.of(standby) == listed_as_standby, "the new leader listed again"
    assert seconds < FIRST_RECONCILE_SECONDS, f"first reconcile {seconds:.1f} s after holding the Lease"
    lease = client.CoordinationV1Api(api).read_namespaced_lease(standby.settings.lease_name, namespace)
    assert lease.spec.holder_identity == "replica-b"
    # The new leader carries on the old one's timer: the same stamp, from its cache.
    assert bindings.get(key)["metadata"]["annotations"][UNHEALTHY_SINCE_ANNOTATION] == stamp
