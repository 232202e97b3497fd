"""WorkloadRebalancer decisions: binding names, stamps, results, spec changes, finishTime and TTL."""

from __future__ import annotations

import copy
from datetime import timedelta

from failover.core.loop_settings import DecisionSettings
from failover.core.names import ObjectRef
from failover.moves.rebalancer import binding_name, binding_ref, decide_rebalance, referenced_bindings
from tests.failover.binding_builders import at, stamp
from tests.patches import merge_patch

SETTINGS = DecisionSettings()
DEMO = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "demo-deploy", "namespace": "default"}
ROLE = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "name": "demo-role"}
RB = ObjectRef("ResourceBinding", "demo-deploy-deployment", "default")
CRB = ObjectRef("ClusterResourceBinding", "demo-role-clusterrole")


def rebalancer(*workloads, ttl=None, created=0, generation=1):
    """The rebalancing guide's example: `demo` WorkloadRebalancer over a Deployment and a ClusterRole."""
    obj = {
        "apiVersion": "apps.karmada.io/v1alpha1",
        "kind": "WorkloadRebalancer",
        "metadata": {
            "name": "demo",
            "creationTimestamp": stamp(created),
            "generation": generation,
            "resourceVersion": "7",
        },
        "spec": {"workloads": [copy.deepcopy(w) for w in (workloads or (DEMO, ROLE))]},
    }
    if ttl is not None:
        obj["spec"]["ttlSecondsAfterFinished"] = ttl
    return obj


def binding(ref: ObjectRef, triggered=None):
    obj = {"kind": ref.kind, "metadata": {"name": ref.name, "namespace": ref.namespace}, "spec": {}}
    if triggered is not None:
        obj["spec"]["rescheduleTriggeredAt"] = triggered
    return obj


def test_binding_name_is_name_dash_kind_lowercased():
    assert binding_name("Deployment", "Demo-Deploy") == "demo-deploy-deployment"
    assert binding_name("ClusterRole", "system:controller:foo") == "system.controller.foo-clusterrole"
    assert binding_ref(DEMO) == RB and binding_ref(ROLE) == CRB


def test_referenced_bindings_are_those_not_yet_decided():
    assert referenced_bindings(rebalancer()) == (RB, CRB)


def test_stamps_each_binding_with_the_rebalancer_creation_timestamp():
    decision = decide_rebalance(rebalancer(created=5), {RB: binding(RB), CRB: binding(CRB)}, SETTINGS, at(10))
    assert {s.binding: s.patch for s in decision.stamps} == {
        RB: {"spec": {"rescheduleTriggeredAt": stamp(5)}},
        CRB: {"spec": {"rescheduleTriggeredAt": stamp(5)}},
    }
    status = decision.status_patch["status"]
    # Sorted by "apiVersion kind namespace name", as Karmada sorts them.
    assert status == {
        "observedWorkloads": [{"workload": DEMO, "result": "Successful"}, {"workload": ROLE, "result": "Successful"}],
        "observedGeneration": 1,
        "finishTime": stamp(10),
    }
    assert {e.regarding for e in decision.events} == {RB, CRB}
    assert decision.delete is False and decision.requeue_after is None


def test_binding_already_stamped_by_this_or_a_newer_rebalancer_is_not_stamped_again():
    bindings = {RB: binding(RB, stamp(5)), CRB: binding(CRB, stamp(9))}
    decision = decide_rebalance(rebalancer(created=5), bindings, SETTINGS, at(10))
    assert decision.stamps == ()
    assert all(e["result"] == "Successful" for e in decision.status_patch["status"]["observedWorkloads"])


def test_binding_stamped_by_an_older_rebalancer_is_stamped_again():
    decision = decide_rebalance(rebalancer(DEMO, created=5), {RB: binding(RB, stamp(1))}, SETTINGS, at(10))
    assert [s.binding for s in decision.stamps] == [RB]


def test_missing_binding_is_failed_with_referenced_binding_not_found():
    decision = decide_rebalance(rebalancer(), {RB: binding(RB), CRB: None}, SETTINGS, at(10))
    assert decision.status_patch["status"]["observedWorkloads"][1] == {
        "workload": ROLE,
        "result": "Failed",
        "reason": "ReferencedBindingNotFound",
    }
    assert decision.status_patch["status"]["finishTime"] == stamp(10)
    assert [e.reason for e in decision.events if e.type == "Warning"] == ["ReferencedBindingNotFound"]


def test_unreadable_binding_is_retried_and_finish_time_waits():
    decision = decide_rebalance(rebalancer(), {RB: binding(RB)}, SETTINGS, at(10))
    assert decision.pending == (CRB,)
    assert decision.status_patch["status"]["observedWorkloads"][1] == {"workload": ROLE}
    assert decision.status_patch["status"]["finishTime"] is None
    assert decision.requeue_after == SETTINGS.rebalancer_retry


def test_second_look_after_success_changes_nothing():
    obj = rebalancer()
    first = decide_rebalance(obj, {RB: binding(RB), CRB: binding(CRB)}, SETTINGS, at(10))
    stored = merge_patch(obj, first.status_patch)
    assert referenced_bindings(stored) == ()
    again = decide_rebalance(stored, {}, SETTINGS, at(20))
    assert again.status_patch is None and again.stamps == ()


