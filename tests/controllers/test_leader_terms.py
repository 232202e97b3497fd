"""The loop's terms (controllers/manager.py `ReconcileLoop`): every replica lists and caches at start, before it
campaigns; a term starts from the cache without listing again, queues every cached key once (those it may act on
first), and ends with its queues dropped while the informers run on. The apiserver here is a list function and the
Lease is handed over by the test; tests/e2e/test_warm_standby.py runs the same against a real apiserver."""

from __future__ import annotations

import asyncio
import gc
import threading
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import replace
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes import client
from prometheus_client import CollectorRegistry

from controllers import manager
from controllers.access.events import EVENT_WRITERS
from controllers.loop.controller import Reconcile
from controllers.loop.informer import settle_long_lived
from controllers.manager import LoopSettings, ReconcileLoop
from controllers.reconcilers.loop_parts import LoopParts
from failover.core.api import CLUSTER_RESOURCE_BINDINGS, CLUSTERS, RESOURCE_BINDINGS, Resource
from failover.core.decision import NORMAL, Event
from tests.waiting import eventually


def binding(name: str, health: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": "1"},
        "status": {"aggregatedStatus": [{"clusterName": "member1", "health": health}]},
    }


OBJECTS = {
    RESOURCE_BINDINGS.kind: [binding("a", "Healthy"), binding("b", "Healthy"), binding("sick", "Unhealthy")],
    CLUSTERS.kind: [{"metadata": {"name": "member1", "resourceVersion": "1"}}],
}


class Apiserver:
    """What the informers list (each LIST counted by kind); their watches stay quiet until the test ends."""

    def __init__(self) -> None:
        self.lists: Counter[str] = Counter()
        self.ended = threading.Event()

    def objects(self, _: client.ApiClient, resource: Resource) -> SimpleNamespace:
        """Stands in for `controllers.access.kube.CustomObjects`."""

        def list_or_watch(**kwargs: Any) -> dict[str, Any]:
            if kwargs.get("watch"):
                self.ended.wait()
                raise OSError("the test ended")
            self.lists[resource.kind] += 1
            return {"items": OBJECTS.get(resource.kind, []), "metadata": {"resourceVersion": "1"}}

        return SimpleNamespace(list=list_or_watch)


class HandedLease:
    """Stands in for the `LeaderElector`: a term runs from when the test hands the Lease over until it takes it
    back."""

    def __init__(self) -> None:
        self.campaigning = asyncio.Event()
        self._handed = asyncio.Event()
        self._taken = asyncio.Event()
        self._term_ended = asyncio.Event()

    async def run(self, lead: Callable[[], Awaitable[None]]) -> None:
        self.campaigning.set()
        while True:
            await self._handed.wait()
            self._handed.clear()
            term = asyncio.ensure_future(lead())
            try:
                await self._taken.wait()
            finally:
                self._taken.clear()
                term.cancel()
                await asyncio.gather(term, return_exceptions=True)
                self._term_ended.set()

    def hand(self) -> None:
        self._handed.set()

    async def take_back(self) -> None:
        self._term_ended.clear()
        self._taken.set()
        await self._term_ended.wait()


@pytest.fixture
def apiserver(monkeypatch: pytest.MonkeyPatch) -> Iterator[Apiserver]:
    server = Apiserver()
    monkeypatch.setattr(manager, "CustomObjects", server.objects)
    yield server
    server.ended.set()


