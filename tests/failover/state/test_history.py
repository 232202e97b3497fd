"""The failover history on the binding (failover/state/history.py): recorded from what the other decisions wrote,
bounded, never duplicated by a retry or a restart, and turned into the restore hints of a new copy."""

from __future__ import annotations

import copy
import json

import jsonpatch

from failover.state.history import (
    DEAD_CLUSTER_RETURN,
    EVICTION,
    FAILBACK,
    FAILOVER,
    HISTORY_ANNOTATION,
    MAX_BYTES,
    MAX_MOVES,
    MAX_RUNS,
    decide_history,
    read_history,
    reflected_run,
    restore_hints,
    returned_cluster_patch,
)
from failover.state.preserved_state import plan_work_labels
from failover.state.savepoint import PREVIOUS_JOB_IDS_ANNOTATION, UPGRADE_SAVEPOINT_PATH_ANNOTATION
from tests.failover.binding_builders import JOB_ID, at, flink_binding, preemption_task, set_health, stamp
from tests.failover.history_builders import RESTORE, ROTATED, failed_over, reconcile
from tests.failover.work_builders import deployment_manifest, work
from tests.patches import merge_patch

LABEL = "application.karmada.io/failover-jobid"


def test_a_failover_is_recorded_once_with_the_preserved_job_id_then_where_it_went_and_its_restore_path() -> None:
    binding = failed_over()
    [move] = read_history(binding).moves
    assert (move.kind, move.from_cluster, move.at, move.job_id, move.to) == (FAILOVER, "member1", at(70), ROTATED, ())
    assert move.reason == "ApplicationFailure"

    assert decide_history(binding, [], at(71)) is None  # a retry or a restart: nothing to add
    binding["spec"]["clusters"] = [{"name": "member2", "replicas": 1}]  # the scheduler placed it
    placed = work(deployment_manifest(), cluster="member2", name="foo", typed=False)
    binding = merge_patch(binding, decide_history(binding, [placed], at(72)))
    assert read_history(binding).moves[0].to == ("member2",)
    job = {"initialSavepointPath": RESTORE}
    restoring = work(deployment_manifest(spec={"job": job}), cluster="member2", name="foo", typed=False)
    binding = merge_patch(binding, decide_history(binding, [restoring], at(73)))
    assert read_history(binding).moves[0].restore == RESTORE
    assert decide_history(binding, [restoring], at(500)) is None


def test_a_preemption_is_an_eviction_without_a_job_id() -> None:
    """Karmada PR #7832's task: a stateless move, so no job id is put on it from the copy's last healthy report."""
    binding = reconcile(flink_binding(), 0)
    binding["spec"]["clusters"] = [{"name": "member2", "replicas": 1}]
    binding["spec"]["gracefulEvictionTasks"] = [preemption_task("member1", creationTimestamp=stamp(5))]
    [move] = read_history(reconcile(binding, 5)).moves
    assert (move.kind, move.from_cluster, move.reason, move.job_id) == (EVICTION, "member1", "BindingPreempted", "")


def test_every_run_karmada_reflected_is_kept_newest_first_with_its_start_path() -> None:
    runs = read_history(failed_over()).runs
    assert [(run.job_id, run.cluster, run.seen) for run in runs] == [
        (ROTATED, "member1", at(5)),
        (JOB_ID, "member1", at(0)),
    ]
    assert runs[0].upgrade_savepoint_path == RESTORE and not runs[1].upgrade_savepoint_path


def test_restore_hints_name_the_earlier_runs_and_the_failed_runs_start_path() -> None:
    binding = failed_over()
    assert restore_hints(binding, {LABEL: ROTATED}) == {
        PREVIOUS_JOB_IDS_ANNOTATION: JOB_ID,
        UPGRADE_SAVEPOINT_PATH_ANNOTATION: RESTORE,
    }
    assert restore_hints(binding, {LABEL: JOB_ID}) == {PREVIOUS_JOB_IDS_ANNOTATION: ROTATED}
    assert restore_hints(binding, {LABEL: "../../etc"}) == {}
    assert restore_hints(flink_binding(), {LABEL: ROTATED}) == {}


