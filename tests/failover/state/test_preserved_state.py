"""Preserved-state labels on Karmada Works (failover/state/preserved_state.py): the binding controller's injection
(docs/design.md, "Work sync and the preserved state on the new copy") decided from the admitted Work and its
binding, without the alpha gate."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonpatch

from failover.core.api import CLUSTER_RESOURCE_BINDING, DEFAULT_JOB_ID_LABEL, RESOURCE_BINDING
from failover.state.checkpoints import LookupResult, Outcome, parse_layout
from failover.state.preserved_state import (
    BindingRef,
    execution_cluster,
    job_id_view,
    owning_binding,
    plan_work_labels,
    task_state,
    under_manifest,
    with_labels,
)
from failover.state.profiles import flink_deployment_profile
from failover.state.savepoint import FAIL_OPEN, injection_verdict
from tests.failover.binding_builders import CLUSTER_LABEL, JOB_ID, OTHER_JOB, preemption_task, stamp
from tests.failover.work_builders import RENDERED_FROM_FOO, work

LABEL = DEFAULT_JOB_ID_LABEL


def flink_manifest(labels: dict[str, str] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "foo", "namespace": "default"}
    if labels is not None:
        metadata["labels"] = labels
    return {
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkDeployment",
        "metadata": metadata,
        "spec": {"job": {"jarURI": "local:///job.jar", "upgradeMode": "stateless"}},
    }


def rendered_work(cluster: str = "member2", *manifests: dict[str, Any]) -> dict[str, Any]:
    """A Work as the binding controller renders it for `cluster`."""
    return work(*manifests or (flink_manifest({"app": "foo"}),), cluster=cluster, annotations=RENDERED_FROM_FOO)


def task(
    from_cluster: str, state: dict[str, Any] | None, before: list[str] | None, created: float | None = 0, **extra: Any
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "fromCluster": from_cluster,
        "purgeMode": "Directly",
        "reason": "ApplicationFailure",
        **extra,
    }
    if state is not None:
        entry["preservedLabelState"] = state
    if before is not None:
        entry["clustersBeforeFailover"] = before
    if created is not None:
        entry["creationTimestamp"] = stamp(created)
    return entry


def binding(clusters: list[str], *tasks: dict[str, Any], **spec: Any) -> dict[str, Any]:
    """The binding after member1 failed over to the given clusters."""
    return {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {"name": "foo-flinkdeployment", "namespace": "default"},
        "spec": {
            "clusters": [{"name": name, "replicas": 1} for name in clusters],
            "gracefulEvictionTasks": list(tasks),
            **spec,
        },
    }


FAILED_OVER = binding(["member2"], task("member1", {LABEL: JOB_ID}, ["member1"]))


def labels_after(obj: dict[str, Any], patch: Any) -> dict[str, str]:
    return jsonpatch.apply_patch(obj, list(patch))["spec"]["workload"]["manifests"][0]["metadata"]["labels"]


def test_single_target_gets_the_preserved_labels_on_its_manifest() -> None:
    plan = plan_work_labels(rendered_work(), FAILED_OVER)

    assert labels_after(rendered_work(), plan.patch) == {"app": "foo", LABEL: JOB_ID}
    assert plan.source == "member1"
    assert plan.verdict().audit == {"preserved-state-outcome": "injected", "preserved-state-from": "member1"}


def test_label_keys_are_escaped_in_the_json_pointer() -> None:
    plan = plan_work_labels(rendered_work(), FAILED_OVER)

    assert [op["path"] for op in plan.patch] == [
        "/spec/workload/manifests/0/metadata/labels/application.karmada.io~1failover-jobid"
    ]


def test_missing_labels_and_metadata_are_created_whole() -> None:
    bare = flink_manifest()
    no_metadata = {"apiVersion": "v1", "kind": "ConfigMap", "data": {}}
    obj = rendered_work("member2", bare, no_metadata)

    patched = jsonpatch.apply_patch(obj, list(plan_work_labels(obj, FAILED_OVER).patch))

    for manifest in patched["spec"]["workload"]["manifests"]:
        assert manifest["metadata"]["labels"] == {LABEL: JOB_ID}


def test_applying_the_patch_twice_changes_nothing_and_a_second_look_finds_nothing_to_do() -> None:
    obj = rendered_work()
    patch = jsonpatch.JsonPatch(list(plan_work_labels(obj, FAILED_OVER).patch))

    once = patch.apply(obj)
    twice = patch.apply(once)

    assert twice == once
    again = plan_work_labels(once, FAILED_OVER)
    assert again.patch == ()
    assert again.verdict().audit["preserved-state-outcome"] == "already-set"


def test_a_different_value_already_on_the_manifest_is_replaced() -> None:
    obj = rendered_work("member2", flink_manifest({LABEL: OTHER_JOB}))

    plan = plan_work_labels(obj, FAILED_OVER)

    assert [op["op"] for op in plan.patch] == ["replace"]
    assert labels_after(obj, plan.patch) == {LABEL: JOB_ID}


def test_a_placement_over_several_clusters_gets_nothing() -> None:
    spread = binding(["member2", "member3"], task("member1", {LABEL: JOB_ID}, ["member1"]))

    plan = plan_work_labels(rendered_work(), spread)

    assert plan.patch == () and plan.labels == {}
    assert "2 clusters" in plan.reason
    assert plan.verdict().audit["preserved-state-outcome"] == "skipped"


def test_clusters_required_by_dependants_count_as_targets() -> None:
    dependency = binding(
        ["member2"],
        task("member1", {LABEL: JOB_ID}, ["member1"]),
        requiredBy=[{"name": "app", "namespace": "default", "clusters": [{"name": "member3", "replicas": 1}]}],
    )

    assert plan_work_labels(rendered_work(), dependency).patch == ()


def test_a_cluster_in_clusters_before_failover_gets_nothing() -> None:
    back_home = binding(["member2"], task("member1", {LABEL: JOB_ID}, ["member1", "member2"]))

    plan = plan_work_labels(rendered_work(), back_home)

    assert plan.patch == ()
    assert "member2" in plan.reason


def test_state_is_never_sent_back_to_the_cluster_it_came_from() -> None:
    # The taint manager writes no clustersBeforeFailover (`taint_manager.go` `syncBindingEviction`).
    same = binding(["member1"], task("member1", {LABEL: JOB_ID}, None))

    assert plan_work_labels(rendered_work("member1"), same).patch == ()


def test_a_cluster_failover_task_without_clusters_before_failover_injects() -> None:
    tainted = binding(["member2"], task("member1", {LABEL: JOB_ID}, None, producer="TaintManager"))

    assert labels_after(rendered_work(), plan_work_labels(rendered_work(), tainted).patch)[LABEL] == JOB_ID


def test_a_binding_without_preserved_state_leaves_the_work_alone_silently() -> None:
    plain = binding(["member2"], task("member1", None, ["member1"]))

    plan = plan_work_labels(rendered_work(), plain)

    assert plan.patch == () and plan.reason == "" and plan.verdict().audit == {}
    assert plan_work_labels(rendered_work(), binding(["member2"])).verdict() == plan.verdict()


def test_second_failover_in_a_row_uses_the_newest_task() -> None:
    # member1 failed over to member2, whose copy never became healthy; the decision layer carried the first
    # task's state into the task for member2. The Work for member3 gets it.
    second = binding(
        ["member3"],
        task("member1", {LABEL: JOB_ID}, ["member1"], created=0),
        task("member2", {LABEL: OTHER_JOB}, ["member2"], created=600),
    )

    plan = plan_work_labels(rendered_work("member3"), second)

    assert plan.source == "member2"
    assert labels_after(rendered_work("member3"), plan.patch)[LABEL] == OTHER_JOB


def test_newest_is_by_creation_time_not_list_position() -> None:
    reordered = binding(
        ["member3"],
        task("member2", {LABEL: OTHER_JOB}, ["member2"], created=600),
        task("member1", {LABEL: JOB_ID}, ["member1"], created=0),
    )

    assert plan_work_labels(rendered_work("member3"), reordered).source == "member2"


def test_an_unstamped_task_is_the_newest() -> None:
    fresh = binding(
        ["member3"],
        task("member1", {LABEL: JOB_ID}, ["member1"], created=600),
        task("member2", {LABEL: OTHER_JOB}, ["member2"], created=None),
    )

    assert plan_work_labels(rendered_work("member3"), fresh).source == "member2"


def test_a_newer_task_that_does_not_qualify_does_not_hide_an_older_one() -> None:
    # The second failover left member3 for member2, which ran the workload before: only member1's task applies.
    mixed = binding(
        ["member2"],
        task("member1", {LABEL: JOB_ID}, ["member1"], created=0),
        task("member3", {LABEL: OTHER_JOB}, ["member2", "member3"], created=600),
    )

    assert plan_work_labels(rendered_work("member2"), mixed).source == "member1"


def test_hostile_values_are_never_written() -> None:
    hostile = {
        LABEL: "../../etc",
        "app.example.com/long": "x" * 200,
        "app.example.com/newline": "a\nb",
        "bad key!": "value",
        "app.example.com/fine": "ok",
        "app.example.com/number": 7,
    }
    plan = plan_work_labels(rendered_work(), binding(["member2"], task("member1", hostile, ["member1"])))

    assert labels_after(rendered_work(), plan.patch) == {"app": "foo", "app.example.com/fine": "ok"}
    assert len(plan.warnings) == 5
    assert all("\n" not in warning and "x" * 64 not in warning for warning in plan.warnings), "no value echoed"
    assert all(len(warning) < 200 for warning in plan.warnings), "a hostile key is cut, the reason kept whole"


def test_only_invalid_values_give_warnings_and_no_patch() -> None:
    plan = plan_work_labels(rendered_work(), binding(["member2"], task("member1", {LABEL: "../../etc"}, ["member1"])))

    assert plan.patch == ()
    (warning,) = plan.warnings
    assert warning.startswith(f"preserved label {LABEL} from member1 skipped: value must be alphanumerics")
    assert plan.verdict().audit["preserved-state-outcome"] == "skipped"


def test_a_manifest_with_labels_of_the_wrong_type_is_reported_not_patched() -> None:
    odd = flink_manifest()
    odd["metadata"]["labels"] = ["not", "a", "map"]

    plan = plan_work_labels(rendered_work("member2", odd), FAILED_OVER)

    assert plan.patch == ()
    assert "metadata.labels is not an object" in plan.warnings[0]


def test_works_outside_execution_namespaces_are_not_touched() -> None:
    obj = rendered_work()
    obj["metadata"]["namespace"] = "default"

    assert plan_work_labels(obj, FAILED_OVER).patch == ()
    assert execution_cluster("karmada-es-") is None
    assert execution_cluster("karmada-es-member1") == "member1"


def test_the_owning_binding_comes_from_the_annotations() -> None:
    assert owning_binding(rendered_work()) == (BindingRef(RESOURCE_BINDING, "foo-flinkdeployment", "default"), "")
    cluster_scoped = rendered_work()
    cluster_scoped["metadata"]["annotations"] = {"clusterresourcebinding.karmada.io/name": "crd-foo"}
    assert owning_binding(cluster_scoped) == (BindingRef(CLUSTER_RESOURCE_BINDING, "crd-foo"), "")
    assert owning_binding({"metadata": {}}) == (None, "")


def test_binding_names_that_are_not_kubernetes_names_are_refused() -> None:
    for namespace, name in (("../kube-system", "x"), ("default", "a/b"), ("default", "x" * 300), (None, "x")):
        obj = rendered_work()
        obj["metadata"]["annotations"] = {
            "resourcebinding.karmada.io/namespace": namespace,
            "resourcebinding.karmada.io/name": name,
        }
        ref, problem = owning_binding(obj)
        assert ref is None and problem


def test_the_savepoint_decision_runs_on_the_labelled_manifest_under_its_place_in_the_work() -> None:
    profile = flink_deployment_profile(LABEL, [parse_layout("{root}/{namespace}/{job_id}/checkpoints")])
    obj = rendered_work(
        "member2",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "conf"}},
        flink_manifest({"app": "foo"}),
    )
    plan = plan_work_labels(obj, FAILED_OVER)
    labelled = with_labels(obj["spec"]["workload"]["manifests"][1], plan.labels)
    checkpoint = f"s3://bucket/default/{JOB_ID}/checkpoints/chk-42"

    savepoint = injection_verdict(
        profile, labelled, LookupResult(Outcome.FOUND, checkpoint, "checkpoint"), FAIL_OPEN, "default"
    )
    patch = list(plan.patch) + list(under_manifest(1, savepoint).patch)
    patched = jsonpatch.apply_patch(copy.deepcopy(obj), patch)

    flink = patched["spec"]["workload"]["manifests"][1]
    assert flink["metadata"]["labels"] == {"app": "foo", LABEL: JOB_ID}
    # No checkpoint or savepoint directory configured: upgradeMode stays (the operator's validator would refuse
    # `savepoint`), job.state is never forced.
    assert flink["spec"]["job"] == {
        "jarURI": "local:///job.jar",
        "upgradeMode": "stateless",
        "initialSavepointPath": checkpoint,
    }
    config_map = patched["spec"]["workload"]["manifests"][0]
    assert config_map == {
        **obj["spec"]["workload"]["manifests"][0],
        "metadata": {"name": "conf", "labels": {LABEL: JOB_ID}},
    }


# --- state beyond the task: the last healthy report (failover/state/last_state.py), re-renders,
# the cluster failover label


def recorded(
    states: dict[str, tuple[str, float]], rules: tuple[str, ...] = (LABEL,), which: str = "application"
) -> dict[str, Any]:
    annotation = {
        cluster: {"labels": {label: job for label in rules}, "at": stamp(seconds)}
        for cluster, (job, seconds) in states.items()
    }
    return {
        "metadata": {"annotations": {"failover-relay.io/last-state": json.dumps(annotation)}},
        "spec": {
            "failover": {
                which: {
                    "statePreservation": {
                        "rules": [{"aliasLabelName": label, "jsonPath": "{ .jobStatus.jobId }"} for label in rules]
                    }
                }
            }
        },
    }


def with_record(base: dict[str, Any], states: dict[str, tuple[str, float]], **kwargs: Any) -> dict[str, Any]:
    extra = recorded(states, **kwargs)
    result = copy.deepcopy(base)
    result["metadata"]["annotations"] = extra["metadata"]["annotations"]
    result["spec"]["failover"] = extra["spec"]["failover"]
    return result


def test_a_taint_manager_task_without_state_injects_the_evicted_copys_last_healthy_report() -> None:
    unfilled = binding(
        ["member2"],
        {"fromCluster": "member1", "purgeMode": "Directly", "reason": "TaintUntolerated", "producer": "TaintManager"},
    )
    dead = with_record(unfilled, {"member1": (JOB_ID, 0)}, rules=(CLUSTER_LABEL,), which="cluster")
    plan = plan_work_labels(rendered_work(), dead)
    assert plan.labels == {CLUSTER_LABEL: JOB_ID} and plan.source == "member1"


def test_a_task_carries_the_last_healthy_report_for_the_rules_of_its_failover_kind_only() -> None:
    taint_task = {
        "fromCluster": "member1",
        "purgeMode": "Directly",
        "reason": "TaintUntolerated",
        "producer": "TaintManager",
    }
    only_application_rules = with_record(binding(["member2"], taint_task), {"member1": (JOB_ID, 0)})
    assert task_state(only_application_rules, taint_task) == {}
    # The workload still moved away from a copy whose state was recorded: the new copy gets it (moved_state).
    assert plan_work_labels(rendered_work(), only_application_rules).labels == {LABEL: JOB_ID}


def test_a_preempted_workload_moves_without_state_unless_its_task_preserved_some() -> None:
    """Karmada PR #7832's task carries no state; Karmada would inject none, and neither do we (neither the evicted
    copy's last healthy report nor, with the task still there, a moved state)."""
    preempted = with_record(binding(["member2"], preemption_task("member1")), {"member1": (JOB_ID, 0)})
    assert task_state(preempted, preemption_task("member1")) == {}
    assert plan_work_labels(rendered_work("member2"), preempted).labels == {}
    kept = with_record(binding(["member2"], preemption_task("member1", preservedLabelState={LABEL: JOB_ID})), {})
    assert plan_work_labels(rendered_work("member2"), kept).labels == {LABEL: JOB_ID}


