"""Binding writes tested on the fields their decision read (failover/reconcile/preconditions.py)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controllers.loop.cache import binding_cached_form
from failover.core.loop_settings import DecisionSettings
from failover.fence.fenced_copies import FENCED_ANNOTATION
from failover.fence.old_copy import decide_fencing
from failover.reconcile.cluster_failover import decide_cluster_failover_state
from failover.reconcile.graceful_eviction import decide_graceful_eviction
from failover.reconcile.preconditions import READS_FENCING, eviction_reads, fill_reads, guarded_patch, pointer
from failover.state.last_state import decide_last_state
from tests.failover.binding_builders import (
    JOB_ID,
    OTHER_JOB,
    TAINT_TASK,
    at,
    evicted_by_taint,
    evicting_binding,
    flink_binding,
    set_health,
    stamp,
    with_cluster_rules,
)
from tests.failover.work_builders import clusters, evicted, stored_work
from tests.patches import merge_patch


class PreconditionFailed(Exception):
    """What the apiserver answers with 422."""


SETTINGS = DecisionSettings()


def apply(obj: dict[str, Any], operations: list[dict[str, Any]]) -> dict[str, Any]:
    """A JSON patch applied as the kube-apiserver applies it (evanphx/json-patch v4): `test` of a missing member
    with null succeeds when its parent exists; only the operations guarded_patch writes."""
    result = copy.deepcopy(obj)
    for operation in operations:
        steps = [step.replace("~1", "/").replace("~0", "~") for step in operation["path"].split("/")[1:]]
        parent: Any = result
        for step in steps[:-1]:
            parent = parent[int(step)] if isinstance(parent, list) else parent.get(step)
            if parent is None:
                raise PreconditionFailed(f"missing path {operation['path']}")
        last: Any = int(steps[-1]) if isinstance(parent, list) else steps[-1]
        if operation["op"] == "test":
            current = parent[last] if isinstance(parent, list) else parent.get(last)
            if current != operation["value"]:
                raise PreconditionFailed(operation["path"])
        elif operation["op"] == "add":
            parent[last] = copy.deepcopy(operation["value"])
        else:
            del parent[last]
    return result


def taint_evicted() -> dict[str, Any]:
    binding = with_cluster_rules(flink_binding())
    binding = merge_patch(binding, decide_last_state(binding, at(0)))
    binding = evicted_by_taint(binding)
    set_health(binding, "member1", "Unknown", {})
    binding["metadata"]["resourceVersion"] = "100"
    return binding


def fill(binding: dict[str, Any]) -> list[dict[str, Any]]:
    decision = decide_cluster_failover_state(binding)
    assert decision.patch is not None
    return guarded_patch(binding, decision.patch, fill_reads(binding, decision.filled))


def fence(binding: dict[str, Any], works: list[dict[str, Any]]) -> tuple[Any, list[dict[str, Any]]]:
    decision = decide_fencing(binding, works, clusters(False, since=-100), SETTINGS, at(0))
    assert decision.binding_patch is not None
    return decision, guarded_patch(binding, decision.binding_patch, READS_FENCING)


def test_a_guarded_patch_writes_what_the_merge_patch_writes() -> None:
    binding = taint_evicted()
    decision = decide_cluster_failover_state(binding)
    assert apply(binding, fill(binding)) == merge_patch(binding, decision.patch)

    fenced = evicted()
    decision, operations = fence(fenced, [stored_work()])
    assert FENCED_ANNOTATION in decision.binding_patch["metadata"]["annotations"]
    assert apply(fenced, operations) == merge_patch(fenced, decision.binding_patch)
    woken = merge_patch(fenced, decision.binding_patch)
    wake, operations = fence(woken, [])
    assert wake.woken == ("member1",)
    assert apply(woken, operations) == merge_patch(woken, wake.binding_patch)


def test_a_fill_decided_on_the_cached_form_applies_to_the_stored_binding() -> None:
    """The cache keeps of a copy's reflected status only what the loop reads; what Karmada reflects beyond that (a
    FlinkDeployment's reconciliationStatus, its cluster info) is not tested."""
    stored = with_cluster_rules(flink_binding())
    set_health(stored, "member1", "Healthy", {"jobStatus": {"jobId": JOB_ID}, "clusterInfo": {"flink-version": "1.20"}})
    stored = evicted_by_taint(stored)
    cached = dict(binding_cached_form(stored))
    assert "clusterInfo" not in cached["status"]["aggregatedStatus"][0]["status"]
    decision = decide_cluster_failover_state(cached)
    operations = guarded_patch(cached, decision.patch, fill_reads(cached, decision.filled))
    assert apply(stored, operations)["spec"] == merge_patch(stored, decision.patch)["spec"]
    moved = copy.deepcopy(stored)
    moved["status"]["aggregatedStatus"][0]["status"]["jobStatus"]["jobId"] = OTHER_JOB
    with pytest.raises(PreconditionFailed):
        apply(moved, operations)


