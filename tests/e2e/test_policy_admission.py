"""PropagationPolicy and ClusterPropagationPolicy admission through a real kube-apiserver.

Each test sends objects the way a user does (`kubectl apply`, or the `kubernetes` client) to an apiserver whose
webhook configurations were rendered by `failover-relay manifests webhook`, and reads back what the apiserver
stored or answered: the denial message with its field path, the warnings kubectl prints, the defaults in etcd.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from tests.e2e.objects import (
    VALIDATE_POLICIES,
    apply,
    denial,
    flink_policy,
    get,
    good_policy,
    warnings_of,
)
from tests.envtest import ControlPlane

pytestmark = [pytest.mark.envtest, pytest.mark.usefixtures("webhooks")]

APPLICATION = "spec.failover.application"


def _deny_cases() -> list[Any]:
    """(how the policy is broken, the finding our webhook must answer with); each reaches the validating webhook
    because the CRD schema accepts it."""

    def policy(**application: Any) -> dict[str, Any]:
        return good_policy("bad", "NAMESPACE", **application)

    no_deps = policy()
    del no_deps["spec"]["propagateDeps"]
    deps_false = policy()
    deps_false["spec"]["propagateDeps"] = False
    rule = {"aliasLabelName": "application.karmada.io/failover-jobid", "jsonPath": "{ .jobStatus.jobId }"}
    return [
        pytest.param(
            no_deps,
            "spec.propagateDeps: must be true when spec.failover.application is set",
            id="propagateDeps-missing",
        ),
        pytest.param(deps_false, "spec.propagateDeps: must be true", id="propagateDeps-false"),
        pytest.param(
            policy(decisionConditions={"tolerationSeconds": -1}),
            f"{APPLICATION}.decisionConditions.tolerationSeconds: must be 0 or more, got -1",
            id="negative-toleration",
        ),
        pytest.param(
            policy(purgeMode="Directly", gracePeriodSeconds=30),
            f"{APPLICATION}.gracePeriodSeconds: only applies to purgeMode Gracefully, not Directly",
            id="grace-period-without-gracefully",
        ),
        pytest.param(
            policy(purgeMode="Gracefully", gracePeriodSeconds=0),
            f"{APPLICATION}.gracePeriodSeconds: must be greater than 0, got 0",
            id="grace-period-zero",
        ),
        pytest.param(
            policy(purgeMode="Gracefully", statePreservation={"rules": [rule]}),
            f"{APPLICATION}.statePreservation: needs purgeMode Directly, but it is Gracefully",
            id="state-preservation-gracefully",
        ),
        # No purgeMode: the mutating webhook defaults it to Gracefully before validation sees it.
        pytest.param(
            policy(statePreservation={"rules": [rule]}),
            f"{APPLICATION}.statePreservation: needs purgeMode Directly, but it is Gracefully",
            id="state-preservation-defaulted-gracefully",
        ),
        pytest.param(
            policy(purgeMode="Directly", statePreservation={"rules": []}),
            f"{APPLICATION}.statePreservation.rules: needs at least one rule",
            id="empty-rules",
        ),
        pytest.param(
            policy(
                purgeMode="Directly",
                statePreservation={"rules": [{"aliasLabelName": "not a label!", "jsonPath": "{ .jobStatus.jobId }"}]},
            ),
            f"{APPLICATION}.statePreservation.rules[0].aliasLabelName: 'not a label!' is not a valid label key",
            id="alias-not-a-label-key",
        ),
        pytest.param(
            policy(purgeMode="Directly", statePreservation={"rules": [rule, rule]}),
            f"{APPLICATION}.statePreservation.rules[1].aliasLabelName: "
            "'application.karmada.io/failover-jobid' is used by another rule",
            id="alias-duplicated",
        ),
        pytest.param(
            policy(
                purgeMode="Directly",
                statePreservation={"rules": [{"aliasLabelName": "jobid", "jsonPath": "{ .jobStatus.jobId"}]},
            ),
            f"{APPLICATION}.statePreservation.rules[0].jsonPath: does not parse",
            id="json-path-unparseable",
        ),
    ]


@pytest.mark.parametrize(("policy", "finding"), _deny_cases())
def test_kubectl_apply_of_a_broken_policy_is_denied_with_the_field_path(
    control_plane: ControlPlane, namespace: str, policy: dict[str, Any], finding: str
) -> None:
    policy = copy.deepcopy(policy)
    policy["metadata"]["namespace"] = namespace

    result = apply(control_plane, policy)

    assert finding in denial(result, VALIDATE_POLICIES)
    assert get(control_plane, "propagationpolicy", "bad", namespace) is None


def test_cluster_purge_mode_never_is_refused_by_karmadas_schema(control_plane: ControlPlane, namespace: str) -> None:
    """Cluster failover has no Never (the taint manager always removes the copy). Karmada's CRD declares the enum, and
    the apiserver checks the schema before any validating webhook, so the relay's own rule for it (unit-tested in
    tests/failover) never gets to answer here."""
    policy = good_policy("bad", namespace)
    policy["spec"]["failover"]["cluster"] = {"purgeMode": "Never"}

    result = apply(control_plane, policy)

    assert result.returncode != 0
    assert 'spec.failover.cluster.purgeMode: Unsupported value: "Never"' in result.stderr
    assert get(control_plane, "propagationpolicy", "bad", namespace) is None


def test_cluster_propagation_policy_is_denied_too(control_plane: ControlPlane) -> None:
    policy = good_policy("e2e-bad-cluster-policy", "unused")
    policy["kind"] = "ClusterPropagationPolicy"
    del policy["metadata"]["namespace"]
    del policy["spec"]["propagateDeps"]

    result = apply(control_plane, policy)

    assert "spec.propagateDeps: must be true" in denial(result, VALIDATE_POLICIES)


def test_good_policy_is_stored_with_karmadas_defaults(control_plane: ControlPlane, namespace: str) -> None:
    result = apply(control_plane, good_policy("good", namespace))

    assert result.returncode == 0, result.stderr
    stored = get(control_plane, "propagationpolicy", "good", namespace)
    assert stored is not None
    application = stored["spec"]["failover"]["application"]
    assert application["decisionConditions"]["tolerationSeconds"] == 300
    assert application["purgeMode"] == "Gracefully"
    assert application["gracePeriodSeconds"] == 600


def test_explicit_values_are_kept_and_directly_gets_no_grace_period(
    control_plane: ControlPlane, namespace: str
) -> None:
    policy = flink_policy("flink", namespace, decisionConditions={"tolerationSeconds": 60})

    result = apply(control_plane, policy)

    assert result.returncode == 0, result.stderr
    assert warnings_of(result) == []
    application = get(control_plane, "propagationpolicy", "flink", namespace)["spec"]["failover"]["application"]
    assert application["decisionConditions"]["tolerationSeconds"] == 60
    assert application["purgeMode"] == "Directly"
    assert "gracePeriodSeconds" not in application


def test_legacy_purge_mode_is_rewritten_and_kubectl_prints_our_warning(
    control_plane: ControlPlane, namespace: str
) -> None:
    """Karmada v1.19 removed the legacy names from its CRD enum (karmada#7792); mutating webhooks run before the
    schema, so the relay's rewrite keeps a manifest copied from Karmada's docs applying."""
    result = apply(control_plane, good_policy("legacy", namespace, purgeMode="Graciously"))

    assert result.returncode == 0, result.stderr
    assert warnings_of(result) == [
        f"{APPLICATION}.purgeMode: Graciously rewritten to Gracefully (removed in Karmada v1.19)"
    ]
    application = get(control_plane, "propagationpolicy", "legacy", namespace)["spec"]["failover"]["application"]
    assert application["purgeMode"] == "Gracefully"
    assert application["gracePeriodSeconds"] == 600


def test_zero_toleration_is_admitted_with_a_warning(control_plane: ControlPlane, namespace: str) -> None:
    result = apply(control_plane, good_policy("eager", namespace, decisionConditions={"tolerationSeconds": 0}))

    assert result.returncode == 0, result.stderr
    assert warnings_of(result) == [
        f"{APPLICATION}.decisionConditions.tolerationSeconds: 0 fails over on the first unhealthy report"
    ]


def test_server_side_dry_run_shows_the_defaults_and_stores_nothing(control_plane: ControlPlane, namespace: str) -> None:
    result = apply(control_plane, good_policy("dry", namespace), "--dry-run=server", "-o", "json")

    assert result.returncode == 0, result.stderr
    answered = json.loads(result.stdout)["spec"]["failover"]["application"]
    assert answered["purgeMode"] == "Gracefully"
    assert answered["gracePeriodSeconds"] == 600
    assert answered["decisionConditions"]["tolerationSeconds"] == 300
    assert get(control_plane, "propagationpolicy", "dry", namespace) is None


def test_server_side_dry_run_of_a_broken_policy_is_denied(control_plane: ControlPlane, namespace: str) -> None:
    policy = good_policy("dry-bad", namespace, purgeMode="Directly", gracePeriodSeconds=30)

    result = apply(control_plane, policy, "--dry-run=server")

    assert f"{APPLICATION}.gracePeriodSeconds: only applies" in denial(result, VALIDATE_POLICIES)


def test_update_that_breaks_a_policy_is_denied_and_the_stored_policy_is_unchanged(
    control_plane: ControlPlane, namespace: str
) -> None:
    assert apply(control_plane, good_policy("evolving", namespace)).returncode == 0
    broken = good_policy("evolving", namespace, purgeMode="Never", gracePeriodSeconds=30)

    result = apply(control_plane, broken)

    assert f"{APPLICATION}.gracePeriodSeconds: only applies to purgeMode Gracefully, not Never" in denial(
        result, VALIDATE_POLICIES
    )
    assert (
        get(control_plane, "propagationpolicy", "evolving", namespace)["spec"]["failover"]["application"]["purgeMode"]
        == "Gracefully"
    )


def test_update_that_drops_a_defaulted_field_gets_it_back(control_plane: ControlPlane, namespace: str) -> None:
    policy = good_policy("resynced", namespace)
    assert apply(control_plane, policy).returncode == 0
    # A GitOps tool re-applies its own copy, which never had the defaults: a full replace without them.
    stored = get(control_plane, "propagationpolicy", "resynced", namespace)
    policy["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"]
    control_plane.kubectl("replace", "-f", "-", input=json.dumps(policy))

    application = get(control_plane, "propagationpolicy", "resynced", namespace)["spec"]["failover"]["application"]
    assert application["purgeMode"] == "Gracefully"
    assert application["gracePeriodSeconds"] == 600


def test_unknown_purge_mode_is_refused_by_the_crd_schema_before_the_webhook(
    control_plane: ControlPlane, namespace: str
) -> None:
    """The apiserver validates the schema (enum) after mutation and before validating webhooks, so this deny is
    the apiserver's own; it still names the field."""
    result = apply(control_plane, good_policy("eventually", namespace, purgeMode="Eventually"))

    assert result.returncode != 0
    assert f'{APPLICATION}.purgeMode: Unsupported value: "Eventually"' in result.stderr
    assert VALIDATE_POLICIES not in result.stderr


def test_kubernetes_client_sees_the_same_admission(control_plane: ControlPlane, namespace: str) -> None:
    api = client.CustomObjectsApi(config.new_client_from_config(config_file=str(control_plane.kubeconfig_path)))
    args = ("policy.karmada.io", "v1alpha1", namespace, "propagationpolicies")

    created = api.create_namespaced_custom_object(*args, good_policy("from-client", namespace))
    broken = good_policy("from-client-bad", namespace)
    broken["spec"]["propagateDeps"] = False
    with pytest.raises(ApiException) as refused:
        api.create_namespaced_custom_object(*args, broken)

    assert created["spec"]["failover"]["application"]["gracePeriodSeconds"] == 600
    assert refused.value.status == 403
    status = json.loads(refused.value.body)
    assert status["reason"] == "Forbidden"
    assert status["message"].startswith(
        f'admission webhook "{VALIDATE_POLICIES}" denied the request: spec.propagateDeps: must be true'
    )


def test_policies_in_kube_system_and_the_relays_namespace_are_not_sent_to_the_webhook(
    control_plane: ControlPlane,
) -> None:
    """The namespaceSelector: the relay must never be able to block the namespaces it runs from."""
    control_plane.kubectl("create", "namespace", "failover-relay", check=False)
    for namespace in ("kube-system", "failover-relay"):
        policy = good_policy("unreviewed", namespace)
        del policy["spec"]["propagateDeps"]

        result = apply(control_plane, policy)

        assert result.returncode == 0, result.stderr
        stored = get(control_plane, "propagationpolicy", "unreviewed", namespace)["spec"]["failover"]["application"]
        # Not defaulted either: the mutating webhook was skipped as well. (Karmada's CRD itself defaults purgeMode and
        # tolerationSeconds; gracePeriodSeconds comes only from a webhook, Karmada's or ours.)
        assert "gracePeriodSeconds" not in stored
