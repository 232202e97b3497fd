"""Warnings at admission for stateful failover that cannot happen (failover/admission/failover_warnings.py): the
user learns it when applying the policy, not when a failover loses the job's state."""

from __future__ import annotations

import copy
from typing import Any

from failover.admission.failover_warnings import failover_warnings
from failover.admission.policy import validate_policy

POLICY: dict[str, Any] = {
    "apiVersion": "policy.karmada.io/v1alpha1",
    "kind": "PropagationPolicy",
    "metadata": {"name": "flink", "namespace": "default"},
    "spec": {
        "propagateDeps": True,
        "resourceSelectors": [{"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment", "name": "job"}],
        "placement": {
            "clusterAffinities": [
                {"affinityName": "primary", "clusterNames": ["member1"]},
                {"affinityName": "backup", "clusterNames": ["member2"]},
            ],
            "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 1, "minGroups": 1}],
        },
        "failover": {"application": {"decisionConditions": {"tolerationSeconds": 60}, "purgeMode": "Directly"}},
    },
}


def warning_texts(obj: dict[str, Any], **kwargs: Any) -> list[str]:
    return [warning.text for warning in failover_warnings(obj, **kwargs)]


def policy(**changes: Any) -> dict[str, Any]:
    obj = copy.deepcopy(POLICY)
    for key, value in changes.items():
        if key == "annotations":
            obj["metadata"]["annotations"] = value
        else:
            obj["spec"][key] = value
    return obj


def test_the_documented_flink_policy_with_ordered_affinities_gets_no_warning() -> None:
    assert warning_texts(policy(annotations={"failover-relay.io/failback": "true"})) == []


def test_kinds_karmada_cannot_judge_healthy_warn() -> None:
    selectors = [
        {"apiVersion": "batch/v1", "kind": "Job"},
        {"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkSessionJob"},
        {"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkBlueGreenDeployment"},
    ]
    warnings = warning_texts(policy(resourceSelectors=selectors))
    assert [w.split(":")[0] for w in warnings] == ["Job", "FlinkSessionJob", "FlinkBlueGreenDeployment"]
    assert all("#7843" in w and len(w) <= 120 for w in warnings)


def test_a_kind_without_health_does_not_warn_without_application_failover() -> None:
    obj = policy(resourceSelectors=[{"apiVersion": "batch/v1", "kind": "Job"}])
    obj["spec"]["failover"] = {"cluster": {"purgeMode": "Directly"}}
    assert warning_texts(obj) == []


def test_a_placement_with_no_other_cluster_warns() -> None:
    assert warning_texts(policy(placement={"clusterAffinity": {"clusterNames": ["member1"]}})) == [
        "spec.placement names only member1: a failover has no other cluster to go to (#5803)"
    ]
    excluded = {"clusterAffinity": {"clusterNames": ["member1", "member2"], "exclude": ["member2"]}}
    assert len(warning_texts(policy(placement=excluded))) == 1
    assert warning_texts(policy(placement={"clusterAffinity": {"labelSelector": {"matchLabels": {}}}})) == []


def test_cluster_failover_that_tolerates_every_no_execute_taint_warns() -> None:
    obj = policy(
        placement={**POLICY["spec"]["placement"], "clusterTolerations": [{"operator": "Exists", "effect": "NoExecute"}]}
    )
    obj["spec"]["failover"]["cluster"] = {"purgeMode": "Directly"}
    assert warning_texts(obj) == [
        "spec.failover.cluster: clusterTolerations tolerate every NoExecute taint, so Karmada never evicts"
    ]
    bounded = copy.deepcopy(obj)
    bounded["spec"]["placement"]["clusterTolerations"][0]["tolerationSeconds"] = 30
    assert warning_texts(bounded) == []


def test_failback_on_a_flat_affinity_of_three_warns_and_of_two_does_not() -> None:
    flat = {
        "clusterAffinity": {"clusterNames": ["member1", "member2", "member3"]},
        "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 1}],
    }
    on = {"failover-relay.io/failback": "true"}
    assert "ordered clusterAffinities" in warning_texts(policy(placement=flat, annotations=on))[0]
    two = {**flat, "clusterAffinity": {"clusterNames": ["member1", "member2"]}}
    assert warning_texts(policy(placement=two, annotations=on)) == []
    assert warning_texts(policy(placement=flat)) == []


