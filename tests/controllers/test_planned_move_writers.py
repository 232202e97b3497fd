"""Every writer of a planned move goes through the write service with the version its decision read, and loses a race
without a second move (controllers/access/binding_writes.py): the Cluster controller's drain (a conflict on one
binding never stops the others), the binding pipeline's `handoff` step (each phase conditional, decided again on a
fresh read), and the rebalancer's stamps. Each test races a second writer against the loop's own write, on the loop
fakes (tests/controllers/loop_fakes.py); the `drill` command's writer races one against a real kube-apiserver in
tests/e2e/test_binding_write_service.py."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from controllers.access.fence_metrics import StorageFenceMetrics
from controllers.access.fence_store import FenceStore
from controllers.reconcilers.cluster_reconciler import CONFLICT_RETRY, PASSES, ClusterReconciler
from controllers.reconcilers.rebalancer_reconciler import RebalancerReconciler
from controllers.reconcilers.storage_fence import StorageFence
from failover.core import binding as b
from failover.core.api import CLUSTERS, RESOURCE_BINDINGS, WORKLOAD_REBALANCERS
from failover.core.names import ObjectRef, key_of
from failover.core.work import PERMANENT_ID_LABEL, MemberCopy
from failover.fence.fence_files import SUSPENDED, AckedCopy, FenceAck, Heartbeat
from failover.moves.handoff import HANDOFF_ANNOTATION, RESTORING, SAVEPOINT, STOPPING, read_handoff
from failover.state.checkpoints import open_store
from tests.controllers.loop_fakes import FakeKarmada, Loop, loop
from tests.failover.binding_builders import at
from tests.failover.moves.test_cluster_drain import SETTINGS, job, member2
from tests.failover.moves.test_failback import member1
from tests.failover.moves.test_handoff import rebalanced_job
from tests.failover.work_builders import deployment_manifest, work

NOW = 400
SAVEPOINT_PATH = "s3://state/default/savepoints/savepoint-9a27d3-0123456789ab"


def fence_id(name: str) -> str:
    return f"0b7e3f5c-3c1e-4c55-9d2b-6a4c1e2f9a1{name[-1]}"


def job_work(name: str) -> dict[str, Any]:
    """The Work Karmada rendered on member2 for binding default/`name`: one FlinkDeployment, its permanent id."""
    return work(
        deployment_manifest(name),
        cluster="member2",
        name=f"{name}-687f7fb96f",
        labels={PERMANENT_ID_LABEL: fence_id(name)},
        annotations={"resourcebinding.karmada.io/namespace": "default", "resourcebinding.karmada.io/name": name},
    )


class RacingKarmada(FakeKarmada):
    """A fake apiserver on which another writer changes a binding just before the loop's first patch that `racing`
    says is the one raced: the loop's write then carries a version the apiserver no longer holds."""

    def __init__(self) -> None:
        super().__init__()
        self.racing: Callable[[ObjectRef, Mapping[str, Any]], bool] = lambda ref, patch: False
        self.other_writer: Callable[[dict[str, Any]], None] = lambda binding: None
        self.raced = 0

    async def patch(self, ref: ObjectRef, merge_patch: Mapping[str, Any]) -> dict[str, Any]:
        if self.racing(ref, merge_patch) and not self.raced:
            self.raced += 1
            current = copy.deepcopy(self._current(ref))
            self.other_writer(current)
            self.put(current)
        return await super().patch(ref, merge_patch)


def drained_member2(tmp_path: Path) -> tuple[RacingKarmada, StorageFence, FenceStore]:
    """member2 drained, with two stateful jobs on it and a member relay watching it; member1 Ready."""
    fake = RacingKarmada()
    fake.put({"kind": CLUSTERS.kind, **member1()})
    fake.put({"kind": CLUSTERS.kind, **member2()})
    for name in ("job0", "job1"):
        fake.put(job(name))
        fake.put(job_work(name))
    fences = FenceStore(open_store(str(tmp_path)))
    fences.write_heartbeat(Heartbeat("member2", at(NOW), 2.0))
    return fake, StorageFence(fences, SETTINGS, StorageFenceMetrics(CollectorRegistry())), fences


def binding(fake: FakeKarmada, name: str) -> dict[str, Any]:
    found = fake.stored(RESOURCE_BINDINGS.kind, f"default/{name}")
    assert found is not None
    return found


def writes_annotation(name: str) -> Callable[[ObjectRef, Mapping[str, Any]], bool]:
    """The loop's patch of binding `name` that writes the handoff annotation."""
    return lambda ref, patch: (
        ref.name == name and HANDOFF_ANNOTATION in (patch.get("metadata") or {}).get("annotations", {})
    )


def another_label(obj: dict[str, Any]) -> None:
    obj["metadata"].setdefault("labels", {})["team"] = "payments"


async def cluster_pass(fake: FakeKarmada, fence: StorageFence, now: int = NOW) -> tuple[Loop, Any]:
    made = loop(fake, at(now), SETTINGS, storage_fence=fence)
    return made, await ClusterReconciler(made.parts)(member2()["metadata"]["name"])


async def binding_pass(fake: FakeKarmada, fence: StorageFence, name: str, now: int) -> Loop:
    made = loop(fake, at(now), SETTINGS, storage_fence=fence)
    made.requeue = await made.reconciler(f"default/{name}")  # type: ignore[attr-defined]
    return made


def test_the_cluster_controller_is_a_named_list_of_passes() -> None:
    assert [step.__name__ for step in PASSES] == ["brake", "drain", "failback"]


