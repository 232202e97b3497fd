"""`check` against Karmada v1.19's own CRDs and webhook rules: a corpus of what Karmada refuses, accepts and defaults.

Each case is what Karmada v1.19 answers to `kubectl apply` (its CRD schema, then its webhook, from
pkg/util/validation/validation.go and pkg/webhook/propagationpolicy/), with the relay installed; `check` must give
the same verdict. The bundled schemas must be exactly what Karmada's source generates.
"""

from __future__ import annotations

import copy
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relay.commands.check.manifest_check import EXIT_DENIED, EXIT_OK, EXIT_UNREADABLE, check_object, run_check
from relay.commands.check.schemas import BUNDLED, bundled, crd_summary, from_directory, read_crds
from tests.policies import flink_policy
from tests.relay.karmada_source import REPO_ROOT, karmada_crd_dir

SCHEMAS = bundled()


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


@pytest.mark.parametrize(("obj", "status", "fragment"), [pytest.param(o, s, f, id=i) for i, o, s, f in CORPUS])
def test_check_gives_karmadas_verdict(obj: dict[str, Any], status: str, fragment: str) -> None:
    result = check_object(copy.deepcopy(obj), SCHEMAS)

    assert result.status == status, result.line
    assert fragment in result.line


def test_the_bundled_schemas_are_karmadas_crds() -> None:
    generated = crd_summary(read_crds(karmada_crd_dir()))

    bundled_file = REPO_ROOT / "relay" / "commands" / "check" / BUNDLED
    assert json.loads(bundled_file.read_text()) == generated, (
        "regenerate: python -m relay.commands.check.schemas DIR > relay/commands/check/" + BUNDLED
    )


@pytest.mark.parametrize(("obj", "status", "fragment"), [pytest.param(o, s, f, id=i) for i, o, s, f in CORPUS])
def test_a_crd_directory_gives_the_same_verdicts(obj: dict[str, Any], status: str, fragment: str) -> None:
    schemas = _source_schemas()

    assert check_object(copy.deepcopy(obj), schemas).status == status


_SOURCE_SCHEMAS: list[Any] = []


def _source_schemas() -> Any:
    if not _SOURCE_SCHEMAS:
        _SOURCE_SCHEMAS.append(from_directory(karmada_crd_dir()))
    return _SOURCE_SCHEMAS[0]


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "relay.cli", *args], capture_output=True, text=True, timeout=120, cwd=cwd or REPO_ROOT
    )


def test_an_unknown_version_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump({**policy(), "apiVersion": "policy.karmada.io/v1beta1"}))
    out, err = io.StringIO(), io.StringIO()

    assert run_check([path], out, err) == EXIT_UNREADABLE
    assert "error: policy.karmada.io/v1beta1 PropagationPolicy" in out.getvalue()


def test_deep_nesting_exits_2_with_one_line_not_a_recursion_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text("a: " + "[" * 50_000 + "]" * 50_000 + "\n")

    result = cli("check", str(path))

    assert result.returncode == EXIT_UNREADABLE
    assert result.stderr.strip() == f"{path}: error: a document nests deeper than 100 levels"


def test_alias_expansion_is_bounded(tmp_path: Path) -> None:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"] + [
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]" for i in range(6)
    ]
    path = tmp_path / "laughs.yaml"
    path.write_text("\n".join(lines) + "\n")

    result = cli("check", str(path))

    assert result.returncode == EXIT_UNREADABLE
    assert "expands to more than" in result.stderr


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda tmp: tmp / "missing", "not a directory"),
        (lambda tmp: tmp, "holds no CustomResourceDefinition"),
    ],
)
def test_an_unusable_crd_source_exits_2_with_one_line(tmp_path: Path, make: Any, message: str) -> None:
    policy_file = tmp_path / "p.yaml"
    policy_file.write_text(yaml.safe_dump(policy()))

    result = cli("check", "--crds", str(make(tmp_path)), str(policy_file))

    assert result.returncode == EXIT_UNREADABLE
    assert len(result.stderr.strip().splitlines()) == 1 and message in result.stderr