def test_the_policy_webhook_returns_them_as_admission_warnings() -> None:
    verdict = validate_policy(policy(placement={"clusterAffinity": {"clusterNames": ["member1"]}}))
    assert verdict.allowed and any("#5803" in warning for warning in verdict.warnings)


# The stateless-restart warning, policy side: stateful failover of FlinkDeployments whose preserved state restores
# nothing.
KEEP_JOB_ID = {"aliasLabelName": "application.karmada.io/failover-jobid", "jsonPath": "{ .jobStatus.jobId }"}
APP_SP = "spec.failover.application.statePreservation"
NO_JOB_ID = f"{APP_SP}: no rule keeps {{ .jobStatus.jobId }}: FlinkDeployments restart without state"


def stateful(*rules: dict[str, str], section: str = "application", **changes: Any) -> dict[str, Any]:
    obj = policy(**changes)
    obj["spec"]["failover"][section] = {"purgeMode": "Directly", "statePreservation": {"rules": list(rules)}}
    return obj


def test_a_stateful_flink_policy_keeping_the_job_id_under_a_trigger_label_gets_no_warning() -> None:
    for label in (
        "application.karmada.io/failover-jobid",
        "application.karmada.io/cluster-failover-jobid",
        "resourcebinding.karmada.io/failover-jobid",
    ):
        rules = [
            {"aliasLabelName": "example.com/state", "jsonPath": "{ .jobStatus.state }"},
            {"aliasLabelName": label, "jsonPath": "{.jobStatus.jobId}"},
        ]
        assert warning_texts(stateful(*rules)) == []
        assert warning_texts(stateful(*rules, section="cluster")) == []


def test_rules_that_keep_no_job_id_warn_that_flink_restarts_without_state() -> None:
    rules = [{"aliasLabelName": "application.karmada.io/failover-jobid", "jsonPath": "{ .jobStatus.state }"}]

    assert warning_texts(stateful(*rules)) == [NO_JOB_ID]
    assert warning_texts(stateful(*rules, section="cluster")) == [NO_JOB_ID.replace("application", "cluster")]


def test_the_job_id_under_a_label_the_relay_does_not_restore_on_warns() -> None:
    rules = [KEEP_JOB_ID | {"aliasLabelName": "example.com/jobid"}, KEEP_JOB_ID | {"aliasLabelName": "example.com/x"}]

    assert warning_texts(stateful(*rules)) == [
        f"{APP_SP}.rules[0].aliasLabelName: no restore runs on this label (docs/restore.md)"
    ]
    # A relay configured with that label (savepoint.jobIdLabel) restores on it.
    assert warning_texts(stateful(*rules), trigger_labels=("example.com/x",)) == []


def test_only_flink_deployments_with_stateful_failover_are_judged() -> None:
    rules = [{"aliasLabelName": "example.com/state", "jsonPath": "{ .status.phase }"}]
    deployment = [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}]

    assert warning_texts(stateful(*rules, resourceSelectors=deployment)) == []
    assert warning_texts(policy()) == []  # no statePreservation: stateless on purpose


def test_the_job_id_typo_is_left_to_its_own_warning_and_bad_rules_to_denials() -> None:
    typo = {"aliasLabelName": "example.com/jobid", "jsonPath": "{ .jobStatus.jobID }"}
    broken = [{"aliasLabelName": "a/b", "jsonPath": "{ .jobStatus.jobId"}, "not a rule", {"aliasLabelName": "a/c"}]

    assert warning_texts(stateful(typo)) == []
    assert warning_texts(stateful(*broken)) == [NO_JOB_ID]
    assert validate_policy(stateful(*broken)).denials


def test_the_policy_webhook_warns_where_flink_restarts_without_state() -> None:
    verdict = validate_policy(
        stateful({"aliasLabelName": "example.com/jobid", "jsonPath": "{ .jobStatus.jobId }"}, propagateDeps=True)
    )

    assert verdict.allowed
    assert f"{APP_SP}.rules[0].aliasLabelName: no restore runs on this label (docs/restore.md)" in verdict.warnings
