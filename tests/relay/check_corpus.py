"""The corpus of `check` against Karmada v1.19: objects, each with what Karmada answers to `kubectl apply` (its CRD
schema, then its webhook, from pkg/util/validation/validation.go and pkg/webhook/propagationpolicy/) with the relay
installed. tests/relay/test_check_karmada.py holds `check` to it offline, tests/karmada/test_check_agreement.py
holds it to the real Karmada."""

from __future__ import annotations

from typing import Any

from tests.policies import flink_policy


def policy(**changes: Any) -> dict[str, Any]:
    """The documented Flink policy with `changes` ({"spec.a.b": value}, None deletes)."""
    obj = flink_policy()
    for path, value in changes.items():
        *parents, last = path.split(".")
        node = obj
        for key in parents:
            node = node.setdefault(key, {})
        if value is None:
            node.pop(last, None)
        else:
            node[last] = value
    return obj


def rebalancer(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps.karmada.io/v1alpha1",
        "kind": "WorkloadRebalancer",
        "metadata": {"name": "demo"},
        "spec": spec
        or {"workloads": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": "shop"}]},
    }


APP = "spec.failover.application"
SERVICE_IMPORT = {"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ServiceImport", "name": "web"}

# (id, object, status, fragment of the line): the corpus. "denied" and "unknown" are what Karmada refuses.
CORPUS: list[tuple[str, dict[str, Any], str, str]] = [
    ("documented-flink-policy", policy(), "allowed", ""),
    # Legacy purge-mode names: removed from the v1.19 enum (karmada#7792).
    (
        "legacy-graciously",
        policy(**{f"{APP}.purgeMode": "Graciously", f"{APP}.statePreservation": None}),
        "denied",
        'purgeMode: Unsupported value: "Graciously": supported values: "Directly", "Gracefully", "Never"; '
        "write Gracefully",
    ),
    ("legacy-immediately", policy(**{f"{APP}.purgeMode": "Immediately"}), "denied", "write Directly"),
    (
        "legacy-cluster-section",
        policy(**{"spec.failover.cluster": {"purgeMode": "Immediately"}}),
        "denied",
        'spec.failover.cluster.purgeMode: Unsupported value: "Immediately": supported values: "Directly", "Gracefully"',
    ),
    # Unknown fields: strict decoding.
    (
        "wrong-case-field",
        policy(**{f"{APP}.purgemode": "Directly"}),
        "denied",
        "spec.failover.application.purgemode: unknown field",
    ),
    ("unknown-top-level-field", {**policy(), "specs": {}}, "denied", "specs: unknown field"),
    ("unknown-metadata-field", policy(**{"metadata.labelz": {"a": "b"}}), "denied", "did you mean 'labels'"),
    (
        "unknown-selector-field",
        policy(**{"spec.resourceSelectors": [{**flink_policy()["spec"]["resourceSelectors"][0], "names": ["x"]}]}),
        "denied",
        "spec.resourceSelectors[0].names: unknown field",
    ),
    # Wrong group or version: no such kind (exit 2, "unknown").
    (
        "policy-v1beta1",
        {**policy(), "apiVersion": "policy.karmada.io/v1beta1"},
        "unknown",
        "serve PropagationPolicy in policy.karmada.io as v1alpha1 only",
    ),
    (
        "rebalancer-under-policy-group",
        {**rebalancer(), "apiVersion": "policy.karmada.io/v1alpha1"},
        "unknown",
        "no kind WorkloadRebalancer in policy.karmada.io; WorkloadRebalancer is apps.karmada.io/v1alpha1",
    ),
    # Outside failover: Karmada's webhook and schema.
    (
        "selector-namespace-differs",
        policy(**{"spec.resourceSelectors": [{**SERVICE_IMPORT, "namespace": "other"}]}),
        "denied",
        "namespace of resource selector must be the same as the namespace of the policy",
    ),
    (
        "resource-selectors-missing",
        policy(**{"spec.resourceSelectors": None}),
        "denied",
        "spec.resourceSelectors: Required value",
    ),
    ("resource-selectors-empty", policy(**{"spec.resourceSelectors": []}), "denied", "should have at least 1 items"),
    (
        "spread-max-below-min",
        policy(**{"spec.placement.spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 1, "minGroups": 2}]}),
        "denied",
        "maxGroups lower than minGroups is not allowed",
    ),
    (
        "spread-region-without-cluster",
        policy(**{"spec.placement.spreadConstraints": [{"spreadByField": "region", "maxGroups": 1}]}),
        "denied",
        "the cluster spread constraint must be enabled",
    ),
    (
        "affinity-and-affinities",
        policy(**{"spec.placement.clusterAffinities": [{"affinityName": "a", "clusterNames": ["member1"]}]}),
        "denied",
        "clusterAffinities cannot co-exist with clusterAffinity",
    ),
    (
        "field-selector-bad-key",
        policy(
            **{
                "spec.placement.clusterAffinity": {
                    "fieldSelector": {"matchExpressions": [{"key": "color", "operator": "In", "values": ["x"]}]}
                }
            }
        ),
        "denied",
        "must be provider, region, or zone",
    ),
    (
        "preemption-always-without-name",
        policy(
            **{
                "spec.preemption": "Always",
                "spec.resourceSelectors": [{"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment"}],
            }
        ),
        "denied",
        "name cannot be empty if preemption is Always",
    ),
    (
        "bad-enum-outside-failover",
        policy(**{"spec.conflictResolution": "Override"}),
        "denied",
        'spec.conflictResolution: Unsupported value: "Override"',
    ),
    # Required by the v1.19 schema; the relay's /mutate (always called: failurePolicy Fail) adds it.
    ("decision-conditions-missing-filled-by-the-relay", policy(**{f"{APP}.decisionConditions": None}), "allowed", ""),
    (
        "wrong-type",
        policy(**{f"{APP}.decisionConditions.tolerationSeconds": "60"}),
        "denied",
        "must be of type integer",
    ),
    ("int32-overflow", policy(**{f"{APP}.decisionConditions.tolerationSeconds": 2**31}), "denied", "int32"),
    ("name-missing", policy(**{"metadata.name": None}), "denied", "name or generateName is required"),
    ("bad-label-value", policy(**{"metadata.labels": {"team": "a b"}}), "denied", "metadata.labels"),
    # JSONPath forms client-go's parser accepts: allowed (a warning where the value may not be one label value).
    (
        "jsonpath-literal",
        policy(
            **{
                f"{APP}.statePreservation": {
                    "rules": [
                        {
                            "aliasLabelName": "application.karmada.io/failover-jobid",
                            "jsonPath": '{"job-"}{.jobStatus.jobId}',
                        }
                    ]
                }
            }
        ),
        "allowed",
        "",
    ),
    (
        "jsonpath-plain-text-karmada-5788",
        policy(**{f"{APP}.statePreservation": {"rules": [{"aliasLabelName": "failover", "jsonPath": "true"}]}}),
        "warning",
        "always the same literal text",
    ),
    (
        "jsonpath-range",
        policy(
            **{
                f"{APP}.statePreservation": {
                    "rules": [{"aliasLabelName": "ids", "jsonPath": "{range .jobs[*]}{.id}{end}"}]
                }
            }
        ),
        "warning",
        "range loop",
    ),
    (
        "jsonpath-double-quoted-key",
        policy(
            **{f"{APP}.statePreservation": {"rules": [{"aliasLabelName": "id", "jsonPath": '{.jobStatus["jobId"]}'}]}}
        ),
        "denied",
        "invalid array index",
    ),
    # jsonPath is required by the v1.19 CRD (StatePreservationRule, `required: [aliasLabelName, jsonPath]`), but a
    # missing one never reaches the schema: Karmada's mutating webhook answers with a patch from the policy it
    # marshals again, and the field has no `omitempty`, so it is stored as "" (karmada_admission._zero_rule_fields).
    # An empty one satisfies `required`; Karmada's webhook checks only aliasLabelName (validateStatePreservationRule),
    # the relay warns. Measured against real Karmada v1.19 (tests/karmada/test_check_agreement.py).
    (
        "jsonpath-missing",
        policy(
            **{f"{APP}.statePreservation": {"rules": [{"aliasLabelName": "application.karmada.io/failover-jobid"}]}}
        ),
        "warning",
        "always the same literal text",
    ),
    (
        "jsonpath-empty",
        policy(
            **{
                f"{APP}.statePreservation": {
                    "rules": [{"aliasLabelName": "application.karmada.io/failover-jobid", "jsonPath": ""}]
                }
            }
        ),
        "warning",
        "always the same literal text",
    ),
    # YAML numbers: kubectl sends 1e3 as 1000.
    ("toleration-1e3", policy(**{f"{APP}.decisionConditions.tolerationSeconds": 1000.0}), "allowed", ""),
    # Karmada's mutating webhook sets propagateDeps for a ServiceImport.
    (
        "service-import-sets-propagate-deps",
        policy(
            **{
                "spec.propagateDeps": None,
                "spec.resourceSelectors": [SERVICE_IMPORT],
                f"{APP}.statePreservation": None,
                f"{APP}.purgeMode": "Never",
            }
        ),
        "allowed",
        "",
    ),
    (
        "application-without-propagate-deps",
        policy(**{"spec.propagateDeps": None}),
        "denied",
        "application failover is set, propagateDeps must be true",
    ),
    # failover.cluster defaults: purgeMode Gracefully (the CRD), so statePreservation there needs Directly.
    (
        "cluster-section-default-purge-mode",
        policy(
            **{
                "spec.failover.cluster": {
                    "statePreservation": {"rules": [{"aliasLabelName": "id", "jsonPath": "{.jobStatus.jobId}"}]}
                }
            }
        ),
        "denied",
        "spec.failover.cluster.statePreservation: needs purgeMode Directly, but it is Gracefully",
    ),
    (
        "grace-period-with-directly",
        policy(**{f"{APP}.gracePeriodSeconds": 30}),
        "denied",
        "only takes effect when purgeMode is gracefully",
    ),
    (
        "cluster-propagation-policy",
        {**policy(), "kind": "ClusterPropagationPolicy", "metadata": {"name": "flink-cpp"}},
        "allowed",
        "",
    ),
    ("rebalancer", rebalancer(), "allowed", ""),
    (
        "rebalancer-unknown-field",
        rebalancer(
            workloads=[{"apiVersion": "apps/v1", "kind": "Deployment", "name": "w", "namespace": "shop", "replicas": 2}]
        ),
        "denied",
        "spec.workloads[0].replicas: unknown field",
    ),
    ("rebalancer-no-workloads", rebalancer(workloads=[]), "denied", "should have at least 1 items"),
    (
        "other-karmada-kind-schema-checked",
        {
            "apiVersion": "policy.karmada.io/v1alpha1",
            "kind": "OverridePolicy",
            "metadata": {"name": "o", "namespace": "default"},
            "spec": {"overrideRules": "x"},
        },
        "denied",
        "must be of type array",
    ),
    # From Karmada's own unit tests of ValidatePropagationSpec (pkg/util/validation/validation_test.go).
    (
        "karmada-unit-spread-label-and-field",
        policy(
            **{
                "spec.placement.spreadConstraints": [
                    {"spreadByField": "cluster", "spreadByLabel": "zone", "maxGroups": 1}
                ]
            }
        ),
        "denied",
        "spreadByLabel should not co-exist with spreadByField",
    ),
    (
        "karmada-unit-max-groups-negative",
        policy(**{"spec.placement.spreadConstraints": [{"spreadByField": "cluster", "maxGroups": -1}]}),
        "denied",
        "maxGroups lower than 0 is not allowed",
    ),
    (
        "karmada-unit-min-groups-negative",
        policy(**{"spec.placement.spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 1, "minGroups": -1}]}),
        "denied",
        "minGroups lower than 0 is not allowed",
    ),
    (
        "karmada-unit-two-cluster-constraints",
        policy(
            **{
                "spec.placement.spreadConstraints": [
                    {"spreadByField": "cluster", "maxGroups": 1},
                    {"spreadByField": "cluster", "maxGroups": 2},
                ]
            }
        ),
        "denied",
        "multiple cluster spread constraints are not allowed",
    ),
    (
        "karmada-unit-two-region-constraints",
        policy(
            **{
                "spec.placement.spreadConstraints": [
                    {"spreadByField": "cluster", "maxGroups": 1},
                    {"spreadByField": "region", "maxGroups": 1},
                    {"spreadByField": "region", "maxGroups": 2},
                ]
            }
        ),
        "denied",
        "multiple region spread constraints are not allowed",
    ),
    (
        "karmada-unit-duplicate-affinity-names",
        policy(
            **{
                "spec.placement.clusterAffinity": None,
                "spec.placement.clusterAffinities": [
                    {"affinityName": "group1", "clusterNames": ["member1"]},
                    {"affinityName": "group1", "clusterNames": ["member2"]},
                ],
            }
        ),
        "denied",
        "each affinity term in a policy must have a unique name",
    ),
    (
        "karmada-unit-field-selector-operator",
        policy(
            **{
                "spec.placement.clusterAffinity": {
                    "fieldSelector": {"matchExpressions": [{"key": "region", "operator": "Exists"}]}
                }
            }
        ),
        "denied",
        'unsupported operator "Exists", must be In or NotIn',
    ),
    (
        "karmada-unit-suspension-conflict",
        policy(**{"spec.suspension": {"dispatching": True, "dispatchingOnClusters": {"clusterNames": ["member1"]}}}),
        "denied",
        "suspension dispatching cannot co-exist with dispatchingOnClusters.clusterNames",
    ),
    ("karmada-unit-suspension-dispatching-alone", policy(**{"spec.suspension": {"dispatching": True}}), "allowed", ""),
    (
        "karmada-unit-dispatching-on-clusters-alone",
        policy(**{"spec.suspension": {"dispatchingOnClusters": {"clusterNames": ["member1"]}}}),
        "allowed",
        "",
    ),
    (
        "karmada-unit-toleration-lt",
        policy(
            **{
                "spec.placement.clusterTolerations": [
                    {"key": "k", "operator": "Lt", "value": "1", "effect": "NoSchedule"}
                ]
            }
        ),
        "denied",
        "Unsupported value",
    ),
    (
        "karmada-unit-toleration-exists",
        policy(**{"spec.placement.clusterTolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}]}),
        "allowed",
        "",
    ),
    (
        "non-karmada-kind-skipped",
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w"}},
        "skipped",
        "not a kind failover-relay checks",
    ),
]
