"""The reconcile wiring (controllers/manager.py `CONTROLLERS`): which keys an informer's event queues, and where."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from controllers.loop.cache import Cache
from controllers.loop.informer import Informer
from controllers.loop.queue import WorkQueue
from controllers.manager import CACHED_ONLY, CONTROLLERS, queue_every_key, queue_keys
from failover.core.api import (
    CLUSTER_RESOURCE_BINDING_NAME_ANNOTATION,
    CLUSTER_RESOURCE_BINDINGS,
    CLUSTERS,
    POLICY_RESOURCES,
    RESOURCE_BINDING_NAME_ANNOTATION,
    RESOURCE_BINDING_NAMESPACE_ANNOTATION,
    RESOURCE_BINDINGS,
    WORKLOAD_REBALANCERS,
    WORKS,
    Resource,
)
from failover.moves.handoff import HANDOFF_ANNOTATION, moved_without_handoff
from tests.controllers.loop_fakes import never_listed
from tests.controllers.queues import drain


def filled_cache(objects: dict[Resource, dict[str, dict[str, Any]]]) -> Cache:
    """A cache whose informers hold `objects` by resource, as if they had listed them."""
    cache = Cache()
    for resource in (*CACHED_ONLY, *(spec.resource for spec in CONTROLLERS), WORKS):
        informer = Informer(resource.plural, never_listed, lambda key: None, asyncio.get_running_loop())
        informer.cache = dict(objects.get(resource, {}))
        cache.add(resource, informer)
    return cache


def evicting_from(cluster: str) -> dict[str, Any]:
    return {"metadata": {"name": "b"}, "spec": {"gracefulEvictionTasks": [{"fromCluster": cluster}]}}


def work_of(annotations: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": "w", "namespace": "karmada-es-member1", "annotations": annotations}}


async def queued(queues: dict[str, WorkQueue]) -> dict[str, list[object]]:
    return {kind: keys for kind, queue in queues.items() if (keys := await drain(queue))}


async def test_a_cluster_event_queues_the_cluster_and_the_bindings_with_a_task_from_it() -> None:
    cache = filled_cache(
        {
            RESOURCE_BINDINGS: {"ns/b": evicting_from("member1"), "ns/other": evicting_from("member2")},
            CLUSTER_RESOURCE_BINDINGS: {"b": evicting_from("member1")},
        }
    )
    queues = {spec.resource.kind: WorkQueue() for spec in CONTROLLERS}

    queue_keys(CLUSTERS, cache, queues)("member1")

    assert await queued(queues) == {
        RESOURCE_BINDINGS.kind: ["ns/b"],
        CLUSTER_RESOURCE_BINDINGS.kind: ["b"],
        CLUSTERS.kind: ["member1"],
    }


async def test_a_work_event_queues_its_binding_and_so_does_its_deletion() -> None:
    work = work_of({RESOURCE_BINDING_NAMESPACE_ANNOTATION: "ns", RESOURCE_BINDING_NAME_ANNOTATION: "b"})
    cache = filled_cache({WORKS: {"karmada-es-member1/w": work}})
    queues = {spec.resource.kind: WorkQueue() for spec in CONTROLLERS}
    changed = queue_keys(WORKS, cache, queues)

    changed("karmada-es-member1/w")
    assert await queued(queues) == {RESOURCE_BINDINGS.kind: ["ns/b"]}
    del cache.informers[WORKS.kind].cache["karmada-es-member1/w"]
    changed("karmada-es-member1/w")
    assert await queued(queues) == {RESOURCE_BINDINGS.kind: ["ns/b"]}


async def test_a_cluster_binding_work_queues_the_cluster_binding_and_so_does_its_deletion() -> None:
    # Both binding controllers watch Works; the key goes to the one of the owner's kind, also once the Work is gone.
    cache = filled_cache({WORKS: {"karmada-es-member1/w": work_of({CLUSTER_RESOURCE_BINDING_NAME_ANNOTATION: "b"})}})
    queues = {spec.resource.kind: WorkQueue() for spec in CONTROLLERS}
    changed = queue_keys(WORKS, cache, queues)

    changed("karmada-es-member1/w")
    assert await queued(queues) == {CLUSTER_RESOURCE_BINDINGS.kind: ["b"]}
    del cache.informers[WORKS.kind].cache["karmada-es-member1/w"]
    changed("karmada-es-member1/w")
    assert await queued(queues) == {CLUSTER_RESOURCE_BINDINGS.kind: ["b"]}


async def test_a_controlled_resource_queues_its_own_key_only() -> None:
    cache = filled_cache({})
    for resource in (RESOURCE_BINDINGS, CLUSTER_RESOURCE_BINDINGS, WORKLOAD_REBALANCERS):
        queues = {spec.resource.kind: WorkQueue() for spec in CONTROLLERS}
        queue_keys(resource, cache, queues)("ns/x")
        assert await queued(queues) == {resource.kind: ["ns/x"]}


async def test_policy_events_queue_nothing() -> None:
    cache = filled_cache({})
    queues = {spec.resource.kind: WorkQueue() for spec in CONTROLLERS}
    for resource in POLICY_RESOURCES:
        queue_keys(resource, cache, queues)("ns/p")
    assert await queued(queues) == {}


async def test_a_binding_the_loop_may_have_to_act_on_is_queued_before_the_healthy_ones() -> None:
    """A new leader lists thousands of bindings at once; an expired toleration must not wait behind them."""

    def health(state: str) -> dict[str, Any]:
        return {"metadata": {"name": "b"}, "status": {"aggregatedStatus": [{"clusterName": "m1", "health": state}]}}

    bindings = {"ns/a": health("Healthy"), "ns/b": health("Healthy"), "ns/sick": health("Unhealthy")}
    bindings["ns/evicting"] = evicting_from("member1")
    # A planned move whose handoff its pipeline carries on (failover/moves/handoff.py), its copy still Healthy.
    moving = health("Healthy")
    handoff = moved_without_handoff("Drain", "m1", "", "no member relay", datetime(2026, 12, 1, tzinfo=UTC))
    moving["metadata"]["annotations"] = {HANDOFF_ANNOTATION: handoff.annotation()}
    bindings["ns/moving"] = moving
    cache = filled_cache({RESOURCE_BINDINGS: bindings})
    queues = {spec.resource.kind: WorkQueue() for spec in CONTROLLERS}
    changed = queue_keys(RESOURCE_BINDINGS, cache, queues)
    for key in bindings:
        changed(key)
    assert (await queued(queues))[RESOURCE_BINDINGS.kind] == ["ns/sick", "ns/evicting", "ns/moving", "ns/a", "ns/b"]


def health(state: str) -> dict[str, Any]:
    return {"metadata": {"name": "b"}, "status": {"aggregatedStatus": [{"clusterName": "m1", "health": state}]}}


async def test_outside_a_term_events_queue_nothing_and_works_are_still_indexed() -> None:
    """A standby replica's informers run, but no worker drains a queue: its events must queue nothing, and the Work
    index must stay as current as its cache for the term it may start."""
    work = work_of({RESOURCE_BINDING_NAMESPACE_ANNOTATION: "ns", RESOURCE_BINDING_NAME_ANNOTATION: "b"})
    cache = filled_cache(
        {
            WORKS: {"karmada-es-member1/w": work},
            CLUSTERS: {"member1": {"metadata": {"name": "member1"}}},
            RESOURCE_BINDINGS: {"ns/b": evicting_from("member1")},
        }
    )
    queues: dict[str, WorkQueue] = {}
    queue_keys(WORKS, cache, queues)("karmada-es-member1/w")
    queue_keys(CLUSTERS, cache, queues)("member1")
    queue_keys(RESOURCE_BINDINGS, cache, queues)("ns/b")
    binding = {"kind": RESOURCE_BINDINGS.kind, "metadata": {"namespace": "ns", "name": "b"}}
    assert queues == {}
    assert cache.works_of(binding) == [cache.get(WORKS.kind, "karmada-es-member1/w")]

    # The term's queues, once there are some, are read at the next event.
    queues.update({spec.resource.kind: WorkQueue() for spec in CONTROLLERS})
    queue_keys(WORKS, cache, queues)("karmada-es-member1/w")
    assert await queued(queues) == {RESOURCE_BINDINGS.kind: ["ns/b"]}


async def test_a_new_term_queues_every_cached_key_once_those_it_may_act_on_first() -> None:
    """A new leader lists nothing: it starts from every key its cache holds, an expired toleration before the healthy
    ones."""
    bindings = {"ns/a": health("Healthy"), "ns/sick": health("Unhealthy"), "ns/evicting": evicting_from("member1")}
    cache = filled_cache(
        {
            RESOURCE_BINDINGS: bindings,
            CLUSTER_RESOURCE_BINDINGS: {"c": health("Healthy"), "d": health("Unknown")},
            CLUSTERS: {"member1": {"metadata": {"name": "member1"}}},
            WORKS: {"karmada-es-member1/w": work_of({})},
        }
    )
    queues = {spec.resource.kind: WorkQueue() for spec in CONTROLLERS}
    queues[RESOURCE_BINDINGS.kind].add("ns/a")  # an event of the term already: queued once all the same

    assert await queue_every_key(cache, queues) == 6
    assert await queued(queues) == {
        RESOURCE_BINDINGS.kind: ["ns/sick", "ns/evicting", "ns/a"],
        CLUSTER_RESOURCE_BINDINGS.kind: ["d", "c"],
        CLUSTERS.kind: ["member1"],
    }