def test_applied_twice_the_second_fails_and_the_decision_then_asks_for_nothing() -> None:
    binding = taint_evicted()
    operations = fill(binding)
    filled = apply(binding, operations)
    with pytest.raises(PreconditionFailed):
        apply(filled, operations)
    assert decide_cluster_failover_state(filled).patch is None


def karmada_wrote_elsewhere(binding: dict[str, Any]) -> dict[str, Any]:
    """What Karmada writes on a binding in a storm besides the tasks: the status controllers' conditions and the new
    copy's reflected status, the scheduler's observed generation, a new resourceVersion, a label."""
    changed = copy.deepcopy(binding)
    changed["metadata"]["resourceVersion"] = "101"
    changed["metadata"].setdefault("labels", {})["karmada.io/managed"] = "true"
    changed["status"]["conditions"] = [{"type": "FullyApplied", "status": "False"}]
    changed["status"]["schedulerObservedGeneration"] = 7
    set_health(changed, "member2", "Healthy")
    return changed


@pytest.mark.parametrize("which", ["fill", "fence"])
def test_a_change_of_a_field_the_decision_did_not_read_neither_fails_the_patch_nor_changes_the_decision(
    which: str,
) -> None:
    binding = taint_evicted() if which == "fill" else evicted()
    changed = karmada_wrote_elsewhere(binding)
    if which == "fill":
        operations = fill(binding)
        assert decide_cluster_failover_state(changed) == decide_cluster_failover_state(binding)
    else:
        _, operations = fence(binding, [stored_work()])
        assert decide_fencing(changed, [stored_work()], clusters(False, since=-100), SETTINGS, at(0)) == decide_fencing(
            binding, [stored_work()], clusters(False, since=-100), SETTINGS, at(0)
        )
    patched = apply(changed, operations)
    assert patched["status"] == changed["status"] and patched["metadata"]["labels"] == changed["metadata"]["labels"]


def test_the_taint_managers_next_task_fails_the_patch() -> None:
    binding = taint_evicted()
    operations = fill(binding)
    changed = copy.deepcopy(binding)
    changed["spec"]["gracefulEvictionTasks"].append({**TAINT_TASK, "fromCluster": "member3"})
    with pytest.raises(PreconditionFailed):
        apply(changed, operations)


def test_a_new_healthy_report_or_a_new_fenced_record_fails_the_patch() -> None:
    binding = taint_evicted()
    operations = fill(binding)
    changed = merge_patch(binding, {"metadata": {"annotations": {"failover-relay.io/last-state": "{}"}}})
    with pytest.raises(PreconditionFailed):
        apply(changed, operations)
    fenced = evicted()
    _, operations = fence(fenced, [stored_work()])
    changed = merge_patch(fenced, {"metadata": {"annotations": {FENCED_ANNOTATION: '{"member3":[]}'}}})
    with pytest.raises(PreconditionFailed):
        apply(changed, operations)