@pytest.fixture
def reconciled(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """The (kind, key) of every reconcile, in their order: each controller's reconciler only records its key."""
    seen: list[tuple[str, str]] = []

    def recording(kind: str) -> Callable[[LoopParts], Reconcile]:
        def build(_: LoopParts) -> Reconcile:
            async def reconcile(key: str) -> timedelta | None:
                seen.append((kind, key))
                return None

            return reconcile

        return build

    specs = tuple(replace(spec, reconciler=recording(spec.resource.kind), workers=1) for spec in manager.CONTROLLERS)
    monkeypatch.setattr(manager, "CONTROLLERS", specs)
    return seen


@pytest.fixture
async def loop(apiserver: Apiserver, reconciled: list[tuple[str, str]]) -> AsyncIterator[ReconcileLoop]:
    settings = LoopSettings(lease_namespace="ns", lease_name="relay", workers=1, identity="replica-a")
    made = ReconcileLoop(client.ApiClient(), settings, CollectorRegistry())
    made.elector = HandedLease()  # type: ignore[assignment]
    running = asyncio.create_task(made.run())
    yield made
    running.cancel()
    await asyncio.gather(running, return_exceptions=True)
    assert made.cache.list(RESOURCE_BINDINGS.kind) == []  # the informers stopped with the loop


def every_key() -> list[tuple[str, str]]:
    return [(RESOURCE_BINDINGS.kind, f"ns/{name}") for name in ("sick", "a", "b")] + [(CLUSTERS.kind, "member1")]


async def test_a_standby_lists_once_and_queues_nothing_until_it_leads(
    loop: ReconcileLoop, apiserver: Apiserver, reconciled: list[tuple[str, str]]
) -> None:
    lease: HandedLease = loop.elector  # type: ignore[assignment]
    async with asyncio.timeout(10):
        await lease.campaigning.wait()  # only once every first list is in
    listed = Counter(apiserver.lists)
    assert listed[RESOURCE_BINDINGS.kind] == 1 and listed[CLUSTER_RESOURCE_BINDINGS.kind] == 1
    assert len(loop.cache.list(RESOURCE_BINDINGS.kind)) == 3
    await asyncio.sleep(0.2)  # the first lists' events, every key, have reached the loop
    assert reconciled == [] and loop.queues == {}

    lease.hand()
    await eventually(lambda: list(reconciled), lambda seen: len(seen) == 4, timeout=10)
    # Of the bindings, the one the loop may have to act on first; every key once, and nothing listed again.
    assert sorted(reconciled) == sorted(every_key())
    assert [key for kind, key in reconciled if kind == RESOURCE_BINDINGS.kind][0] == "ns/sick"
    assert apiserver.lists == listed

    await lease.take_back()
    assert loop.queues == {}
    assert len(loop.cache.list(RESOURCE_BINDINGS.kind)) == 3  # the informers run on, their cache kept

    # The next term starts over from the same cache: every key once more, and still no list.
    reconciled.clear()
    lease.hand()
    await eventually(lambda: list(reconciled), lambda seen: len(seen) == 4, timeout=10)
    assert sorted(reconciled) == sorted(every_key())
    assert apiserver.lists == listed
    await lease.take_back()


async def test_a_term_that_a_list_froze_unfreezes_at_its_end(
    loop: ReconcileLoop, reconciled: list[tuple[str, str]]
) -> None:
    """A list freezes whatever is alive (controllers/loop/informer.py `settle_long_lived`): one during a term froze the
    term's controllers and queues, whose cycles only the collector frees once the term is over. A term no list froze
    leaves the cache frozen."""
    lease: HandedLease = loop.elector  # type: ignore[assignment]
    try:
        async with asyncio.timeout(10):
            await lease.campaigning.wait()
        lease.hand()
        await eventually(lambda: list(reconciled), lambda seen: len(seen) == 4, timeout=10)
        await lease.take_back()
        assert gc.get_freeze_count() > 0  # the first lists' pages, still out of the collector's sight

        lease.hand()
        await eventually(lambda: list(reconciled), lambda seen: len(seen) == 8, timeout=10)
        settle_long_lived()  # as a list after a `410` would, within the term
        await lease.take_back()
        assert gc.get_freeze_count() == 0
    finally:
        gc.unfreeze()  # nothing of this test stays frozen for the rest of the session


async def test_a_term_that_ends_gives_up_its_events_not_yet_written(
    loop: ReconcileLoop, reconciled: list[tuple[str, str]]
) -> None:
    lease: HandedLease = loop.elector  # type: ignore[assignment]
    released = threading.Event()
    written: list[str] = []

    def write(*_: Any, **__: Any) -> None:
        released.wait(10)
        written.append("event")

    loop.recorder.api = SimpleNamespace(create_namespaced_event=write)  # type: ignore[assignment]
    try:
        async with asyncio.timeout(10):
            await lease.campaigning.wait()
        lease.hand()
        await eventually(lambda: list(reconciled), lambda seen: len(seen) == 4, timeout=10)
        cluster = {"kind": "Cluster", "metadata": {"name": "member1"}}
        # More Events than are written at once: the first ones on their threads, the others waiting for a turn.
        await loop.recorder.record(cluster, [Event(NORMAL, f"Reason{n}", "message") for n in range(EVENT_WRITERS + 3)])
        await lease.take_back()
        released.set()
        await loop.recorder.written()
        assert len(written) <= EVENT_WRITERS  # those already on a thread land; none after them
    finally:
        released.set()
