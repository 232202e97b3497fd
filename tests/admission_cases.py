"""Objects for holding the two admission paths equal (the relay's webhook, the rendered CEL policies): the project's
admission cases, docs/examples, and policies generated field by field from a fixed seed, so every run sends the same.

The cases of the project's admission tests that are objects in a table are included. The generator draws each
failover and placement field from the values its rules tell apart (every purge mode, negative, zero and positive
numbers, label keys that are valid, duplicated, too long or hostile, placements of one, two or three clusters by every
way Karmada bounds them), and keeps to what Karmada's CRD schema accepts, so most objects reach admission.
"""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.test_policy_admission import _deny_cases as policy_deny_cases
from tests.hostile_strings import HOSTILE_STRINGS
from tests.policies import flink_policy
from tests.relay.check_corpus import CORPUS

REPO_ROOT = Path(__file__).resolve().parent.parent
SEED = 41
GENERATED = 160

JOB_ID_RULE = {"aliasLabelName": "application.karmada.io/failover-jobid", "jsonPath": "{ .jobStatus.jobId }"}
SELECTORS = (
    {"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment", "name": "job"},
    {"apiVersion": "batch/v1", "kind": "Job", "name": "batch"},
    {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
    {"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkSessionJob", "name": "session-job"},
    {"apiVersion": "v1", "kind": "Service", "name": "web"},
)
ALIASES = (
    "application.karmada.io/failover-jobid",
    "failover-jobid",
    "example.com/state",
    "Example.com/state",
    "/name",
    "prefix/",
    "a/b/c",
    "x" * 64,
    "p" * 254 + "/name",
    "not a label!",
    "-leading",
    *HOSTILE_STRINGS[:24],
)
JSON_PATHS = ("{ .jobStatus.jobId }", "{ .jobStatus.jobID }", "{ .jobStatus }", "{ .jobStatus.jobId", "plain text")
PLACEMENTS: tuple[dict[str, Any], ...] = (
    {},
    {"clusterAffinity": {"clusterNames": ["member1"]}},
    {"clusterAffinity": {"clusterNames": ["member1", "member2"]}},
    {"clusterAffinity": {"clusterNames": ["member1", "member2", "member3"]}},
    {"clusterAffinity": {"clusterNames": ["member1", "member2"], "exclude": ["member2"]}},
    {
        "clusterAffinity": {
            "clusterNames": ["member1", "member2", "member3"],
            "labelSelector": {"matchLabels": {"a": "b"}},
        }
    },
    {"clusterAffinity": {"labelSelector": {"matchLabels": {}}}},
    {
        "clusterAffinities": [
            {"affinityName": "primary", "clusterNames": ["member1"]},
            {"affinityName": "backup", "clusterNames": ["member2"]},
        ]
    },
    {
        "clusterAffinities": [
            {
                "affinityName": "primary",
                "clusterNames": ["member1"],
                "overflowAffinities": [{"affinityName": "overflow", "clusterNames": ["member3"]}],
            }
        ]
    },
    {"clusterAffinities": [{"affinityName": "only", "clusterNames": ["member2"]}]},
)
SPREADS: tuple[list[dict[str, Any]] | None, ...] = (
    None,
    [{"spreadByField": "cluster", "maxGroups": 1, "minGroups": 1}],
    [{"spreadByField": "cluster", "maxGroups": 2, "minGroups": 1}],
    [{"spreadByField": "region", "minGroups": 2}, {"spreadByField": "cluster", "maxGroups": 1}],
    [{"spreadByLabel": "zone", "maxGroups": 1}],
)
TOLERATIONS: tuple[list[dict[str, Any]] | None, ...] = (
    None,
    [{"operator": "Exists", "effect": "NoExecute"}],
    [{"operator": "Exists"}],
    [{"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}],
    [{"key": "cluster.karmada.io/not-ready", "operator": "Exists", "effect": "NoExecute"}],
)


def _maybe(rng: random.Random, *choices: Any) -> Any:
    return rng.choice(choices)


def _rules(rng: random.Random) -> list[dict[str, str]]:
    count = _maybe(rng, 0, 1, 1, 2, 3)
    rules = []
    for _ in range(count):
        alias = JOB_ID_RULE["aliasLabelName"] if rng.random() < 0.4 else rng.choice(ALIASES)
        rules.append({"aliasLabelName": alias, "jsonPath": rng.choice(JSON_PATHS)})
    return rules


def _section(rng: random.Random, purge_modes: tuple[str | None, ...], application: bool) -> dict[str, Any]:
    section: dict[str, Any] = {}
    if application and rng.random() < 0.85:
        toleration = _maybe(rng, None, -5, 0, 60)
        section["decisionConditions"] = {} if toleration is None else {"tolerationSeconds": toleration}
    mode = rng.choice(purge_modes)
    if mode is not None:
        section["purgeMode"] = mode
    if application and rng.random() < 0.3:
        section["gracePeriodSeconds"] = _maybe(rng, -1, 0, 30)
    if rng.random() < 0.7:
        section["statePreservation"] = {"rules": _rules(rng)}
    return section


def generated_policy(rng: random.Random, index: int) -> dict[str, Any]:
    policy = flink_policy()
    policy["metadata"] = {"name": f"generated-{index}", "namespace": "default"}
    if rng.random() < 0.25:
        policy["kind"] = "ClusterPropagationPolicy"
        del policy["metadata"]["namespace"]
    if rng.random() < 0.2:
        policy["metadata"]["annotations"] = {"failover-relay.io/failback": "true"}
    spec = policy["spec"]
    deps = _maybe(rng, True, True, False, None)
    if deps is None:
        del spec["propagateDeps"]
    else:
        spec["propagateDeps"] = deps
    spec["resourceSelectors"] = copy.deepcopy(rng.sample(SELECTORS, rng.randint(1, 3)))
    placement = copy.deepcopy(rng.choice(PLACEMENTS))
    spread, tolerations = rng.choice(SPREADS), rng.choice(TOLERATIONS)
    if spread is not None:
        placement["spreadConstraints"] = copy.deepcopy(spread)
    if tolerations is not None:
        placement["clusterTolerations"] = copy.deepcopy(tolerations)
    if rng.random() < 0.1:
        placement["replicaScheduling"] = {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"}
    spec["placement"] = placement
    failover: dict[str, Any] = {}
    if rng.random() < 0.85:
        failover["application"] = _section(
            rng, (None, "Directly", "Directly", "Gracefully", "Never", "Immediately", "Graciously"), application=True
        )
    if rng.random() < 0.4:
        failover["cluster"] = _section(rng, (None, "Directly", "Gracefully", "Immediately"), application=False)
    spec["failover"] = failover
    return policy


def generated_rebalancer(rng: random.Random, index: int) -> dict[str, Any]:
    names = ("web", "web", "db", "")
    workloads = [
        {
            "apiVersion": _maybe(rng, "apps/v1", "apps/v1", ""),
            "kind": _maybe(rng, "Deployment", "Deployment", "StatefulSet", ""),
            "name": rng.choice(names),
            **({"namespace": _maybe(rng, "shop", "")} if rng.random() < 0.7 else {}),
        }
        for _ in range(rng.randint(1, 4))
    ]
    spec: dict[str, Any] = {"workloads": workloads}
    if rng.random() < 0.4:
        spec["ttlSecondsAfterFinished"] = _maybe(rng, -3, 0, 60)
    return {
        "apiVersion": "apps.karmada.io/v1alpha1",
        "kind": "WorkloadRebalancer",
        "metadata": {"name": f"generated-rebalancer-{index}"},
        "spec": spec,
    }


def most_warnings() -> dict[str, Any]:
    """A policy with as many warnings CEL gives as one policy can have (7: the multi-cluster and the single-cluster
    warnings exclude each other): zero toleration, both sections on several clusters, three kinds without health
    interpretation, tolerations of every NoExecute taint."""
    policy = flink_policy(decisionConditions={"tolerationSeconds": 0})
    spec = policy["spec"]
    spec["resourceSelectors"] = copy.deepcopy(list(SELECTORS[:4]))
    spec["placement"] = {
        "clusterAffinity": {"clusterNames": ["member1", "member2"]},
        "clusterTolerations": [{"operator": "Exists", "effect": "NoExecute"}],
    }
    spec["resourceSelectors"].append(
        {"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkBlueGreenDeployment", "name": "bg"}
    )
    spec["failover"]["cluster"] = {"purgeMode": "Directly", "statePreservation": {"rules": [JOB_ID_RULE]}}
    return policy


def documented_examples() -> list[tuple[str, dict[str, Any]]]:
    """The policies and rebalancers of docs/examples."""
    found = []
    for path in sorted((REPO_ROOT / "docs" / "examples").glob("*.yaml")):
        for index, document in enumerate(yaml.safe_load_all(path.read_text())):
            if isinstance(document, dict) and document.get("kind") in (
                "PropagationPolicy",
                "ClusterPropagationPolicy",
                "WorkloadRebalancer",
            ):
                found.append((f"docs/examples/{path.name}#{index}", document))
    return found


def admission_cases() -> list[tuple[str, dict[str, Any]]]:
    """(id, object): docs/examples, the `check` corpus, the envtest tier's denials (tests/e2e/test_policy_admission.py),
    and the generated policies and rebalancers."""
    rng = random.Random(SEED)
    cases = documented_examples()
    cases += [(f"corpus/{ident}", copy.deepcopy(obj)) for ident, obj, _, _ in CORPUS]
    cases += [(f"policy-admission/{case.id}", copy.deepcopy(case.values[0])) for case in policy_deny_cases()]
    cases.append(("most-warnings", most_warnings()))
    cases += [(f"generated/{i}", generated_policy(rng, i)) for i in range(GENERATED)]
    cases += [(f"generated-rebalancer/{i}", generated_rebalancer(rng, i)) for i in range(GENERATED // 4)]
    return cases
