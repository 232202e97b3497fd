"""The Cluster controller (controllers/reconcilers/cluster_reconciler.py) and the WorkloadRebalancer controller
(controllers/reconcilers/rebalancer_reconciler.py) on the loop fakes (tests/controllers/loop_fakes.py): what each pass
writes, on which object, with which Events and metrics, and what a second reconcile leaves alone. Their races with
other writers are in tests/controllers/test_planned_move_writers.py."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from controllers.reconcilers.cluster_reconciler import ClusterReconciler
from controllers.reconcilers.rebalancer_reconciler import RebalancerReconciler
from failover.core import binding as b
from failover.core.api import CLUSTERS, PROPAGATION_POLICIES, WORKLOAD_REBALANCERS
from failover.moves.failback import RECOVERY_ANNOTATION
from failover.moves.handoff import CHECKPOINT_FALLBACK, RESTORING, read_handoff
from tests.controllers.loop_fakes import FakeKarmada, Loop, filled_cache, loop
from tests.failover.binding_builders import at, stamp
from tests.failover.moves.test_failback import FLAT, ON, evicted_nginx, flink_on, member1, policy


def member(name: str, ready: str = "True", since: float = 100) -> dict[str, Any]:
    obj = member1(ready, since)
    obj["metadata"]["name"] = name
    return {"kind": CLUSTERS.kind, **obj}


def with_members(fake: FakeKarmada, *names: str) -> None:
    for name in names:
        fake.put(member(name))


async def cluster_reconcile(fake: FakeKarmada, name: str, now: float) -> tuple[Loop, Any]:
    made = loop(fake, at(now), ON)
    return made, await ClusterReconciler(made.parts)(name)


async def test_a_recovered_cluster_gets_its_spread_workloads_back_by_one_rebalancer() -> None:
    fake = FakeKarmada()
    with_members(fake, "member1", "member2")
    fake.put({**policy(), "kind": PROPAGATION_POLICIES.kind})
    fake.put(evicted_nginx())
    made, requeue = await cluster_reconcile(fake, "member1", 400)
    [rebalancer] = [obj for (kind, _), obj in fake.objects.items() if kind == WORKLOAD_REBALANCERS.kind]
    assert rebalancer["metadata"]["name"].startswith("failback-member1-")
    assert rebalancer["spec"]["workloads"][0]["name"] == "nginx"
    assert made.metrics.failbacks._value.get() == 1
    # The recovery is recorded on the Cluster, on the resourceVersion read, and the Event is about it.
    stored = fake.stored(CLUSTERS.kind, "member1")
    assert stored is not None and RECOVERY_ANNOTATION in stored["metadata"]["annotations"]
    assert [(subject, event.reason) for subject, event in made.events.events] == [("member1", "FailbackTriggered")]
    assert requeue is None
    # A second pass (the rebalancer written, the recovery recorded) creates nothing more.
    again, _ = await cluster_reconcile(fake, "member1", 401)
    assert again.metrics.failbacks._value.get() == 0
    assert sum(1 for kind, _ in fake.objects if kind == WORKLOAD_REBALANCERS.kind) == 1


async def test_a_single_cluster_workload_without_a_member_relay_moves_back_at_once_and_is_counted() -> None:
    fake = FakeKarmada()
    with_members(fake, "member1", "member2", "member3")
    fake.put({**policy(), "kind": PROPAGATION_POLICIES.kind})
    stored = fake.put(flink_on("member2", FLAT))
    made, _ = await cluster_reconcile(fake, "member1", 400)
    moved = fake.stored(stored["kind"], "default/nginx-deployment")
    assert moved is not None
    [task] = b.eviction_tasks(moved)
    assert (task["fromCluster"], task["reason"], task["purgeMode"]) == ("member2", "Failback", "Directly")
    handoff = read_handoff(moved)
    assert handoff is not None and (handoff.phase, handoff.way) == (RESTORING, CHECKPOINT_FALLBACK)
    assert made.metrics.planned_moves.labels("member2", "Failback", CHECKPOINT_FALLBACK)._value.get() == 1
    # Decided again on the moved binding: no second eviction.
    await cluster_reconcile(fake, "member1", 401)
    assert len(b.eviction_tasks(fake.stored(stored["kind"], "default/nginx-deployment") or {})) == 1


async def test_the_brake_is_reported_on_the_clusters_it_is_about_while_engaged_and_when_it_comes_off() -> None:
    fake = FakeKarmada()
    for name in ("member1", "member2", "member3"):
        fake.put(member(name, ready="False", since=300))
    made, _ = await cluster_reconcile(fake, "member1", 400)
    assert made.metrics.brake._value.get() == 1
    reasons = [event.reason for _, event in made.events.events]
    assert reasons.count("ClusterFailoverBraked") == 3  # an Event on each cluster it is about
    # The reconciler's next passes, on the cache as its informers keep it: still engaged, the Event asked for again on
    # each cluster (controllers/access/events.py writes a repeat at most once in EVENT_REPEAT_SECONDS).
    reconciler = ClusterReconciler(made.parts)
    for name in ("member1", "member2"):
        reconciler.parts = replace(made.parts, cache=filled_cache(fake))
        await reconciler(name)
    assert made.metrics.brake._value.get() == 1
    assert [event.reason for _, event in made.events.events].count("ClusterFailoverBraked") == 9
    for name in ("member1", "member2", "member3"):
        fake.put(member(name, since=390))
    reconciler.parts = replace(made.parts, cache=filled_cache(fake))
    await reconciler("member1")
    assert made.metrics.brake._value.get() == 0
    assert "ClusterFailoverBrakeReleased" in made.events.reasons()


async def rebalance(fake: FakeKarmada, now: float) -> tuple[Loop, Any]:
    made = loop(fake, at(now), ON)
    return made, await RebalancerReconciler(made.parts)("demo")


def rebalancer_of(*workloads: dict[str, Any], ttl: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"workloads": list(workloads)}
    if ttl is not None:
        spec["ttlSecondsAfterFinished"] = ttl
    return {
        "apiVersion": WORKLOAD_REBALANCERS.api_version,
        "kind": WORKLOAD_REBALANCERS.kind,
        "metadata": {"name": "demo", "creationTimestamp": stamp(350), "generation": 1},
        "spec": spec,
    }


NGINX = {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "nginx"}


async def test_a_rebalancer_stamps_its_workloads_writes_its_status_and_expires_after_its_ttl() -> None:
    fake = FakeKarmada()
    with_members(fake, "member1", "member2")
    fake.put(evicted_nginx())
    missing = {**NGINX, "name": "gone"}
    fake.put(rebalancer_of(NGINX, missing, ttl=60))
    made, _ = await rebalance(fake, 400)
    stamped = fake.stored("ResourceBinding", "default/nginx-deployment")
    assert stamped is not None and stamped["spec"]["rescheduleTriggeredAt"] == stamp(350)
    assert made.metrics.rebalances._value.get() == 1
    status = (fake.stored(WORKLOAD_REBALANCERS.kind, "demo") or {})["status"]
    assert [entry["result"] for entry in status["observedWorkloads"]] == ["Failed", "Successful"]
    assert status["observedWorkloads"][0]["reason"] == "ReferencedBindingNotFound"
    assert status["finishTime"] == stamp(400)
    assert "ReferencedBindingNotFound" in made.events.reasons()
    # Nothing to do again before the TTL; deleted after it.
    again, requeue = await rebalance(fake, 430)
    assert again.metrics.rebalances._value.get() == 0 and requeue is not None
    assert fake.stored(WORKLOAD_REBALANCERS.kind, "demo") is not None
    await rebalance(fake, 461)
    assert fake.stored(WORKLOAD_REBALANCERS.kind, "demo") is None


async def test_a_rebalancer_gone_from_the_cache_is_left_alone() -> None:
    fake = FakeKarmada()
    made, requeue = await rebalance(fake, 400)
    assert requeue is None and fake.calls == []