def test_with_no_task_a_moved_workload_gets_the_state_of_the_copy_it_left() -> None:
    """The task ended before the new Work existed, or a WorkloadRebalancer moved it (no task at all)."""
    moved = with_record(binding(["member2"]), {"member1": (JOB_ID, 0)})
    plan = plan_work_labels(rendered_work("member2"), moved)
    assert plan.labels == {LABEL: JOB_ID} and plan.source == "member1"


def test_a_failback_gets_the_newest_state_not_the_recovered_clusters_old_one() -> None:
    back_home = with_record(binding(["member1"]), {"member1": (OTHER_JOB, 0), "member2": (JOB_ID, 100)})
    assert plan_work_labels(rendered_work("member1"), back_home).labels == {LABEL: JOB_ID}


def test_a_cluster_whose_own_report_is_newest_gets_nothing() -> None:
    current = with_record(binding(["member1"]), {"member1": (JOB_ID, 100), "member2": (OTHER_JOB, 0)})
    assert plan_work_labels(rendered_work("member1"), current).labels == {}


def test_a_record_of_a_cluster_still_targeted_is_not_a_moved_state() -> None:
    spread = with_record(binding(["member1", "member2"]), {"member1": (JOB_ID, 0)})
    assert plan_work_labels(rendered_work("member2"), spread).labels == {}