def test_a_cluster_that_does_not_answer_exits_2_with_one_line(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [
                    {"name": "c", "cluster": {"server": "https://127.0.0.1:1", "insecure-skip-tls-verify": True}}
                ],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
            }
        )
    )
    policy_file = tmp_path / "p.yaml"
    policy_file.write_text(yaml.safe_dump(policy()))

    result = cli("check", "--server", "--kubeconfig", str(kubeconfig), str(policy_file))

    assert result.returncode == EXIT_UNREADABLE
    assert result.stderr == "failover-relay: cannot reach https://127.0.0.1:1: connection refused\n"
    assert "Traceback" not in result.stderr


def test_1e3_in_yaml_is_the_number_kubectl_sends(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(policy()).replace("tolerationSeconds: 60", "tolerationSeconds: 1e3"))
    out, err = io.StringIO(), io.StringIO()

    assert run_check([path], out, err) == EXIT_OK, out.getvalue()


def test_rules_only_says_so(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(policy(**{f"{APP}.purgemode": "Directly"})))

    result = cli("check", "--rules-only", str(path))

    assert result.returncode == EXIT_OK  # the unknown field is invisible to the failover rules alone
    assert "checked the failover rules only" in result.stderr


def test_the_documented_examples_pass_their_tests() -> None:
    result = cli("test", "docs/examples")

    assert result.returncode == EXIT_OK, result.stdout + result.stderr
    assert result.stdout.strip().splitlines()[-1] == "6/6 passed"


def test_a_failed_expectation_exits_1_and_says_what_differs(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(policy(**{f"{APP}.purgeMode": "Never"})))
    (tmp_path / "failover-relay-test.yaml").write_text(
        yaml.safe_dump(
            {
                "resources": ["p.yaml"],
                "results": [{"kind": "PropagationPolicy", "name": "flink-pp", "verdict": "allowed", "patch": []}],
            }
        )
    )

    result = cli("test", str(tmp_path))

    assert result.returncode == EXIT_DENIED
    assert result.stdout.startswith("FAIL PropagationPolicy flink-pp: expected allowed, got denied: ")


@pytest.mark.parametrize(
    "test_file",
    [
        "resources: [p.yaml]\n",
        "resources: [../outside.yaml]\nresults: [{kind: PropagationPolicy, name: x, verdict: allowed}]\n",
        "resources: [p.yaml]\nresults: [{kind: PropagationPolicy, name: x, verdict: maybe}]\n",
        "a: [\n",
    ],
)
def test_an_unusable_test_file_exits_2(tmp_path: Path, test_file: str) -> None:
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(policy()))
    (tmp_path / "failover-relay-test.yaml").write_text(test_file)

    result = cli("test", str(tmp_path))

    assert result.returncode == EXIT_UNREADABLE
    assert "error:" in result.stderr and "Traceback" not in result.stderr


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**40), max_value=2**40)
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=8,
)
PATHS = st.sampled_from(
    [
        "spec",
        "spec.failover",
        f"{APP}",
        f"{APP}.purgeMode",
        f"{APP}.decisionConditions",
        f"{APP}.statePreservation",
        f"{APP}.statePreservation.rules",
        "spec.placement",
        "spec.placement.spreadConstraints",
        "spec.resourceSelectors",
        "spec.propagateDeps",
        "metadata",
        "metadata.labels",
        "metadata.namespace",
        "spec.failover.cluster",
        "spec.placement.clusterAffinities",
        "spec.suspension",
        "spec.placement.replicaScheduling",
    ]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(PATHS, JSON_VALUES), min_size=1, max_size=3),
    st.sampled_from(["PropagationPolicy", "ClusterPropagationPolicy"]),
)
def test_any_object_gets_a_verdict_never_an_exception(changes: list[tuple[str, Any]], kind: str) -> None:
    obj = {**policy(), "kind": kind}
    for path, value in changes:
        *parents, last = path.split(".")
        node: Any = obj
        for key in parents:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node[last] = value

    result = check_object(obj, SCHEMAS)

    assert result.status in ("allowed", "warning", "denied", "unknown")