def test_a_failback_and_a_dead_clusters_return_are_moves_too_and_the_return_is_recorded_once() -> None:
    binding = failed_over()
    binding["spec"]["gracefulEvictionTasks"].append(
        {
            "fromCluster": "member2",
            "reason": "Failback",
            "producer": "failover-relay-failback",
            "purgeMode": "Directly",
            "creationTimestamp": stamp(900),
        }
    )
    binding = merge_patch(binding, decide_history(binding, [], at(900)))
    patch = returned_cluster_patch(binding, ["member3"], at(950))
    binding = merge_patch(binding, patch)
    assert [move.kind for move in read_history(binding).moves] == [FAILOVER, FAILBACK, DEAD_CLUSTER_RETURN]
    assert decide_history(binding, [], at(960)) is None


def test_the_history_is_bounded_in_count_and_bytes_and_keeps_the_newest() -> None:
    binding = flink_binding()
    binding["spec"]["gracefulEvictionTasks"] = [
        {"fromCluster": f"member{i}", "reason": "ApplicationFailure" + "x" * 2000, "creationTimestamp": stamp(i)}
        for i in range(3 * MAX_MOVES)
    ]
    for i in range(3 * MAX_RUNS):
        set_health(
            binding, "member1", "Healthy", {"jobStatus": {"jobId": f"{i:032x}", "upgradeSavepointPath": "/p" * 2000}}
        )
        binding = merge_patch(binding, decide_history(binding, [], at(i)))
    history = read_history(binding)
    assert len(history.moves) == MAX_MOVES and history.moves[-1].from_cluster == f"member{3 * MAX_MOVES - 1}"
    assert len(history.runs) == MAX_RUNS and history.runs[0].job_id == f"{3 * MAX_RUNS - 1:032x}"
    assert len(binding["metadata"]["annotations"][HISTORY_ANNOTATION].encode()) <= MAX_BYTES


def test_an_unstamped_task_waits_for_its_stamp_and_a_hostile_annotation_is_read_as_far_as_it_goes() -> None:
    binding = flink_binding()
    binding["spec"]["gracefulEvictionTasks"] = [{"fromCluster": "member1", "reason": "TaintUntolerated"}]
    assert not read_history(merge_patch(binding, decide_history(binding, [], at(0)))).moves
    for raw in (
        "not json",
        "[]",
        json.dumps({"moves": [1, {"at": "x"}], "runs": "no"}),
        json.dumps({"moves": [{"at": stamp(1), "kind": "failover", "from": "m", "to": "m2"}]}),
    ):
        hostile = copy.deepcopy(binding)
        hostile["metadata"]["annotations"][HISTORY_ANNOTATION] = raw
        assert isinstance(read_history(hostile).moves, tuple)
        decide_history(hostile, [], at(2))


def test_a_binding_being_deleted_is_left_alone() -> None:
    binding = flink_binding()
    binding["metadata"]["deletionTimestamp"] = stamp(0)
    assert decide_history(binding, [], at(1)) is None


def test_the_new_copys_manifest_gets_the_restore_hints_beside_the_preserved_label() -> None:
    binding = failed_over()
    binding["spec"]["clusters"] = [{"name": "member2", "replicas": 1}]
    new_work = work(deployment_manifest(), cluster="member2", name="foo", typed=False)
    plan = plan_work_labels(new_work, binding)
    assert plan.labels == {LABEL: ROTATED}
    assert plan.annotations == {PREVIOUS_JOB_IDS_ANNOTATION: JOB_ID, UPGRADE_SAVEPOINT_PATH_ANNOTATION: RESTORE}
    patched = jsonpatch.apply_patch(new_work, list(plan.patch))
    metadata = patched["spec"]["workload"]["manifests"][0]["metadata"]
    assert metadata["labels"] == {LABEL: ROTATED} and metadata["annotations"] == plan.annotations
    assert plan_work_labels(patched, binding).patch == ()  # applied twice: the same object


def test_the_operators_last_state_sentinel_is_no_run_start_path() -> None:
    item = {"status": {"jobStatus": {"jobId": JOB_ID, "upgradeSavepointPath": "KUBERNETES_OPERATOR_LAST_STATE"}}}
    assert reflected_run(item) == (JOB_ID, "")
    item["status"]["jobStatus"]["upgradeSavepointPath"] = "s3://b/savepoints/savepoint-1"
    assert reflected_run(item) == (JOB_ID, "s3://b/savepoints/savepoint-1")