def test_a_re_render_keeps_the_labels_the_copy_was_given() -> None:
    """Karmada PR #7478: the task is gone and Karmada rewrites the Work from the template."""
    after_task = with_record(binding(["member2"]), {})
    old = rendered_work("member2", flink_manifest({"app": "foo", LABEL: JOB_ID}))
    new = rendered_work("member2", flink_manifest({"app": "foo"}))
    plan = plan_work_labels(new, after_task, old_work=old)
    assert plan.labels == {LABEL: JOB_ID}
    assert labels_after(new, plan.patch) == {"app": "foo", LABEL: JOB_ID}
    assert plan.verdict().audit["preserved-state-outcome"] == "injected"


def test_a_re_render_keeps_only_preservation_labels() -> None:
    after_task = with_record(binding(["member2"]), {})
    old = rendered_work("member2", flink_manifest({"app": "foo", "team": "a"}))
    new = rendered_work("member2", flink_manifest({"app": "foo"}))
    assert plan_work_labels(new, after_task, old_work=old).labels == {}


def test_a_template_that_sets_the_label_itself_wins_on_re_render() -> None:
    after_task = with_record(binding(["member2"]), {})
    old = rendered_work("member2", flink_manifest({LABEL: JOB_ID}))
    new = rendered_work("member2", flink_manifest({LABEL: OTHER_JOB}))
    assert plan_work_labels(new, after_task, old_work=old).labels == {}


def test_the_cluster_failover_label_is_read_as_the_job_id_label() -> None:
    manifest = flink_manifest({CLUSTER_LABEL: JOB_ID})
    assert job_id_view(manifest, LABEL)["metadata"]["labels"][LABEL] == JOB_ID
    assert LABEL not in manifest["metadata"]["labels"]  # the view only
    both = flink_manifest({CLUSTER_LABEL: JOB_ID, LABEL: OTHER_JOB})
    assert job_id_view(both, LABEL) is both
    assert job_id_view(None, LABEL) is None