def test_an_absent_field_is_tested_as_null_at_its_first_missing_step() -> None:
    binding: dict[str, Any] = {"metadata": {"name": "b"}, "spec": {}}
    operations = guarded_patch(binding, {"metadata": {"annotations": {"a.io/x": "1"}}}, [("spec", "failover", "x")])
    assert operations == [
        {"op": "test", "path": "/spec/failover", "value": None},
        {"op": "test", "path": "/metadata/annotations", "value": None},
        {"op": "add", "path": "/metadata/annotations", "value": {"a.io/x": "1"}},
    ]
    assert apply(binding, operations)["metadata"]["annotations"] == {"a.io/x": "1"}


def test_a_removed_annotation_is_tested_then_removed_and_keys_are_escaped() -> None:
    binding = {"metadata": {"annotations": {"a.io/x": "1", "b~c": "2"}}}
    operations = guarded_patch(binding, {"metadata": {"annotations": {"a.io/x": None, "b~c": "3", "d": None}}}, [])
    assert operations == [
        {"op": "test", "path": "/metadata/annotations/a.io~1x", "value": "1"},
        {"op": "test", "path": "/metadata/annotations/b~0c", "value": "2"},
        {"op": "remove", "path": "/metadata/annotations/a.io~1x"},
        {"op": "add", "path": "/metadata/annotations/b~0c", "value": "3"},
    ]
    assert pointer(("a", 0, "x/y")) == "/a/0/x~1y"


def ended_by_health() -> dict[str, Any]:
    """nginx evicted from member1, its new copy on member2 Healthy and scheduled: the task ends."""
    binding = evicting_binding({"gracePeriodSeconds": 600, "creationTimestamp": stamp(0)})
    set_health(binding, "member1", "Unhealthy", {"readyReplicas": 0})  # the old copy, still reported
    binding["metadata"]["resourceVersion"] = "100"
    return binding


def end(binding: dict[str, Any]) -> list[dict[str, Any]]:
    decision = decide_graceful_eviction(binding, DecisionSettings(), at(10))
    assert decision.ended and decision.patch is not None
    return guarded_patch(binding, decision.patch, eviction_reads(binding))


def test_a_tasks_end_writes_what_the_merge_patch_writes_and_not_twice() -> None:
    binding = ended_by_health()
    decision = decide_graceful_eviction(binding, DecisionSettings(), at(10))
    ended = apply(binding, end(binding))
    assert ended == merge_patch(binding, decision.patch) and ended["spec"]["gracefulEvictionTasks"] == []
    with pytest.raises(PreconditionFailed):
        apply(ended, end(binding))
    assert decide_graceful_eviction(ended, DecisionSettings(), at(10)).patch is None


def test_a_tasks_end_survives_what_it_did_not_read_and_fails_on_what_it_did() -> None:
    binding = ended_by_health()
    operations = end(binding)
    elsewhere = copy.deepcopy(binding)  # Karmada's conditions, a label, the old copy's report, a new version
    elsewhere["metadata"]["resourceVersion"] = "101"
    elsewhere["metadata"].setdefault("labels", {})["karmada.io/managed"] = "true"
    elsewhere["status"]["conditions"] = [{"type": "FullyApplied", "status": "False"}]
    set_health(elsewhere, "member1", "Unknown", {})
    elsewhere["status"]["aggregatedStatus"][1]["status"] = {"readyReplicas": 1}  # member2's report, not its health
    assert decide_graceful_eviction(elsewhere, DecisionSettings(), at(10)) == decide_graceful_eviction(
        binding, DecisionSettings(), at(10)
    )
    assert apply(elsewhere, operations)["status"] == elsewhere["status"]
    unhealthy, rescheduled, moved = copy.deepcopy(binding), copy.deepcopy(binding), copy.deepcopy(binding)
    set_health(unhealthy, "member2", "Unhealthy")
    rescheduled["metadata"]["generation"] = 3
    moved["spec"]["clusters"] = [{"name": "member3", "replicas": 2}]
    for changed in (unhealthy, rescheduled, moved):
        assert decide_graceful_eviction(changed, DecisionSettings(), at(10)).ended == ()
        with pytest.raises(PreconditionFailed):
            apply(changed, operations)