def test_added_workload_is_rebalanced_and_finish_time_moves():
    obj = rebalancer(DEMO)
    stored = merge_patch(obj, decide_rebalance(obj, {RB: binding(RB)}, SETTINGS, at(10)).status_patch)
    stored["spec"]["workloads"].append(ROLE)
    stored["metadata"]["generation"] = 2
    assert referenced_bindings(stored) == (CRB,)
    decision = decide_rebalance(stored, {CRB: binding(CRB)}, SETTINGS, at(30))
    assert [s.binding for s in decision.stamps] == [CRB]
    status = decision.status_patch["status"]
    assert status["observedGeneration"] == 2 and status["finishTime"] == stamp(30)
    assert [e["result"] for e in status["observedWorkloads"]] == ["Successful", "Successful"]


def test_removed_workload_stays_only_if_it_was_successful():
    obj = rebalancer()
    stored = merge_patch(obj, decide_rebalance(obj, {RB: binding(RB), CRB: None}, SETTINGS, at(10)).status_patch)
    stored["spec"]["workloads"] = [DEMO]
    stored["metadata"]["generation"] = 2
    decision = decide_rebalance(stored, {}, SETTINGS, at(20))
    assert decision.status_patch["status"]["observedWorkloads"] == [{"workload": DEMO, "result": "Successful"}]
    stored["spec"]["workloads"] = [ROLE]  # DEMO removed after success: its record stays
    decision = decide_rebalance(stored, {CRB: binding(CRB)}, SETTINGS, at(30))
    assert [e["workload"]["name"] for e in decision.status_patch["status"]["observedWorkloads"]] == [
        "demo-deploy",
        "demo-role",
    ]


def test_modified_workload_counts_as_removed_plus_added():
    obj = rebalancer(DEMO)
    stored = merge_patch(obj, decide_rebalance(obj, {RB: None}, SETTINGS, at(10)).status_patch)
    renamed = {**DEMO, "name": "demo-deploy-v2"}
    stored["spec"]["workloads"] = [renamed]
    stored["metadata"]["generation"] = 2
    new_ref = ObjectRef("ResourceBinding", "demo-deploy-v2-deployment", "default")
    assert referenced_bindings(stored) == (new_ref,)
    decision = decide_rebalance(stored, {new_ref: binding(new_ref)}, SETTINGS, at(20))
    assert decision.status_patch["status"]["observedWorkloads"] == [{"workload": renamed, "result": "Successful"}]


def test_reordering_workloads_changes_nothing():
    obj = rebalancer(DEMO, ROLE)
    stored = merge_patch(
        obj, decide_rebalance(obj, {RB: binding(RB), CRB: binding(CRB)}, SETTINGS, at(10)).status_patch
    )
    stored["spec"]["workloads"].reverse()
    assert decide_rebalance(stored, {}, SETTINGS, at(20)).status_patch is None


def test_ttl_deletes_after_finish_and_requeues_until_then():
    obj = rebalancer(ttl=60)
    first = decide_rebalance(obj, {RB: binding(RB), CRB: binding(CRB)}, SETTINGS, at(10))
    assert first.delete is False and first.requeue_after == timedelta(seconds=60)
    stored = merge_patch(obj, first.status_patch)
    assert decide_rebalance(stored, {}, SETTINGS, at(69)).requeue_after == timedelta(seconds=1)
    assert decide_rebalance(stored, {}, SETTINGS, at(70)).delete is True


def test_ttl_zero_deletes_right_after_finishing():
    decision = decide_rebalance(rebalancer(ttl=0), {RB: binding(RB), CRB: binding(CRB)}, SETTINGS, at(10))
    assert decision.status_patch is not None and decision.delete is True


def test_no_ttl_keeps_the_rebalancer():
    decision = decide_rebalance(rebalancer(), {RB: binding(RB), CRB: binding(CRB)}, SETTINGS, at(10**6))
    assert decision.delete is False and decision.requeue_after is None


def test_ttl_waits_while_bindings_are_pending():
    decision = decide_rebalance(rebalancer(ttl=0), {RB: binding(RB)}, SETTINGS, at(10))
    assert decision.delete is False and decision.requeue_after == SETTINGS.rebalancer_retry


def test_malformed_rebalancers_do_not_raise():
    for junk in (
        {},
        [],
        {"metadata": {"creationTimestamp": stamp(0)}, "spec": {"workloads": "x"}},
        {"metadata": {"creationTimestamp": stamp(0)}, "spec": {"workloads": [{"kind": "Deployment"}]}},
    ):
        decide_rebalance(junk, {}, SETTINGS, at(0))
    nameless = decide_rebalance(rebalancer({"apiVersion": "v1", "kind": "ConfigMap"}), {}, SETTINGS, at(0))
    assert nameless.status_patch["status"]["observedWorkloads"][0]["result"] == "Failed"


def test_binding_read_back_in_an_odd_shape_does_not_raise():
    decision = decide_rebalance(rebalancer(DEMO), {RB: {"spec": "odd"}}, SETTINGS, at(10))
    assert [s.binding for s in decision.stamps] == [RB]
