"""The binding pipeline (controllers/reconcilers/binding_reconciler.py), step by step, without an apiserver: each step's
decision written with its precondition, decided again on a fresh read when the cache lagged, and the old-copy step's
release, hand-over, deletion through the proxy, storage fence and wake (tests/controllers/loop_fakes.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from controllers.access.fence_metrics import StorageFenceMetrics
from controllers.access.fence_store import FenceStore
from controllers.reconcilers.binding_reconciler import STEPS
from controllers.reconcilers.restore_watch import RestoreWatch
from controllers.reconcilers.storage_fence import StorageFence
from failover.core.api import FLINK_DEPLOYMENT
from failover.core.loop_settings import DecisionSettings
from failover.core.work import EXECUTION_FINALIZER
from failover.fence.control_plane import ACK_MARGIN
from failover.fence.fence_files import FenceAck
from failover.fence.fenced_copies import FENCED_ANNOTATION
from failover.fence.old_copy import EVENT_FENCED, EVENT_FENCED_COPY, EVENT_WAITING
from failover.reconcile.application_failover import UNHEALTHY_SINCE_ANNOTATION
from failover.reconcile.cluster_failover import EVENT_STATE_FILLED, EVENT_STATE_NOT_FOUND
from failover.state.checkpoints import DEFAULT_LAYOUT, open_store
from failover.state.empty_start import (
    EVENT_RESOLVED,
    EVENT_STARTED_WITHOUT_STATE,
    START_WITHOUT_STATE_ANNOTATION,
    Outcome,
    state_losses,
)
from failover.state.history import HISTORY_ANNOTATION
from failover.state.profiles import load_profiles
from failover.state.restoration import RESTORING_ANNOTATION
from tests.controllers.loop_fakes import FakeKarmada, Loop, loop
from tests.failover.binding_builders import (
    CLUSTER_LABEL,
    JOB_ID,
    at,
    flink_binding,
    set_health,
    stamp,
    with_cluster_rules,
)
from tests.failover.restoration_builders import NEW_JOB, deployed_status, moved_without_checkpoint
from tests.failover.work_builders import (
    NOT_READY_TAINT,
    PERMANENT_ID,
    RENDERED_FROM_FOO,
    cluster,
    deployment_manifest,
    evicted,
    old_work,
    work,
)

BINDING = ("ResourceBinding", "default/foo-flinkdeployment")
WORK = ("Work", "karmada-es-member1/foo-5d8f")


def members(fake: FakeKarmada, member1_ready: bool, since: float, **member1: Any) -> None:
    """member1 (not Ready since `since` unless `member1_ready`, with a NoExecute taint when not) and a Ready member2."""
    first = cluster("member1", member1_ready, since, taints=None if member1_ready else [NOT_READY_TAINT])
    first["spec"].update(member1)
    for obj in (first, cluster("member2", True, -1000, taints=None)):
        fake.put(obj)


def the_copy(uid: str = "u-1", work: str = "foo-5d8f") -> dict[str, Any]:
    """The FlinkDeployment the old Work applied on member1, stamped by the execution controller."""
    return {
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkDeployment",
        "metadata": {
            "name": "foo",
            "namespace": "default",
            "uid": uid,
            "annotations": {"work.karmada.io/name": work, "work.karmada.io/namespace": "karmada-es-member1"},
        },
    }


async def reconcile(fake: FakeKarmada, now: float, **options: Any) -> Loop:
    """One reconcile of the binding, on a cache filled from `fake` as it is now."""
    made = loop(fake, at(now), **options)
    made.requeue = await made.reconciler(BINDING[1])  # type: ignore[attr-defined]
    return made


def stored_binding(fake: FakeKarmada) -> dict[str, Any]:
    found = fake.stored(*BINDING)
    assert found is not None
    return found


def released(made: Loop, why: str) -> float:
    return made.metrics.works_released.labels(why)._value.get()


def test_the_steps_run_in_the_order_of_a_move() -> None:
    assert [step.__name__ for step in STEPS] == [
        "application_failover",
        "cluster_eviction",
        "cluster_failover_state",
        "graceful_eviction",
        "handoff",
        "restoration",
        "stateless_restart",
        "old_copy",
    ]


async def test_an_eviction_decided_on_a_stale_cache_is_decided_again_on_the_apiservers_binding() -> None:
    fake = FakeKarmada()
    fake.put(flink_binding(member1="Unhealthy"))
    members(fake, True, since=-1000)  # member2 can take it
    first = await reconcile(fake, 0)
    assert json.loads(stored_binding(fake)["metadata"]["annotations"][UNHEALTHY_SINCE_ANNOTATION]) == {
        "member1": stamp(0)
    }
    assert first.requeue.total_seconds() == 60  # the toleration

    late = loop(fake, at(61))
    # Karmada reflected a new status after the cache was filled: the cached resourceVersion is stale.
    newer = stored_binding(fake)
    newer["status"]["aggregatedStatus"][0]["status"]["lifecycleState"] = "FAILED"
    fake.put(newer)
    await late.reconciler(BINDING[1])

    binding = stored_binding(fake)
    [task] = binding["spec"]["gracefulEvictionTasks"]
    assert (task["fromCluster"], task["reason"], task["preservedLabelState"]) == (
        "member1",
        "ApplicationFailure",
        {"application.karmada.io/failover-jobid": JOB_ID},
    )
    assert binding["status"]["aggregatedStatus"][0]["status"]["lifecycleState"] == "FAILED"  # not written over
    assert late.metrics.precondition_failures._value.get() == 1
    assert late.metrics.evictions._value.get() == 1
    assert ("get", "ResourceBinding default/foo-flinkdeployment") in fake.calls


async def test_a_taint_task_gets_its_state_and_a_changed_task_is_filled_from_the_fresh_binding() -> None:
    binding = with_cluster_rules(flink_binding())
    binding["spec"]["clusters"] = [{"name": "member2", "replicas": 1}]
    task = {"fromCluster": "member1", "purgeMode": "Directly", "reason": "TaintUntolerated", "producer": "TaintManager"}
    binding["spec"]["gracefulEvictionTasks"] = [task]
    fake = FakeKarmada()
    fake.put(binding)
    made = loop(fake, at(0))
    # The taint manager wrote a second task after the cache was filled: the fill's test of the tasks fails.
    changed = stored_binding(fake)
    changed["spec"]["gracefulEvictionTasks"].append({**task, "fromCluster": "member3"})
    fake.put(changed)
    await made.reconciler(BINDING[1])

    tasks = stored_binding(fake)["spec"]["gracefulEvictionTasks"]
    assert [t["fromCluster"] for t in tasks] == ["member1", "member3"]
    assert tasks[0]["preservedLabelState"] == {CLUSTER_LABEL: JOB_ID}
    assert "preservedLabelState" not in tasks[1]  # nothing ever reported from member3
    assert made.metrics.precondition_failures._value.get() == 1
    assert made.events.reasons()[:2] == [EVENT_STATE_FILLED, EVENT_STATE_NOT_FOUND]


async def test_a_dead_clusters_old_work_is_fenced_and_the_binding_controller_woken_in_one_reconcile() -> None:
    fake = FakeKarmada()
    fake.put(evicted())
    fake.put(old_work(annotations=RENDERED_FROM_FOO))
    members(fake, False, since=-100)
    made = await reconcile(fake, 0)

    assert fake.stored(*WORK) is None  # released: its last finalizer gone, the apiserver deleted it
    binding = stored_binding(fake)
    assert json.loads(binding["metadata"]["annotations"][FENCED_ANNOTATION]) == {
        "member1": [
            {
                "apiVersion": "flink.apache.org/v1beta1",
                "kind": "FlinkDeployment",
                "namespace": "default",
                "name": "foo",
                "work": "foo-5d8f",
            }
        ]
    }
    assert binding["spec"]["gracefulEvictionTasks"][0]["message"].endswith(
        "[failover-relay: the old copy on member1 is gone]"
    )
    assert (released(made, "fenced"), made.metrics.wakes._value.get()) == (1, 1)
    assert EVENT_FENCED in made.events.reasons()
    assert not any(call == "member_probe" for call, _ in fake.calls)  # nothing to delete before a fence


async def test_a_member_that_answers_before_the_fence_has_its_copy_deleted_first() -> None:
    fake = FakeKarmada(answering={"member1"})
    fake.put(evicted())
    fake.put(old_work(annotations=RENDERED_FROM_FOO))
    members(fake, False, since=-10)  # fenced only at 50 s
    fake.put_member("member1", the_copy())
    made = await reconcile(fake, 0)

    assert fake.members == {} and fake.stored(*WORK) is None
    assert released(made, "deleted") == 1 and made.metrics.copies_deleted._value.get() == 1
    assert FENCED_ANNOTATION not in stored_binding(fake)["metadata"]["annotations"]  # deleted, nothing to remember
    assert EVENT_FENCED_COPY in made.events.reasons()


async def test_an_object_the_old_work_did_not_apply_is_never_deleted() -> None:
    fake = FakeKarmada(answering={"member1"})
    fake.put(evicted())
    fake.put(old_work(annotations=RENDERED_FROM_FOO))
    members(fake, False, since=-10)
    fake.put_member("member1", the_copy(work="someone-elses"))
    made = await reconcile(fake, 0)

    assert len(fake.members) == 1  # left alone
    assert made.metrics.copies_deleted._value.get() == 0
    assert fake.stored(*WORK) is None  # the old Work's own copy is not there: it is released


async def test_a_member_that_does_not_answer_keeps_the_new_copy_waiting_until_the_fence() -> None:
    fake = FakeKarmada()
    fake.put(evicted())
    fake.put(old_work(annotations=RENDERED_FROM_FOO))
    members(fake, False, since=-10)
    made = await reconcile(fake, 0)

    assert fake.stored(*WORK) is not None
    assert EVENT_WAITING in made.events.reasons()
    assert ("ResourceBinding", BINDING[1]) in made.metrics.waiting.keys
    assert made.requeue.total_seconds() == 5  # the next probe, before the fence at 50 s


async def test_a_pull_clusters_old_work_is_handed_to_its_agent_never_to_the_proxy() -> None:
    fake = FakeKarmada()
    fake.put(evicted())
    work = old_work(annotations=RENDERED_FROM_FOO)
    work["metadata"]["labels"]["resourcebinding.karmada.io/permanent-id"] = "b-1"
    fake.put(work)
    members(fake, False, since=-100, syncMode="Pull")
    made = await reconcile(fake, 0)

    handed = fake.stored(*WORK)
    assert handed is not None and handed["metadata"]["finalizers"] == [EXECUTION_FINALIZER]
    assert handed["metadata"]["labels"] == {"work.karmada.io/permanent-id": PERMANENT_ID}
    assert released(made, "handed") == 1
    assert not any(call in ("member_probe", "member_get") for call, _ in fake.calls)


async def test_the_storage_fence_writes_a_record_on_the_apiservers_word_and_releases_on_its_acknowledgement(
    tmp_path: Path,
) -> None:
    fences = FenceStore(open_store(str(tmp_path)))
    fence = StorageFence(fences, DecisionSettings(), StorageFenceMetrics(CollectorRegistry()))
    fake = FakeKarmada()
    fake.put(evicted())
    fake.put(old_work(annotations=RENDERED_FROM_FOO))
    members(fake, False, since=-10)  # the timer fences only at 50 s

    # The cache says evicted; the apiserver no longer does (the task ended meanwhile): no record.
    stale = loop(fake, at(0), storage_fence=fence)
    ended = stored_binding(fake)
    ended["spec"]["gracefulEvictionTasks"] = []
    fake.put(ended)
    await stale.reconciler(BINDING[1])
    assert fences.read("member1").present == set()

    fake.put(evicted())
    await reconcile(fake, 1, storage_fence=fence)
    assert set(fences.read("member1").records) == {PERMANENT_ID}
    assert fake.stored(*WORK) is not None  # written, not acknowledged: the Work stays

    fences.write_ack(FenceAck(PERMANENT_ID, "member1", (), at(2)))
    fence._read_at.clear()
    seen = await reconcile(fake, 3, storage_fence=fence)
    assert fake.stored(*WORK) is not None and seen.requeue == ACK_MARGIN  # seen; fenced a margin later
    acknowledged = await reconcile(fake, 3 + ACK_MARGIN.total_seconds(), storage_fence=fence)
    assert fake.stored(*WORK) is None
    [message] = [event.message for _, event in acknowledged.events.events if event.reason == EVENT_FENCED]
    assert "acknowledged through the storage fence" in message


async def test_a_returning_clusters_fenced_copy_is_deleted_and_forgotten_with_its_return_recorded() -> None:
    binding = flink_binding()
    binding["spec"]["clusters"] = [{"name": "member2", "replicas": 1}]
    binding["metadata"]["annotations"][FENCED_ANNOTATION] = json.dumps(
        {
            "member1": [
                {
                    "apiVersion": "flink.apache.org/v1beta1",
                    "kind": "FlinkDeployment",
                    "namespace": "default",
                    "name": "foo",
                    "work": "foo-5d8f",
                }
            ]
        }
    )
    fake = FakeKarmada(answering={"member1"})
    fake.put(binding)
    members(fake, True, since=-5)
    fake.put_member("member1", the_copy())
    made = await reconcile(fake, 0)

    assert fake.members == {}
    annotations = stored_binding(fake)["metadata"]["annotations"]
    assert FENCED_ANNOTATION not in annotations
    assert "member1" in annotations[HISTORY_ANNOTATION]
    assert EVENT_FENCED_COPY in made.events.reasons()


def restoring_fake(tmp_path: Path) -> tuple[FakeKarmada, Path]:
    """foo moved to member2, restoring: its Work there renders the FlinkDeployment with its checkpoint dir in
    `tmp_path`, and member2 reflects the new job's id."""
    fake = FakeKarmada()
    fake.put(moved_without_checkpoint())
    checkpoints = tmp_path / "checkpoints"
    manifest = deployment_manifest()
    manifest["spec"] = {"flinkConfiguration": {"execution.checkpointing.dir": f"file://{checkpoints}"}}
    fake.put(work(manifest, cluster="member2", name="foo-9a8b", annotations=dict(RENDERED_FROM_FOO)))
    members(fake, True, since=-1000)
    return fake, checkpoints / NEW_JOB