async def test_a_drain_that_loses_one_binding_to_another_writer_still_begins_the_others(tmp_path: Path) -> None:
    fake, fence, _ = drained_member2(tmp_path)
    fake.racing, fake.other_writer = writes_annotation("job0"), another_label
    made, requeue = await cluster_pass(fake, fence)
    assert fake.raced == 1
    # job0's write carried the version the pass read, which another writer had replaced: refused, not overwritten.
    assert read_handoff(binding(fake, "job0")) is None and binding(fake, "job0")["metadata"]["labels"]["team"]
    job1 = read_handoff(binding(fake, "job1"))
    assert job1 is not None and job1.phase == STOPPING and job1.reason == "Drain"
    assert made.metrics.precondition_failures._value.get() == 1
    assert requeue == CONFLICT_RETRY
    # The next pass decides on what the apiserver holds now, and begins job0 without a second move of job1.
    _, _ = await cluster_pass(fake, fence, NOW + 1)
    assert read_handoff(binding(fake, "job0")) is not None
    assert read_handoff(binding(fake, "job1")) == job1
    assert [event.reason for _, event in made.events.events] == ["DrainMove"]


async def test_the_handoff_is_advanced_by_its_own_binding_each_phase_on_the_version_it_read(tmp_path: Path) -> None:
    fake, fence, fences = drained_member2(tmp_path)
    await cluster_pass(fake, fence)
    # Stopping: the binding's own pipeline writes the fence record that has the member relay stop the copy.
    waiting = await binding_pass(fake, fence, "job1", NOW + 1)
    assert waiting.requeue is not None and waiting.requeue.total_seconds() <= 2  # type: ignore[attr-defined]
    [record] = fences.read("member2").records.values()
    assert (record.fence_id, record.work) == (fence_id("job1"), "job1-687f7fb96f")
    copy_ = MemberCopy("member2", "flink.apache.org/v1beta1", "FlinkDeployment", "default", "job1", "job1-687f7fb96f")
    fences.write_ack(
        FenceAck(fence_id("job1"), "member2", (AckedCopy(copy_, SUSPENDED, "u"),), at(NOW + 4), SAVEPOINT_PATH)
    )
    # Acknowledged with a savepoint: the eviction, on the version read; another writer comes first, so the step
    # decides again on a fresh read and writes the eviction once, keeping the other writer's change.
    fake.racing, fake.other_writer = writes_annotation("job1"), another_label
    evicting = await binding_pass(fake, fence, "job1", NOW + 6)
    assert fake.raced == 1
    moved = binding(fake, "job1")
    handoff = read_handoff(moved)
    assert handoff is not None and (handoff.phase, handoff.way, handoff.savepoint) == (
        RESTORING,
        SAVEPOINT,
        SAVEPOINT_PATH,
    )
    [task] = b.eviction_tasks(moved)
    assert (task["fromCluster"], task["reason"], task["purgeMode"]) == ("member2", "Drain", "Directly")
    assert moved["metadata"]["labels"]["team"] == "payments"
    assert evicting.metrics.planned_moves.labels("member2", "Drain", SAVEPOINT)._value.get() == 1
    assert "PlannedMoveHandoff" in evicting.events.reasons()


async def test_a_handoff_already_advanced_by_another_replica_is_not_evicted_twice(tmp_path: Path) -> None:
    fake, fence, fences = drained_member2(tmp_path)
    await cluster_pass(fake, fence)
    await binding_pass(fake, fence, "job1", NOW + 1)
    copy_ = MemberCopy("member2", "flink.apache.org/v1beta1", "FlinkDeployment", "default", "job1", "job1-687f7fb96f")
    fences.write_ack(
        FenceAck(fence_id("job1"), "member2", (AckedCopy(copy_, SUSPENDED, "u"),), at(NOW + 4), SAVEPOINT_PATH)
    )
    # Another replica (an old leader still writing) evicts first, from the same acknowledgement.
    stale = loop(fake, at(NOW + 6), SETTINGS, storage_fence=fence)
    other = await binding_pass(fake, fence, "job1", NOW + 6)
    assert len(b.eviction_tasks(binding(fake, "job1"))) == 1
    await stale.reconciler("default/job1")
    assert len(b.eviction_tasks(binding(fake, "job1"))) == 1
    assert other.metrics.planned_moves.labels("member2", "Drain", SAVEPOINT)._value.get() == 1
    assert stale.metrics.planned_moves.labels("member2", "Drain", SAVEPOINT)._value.get() == 0


async def test_a_rebalancer_stamp_lost_to_another_writer_is_decided_again_on_a_fresh_read(tmp_path: Path) -> None:
    moving, rebalancer = rebalanced_job()
    fake = RacingKarmada()
    for name in ("member1", "member2", "member3"):
        fake.put({"kind": CLUSTERS.kind, **member1(), "metadata": {**member1()["metadata"], "name": name}})
    stored = fake.put(moving)
    fake.put({"apiVersion": WORKLOAD_REBALANCERS.api_version, "kind": WORKLOAD_REBALANCERS.kind, **rebalancer})
    fake.racing = lambda ref, patch: ref.kind == RESOURCE_BINDINGS.kind
    fake.other_writer = another_label
    made = loop(fake, at(NOW), SETTINGS)
    await RebalancerReconciler(made.parts)("demo")
    assert fake.raced == 1
    written = binding(fake, key_of(stored).split("/")[1])
    assert written["metadata"]["labels"]["team"] == "payments"
    # Stamped once, on the fresh read: the scheduler is asked to place it afresh (no member relay watches member2).
    assert written["spec"]["rescheduleTriggeredAt"] == rebalancer["metadata"]["creationTimestamp"]
    assert made.metrics.rebalances._value.get() == 1
    status = fake.stored(WORKLOAD_REBALANCERS.kind, "demo")["status"]  # type: ignore[index]
    assert status["observedWorkloads"][0]["result"] == "Successful"