async def test_a_moved_copy_is_restored_by_its_jobs_first_checkpoint_in_the_storage(tmp_path: Path) -> None:
    fake, job_dir = restoring_fake(tmp_path)
    store = open_store(f"file://{tmp_path}")
    profiles = load_profiles([], label="application.karmada.io/failover-jobid", layouts=(DEFAULT_LAYOUT,))
    watch = RestoreWatch(profiles[FLINK_DEPLOYMENT], (store,))

    waiting = await reconcile(fake, 60, restore_watch=watch)
    assert RESTORING_ANNOTATION in stored_binding(fake)["metadata"]["annotations"]  # no checkpoint of its own yet
    assert waiting.requeue.total_seconds() == 10

    (job_dir / "chk-1").mkdir(parents=True)
    (job_dir / "chk-1" / "_metadata").write_bytes(b"flink")  # written now: after the move
    restored = await reconcile(fake, 70, restore_watch=watch)
    assert RESTORING_ANNOTATION not in stored_binding(fake)["metadata"]["annotations"]
    assert "CopyRestored" in restored.events.reasons()
    assert restored.metrics.restores.labels("member2")._sum.get() == 70


async def test_a_moved_copy_deployed_without_its_state_is_said_so_with_the_storages_reason(tmp_path: Path) -> None:
    fake, _ = restoring_fake(tmp_path)
    binding = stored_binding(fake)
    set_health(binding, "member2", "Healthy", deployed_status(None))
    fake.put(binding)
    profiles = load_profiles([], label="application.karmada.io/failover-jobid", layouts=(DEFAULT_LAYOUT,))
    watch = RestoreWatch(profiles[FLINK_DEPLOYMENT], (open_store(f"file://{tmp_path}"),))

    made = await reconcile(fake, 60, restore_watch=watch)
    [loss] = state_losses(stored_binding(fake)).values()
    assert (loss.cluster, loss.outcome, loss.job_id) == ("member2", Outcome.EMPTY, JOB_ID)
    assert loss.reason.startswith("no restorable state:") and JOB_ID in loss.reason  # the storage's answer
    [event] = [event for _, event in made.events.events if event.reason == EVENT_STARTED_WITHOUT_STATE]
    assert event.regarding is not None and (event.regarding.kind, event.regarding.name) == ("FlinkDeployment", "foo")
    assert event.regarding.uid  # kubectl describe selects Events by the template's uid
    assert made.metrics.state_losses.labels("empty")._value.get() == 1
    assert made.metrics.without_state.gauge.labels("empty")._value.get() == 1

    # Accepted on the template (Karmada copies its annotations into the Work): resolved, and the gauge falls.
    work_obj = fake.stored("Work", "karmada-es-member2/foo-9a8b")
    assert work_obj is not None
    work_obj["spec"]["workload"]["manifests"][0]["metadata"]["annotations"] = {START_WITHOUT_STATE_ANNOTATION: JOB_ID}
    fake.put(work_obj)
    accepted = await reconcile(fake, 70, restore_watch=watch, metrics=made.metrics)
    assert state_losses(stored_binding(fake)) == {}
    assert EVENT_RESOLVED in accepted.events.reasons()
    assert accepted.metrics.without_state.gauge.labels("empty")._value.get() == 0


async def test_without_the_checkpoint_storage_a_moved_copy_is_restored_once_healthy(tmp_path: Path) -> None:
    fake, _ = restoring_fake(tmp_path)
    await reconcile(fake, 60)
    assert RESTORING_ANNOTATION not in stored_binding(fake)["metadata"]["annotations"]
