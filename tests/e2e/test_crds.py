"""The CRDs the envtest tier runs (Karmada's own, from its source tree; tests/crd_sources.py): the facts
failover-relay relies on, and what the apiserver makes of them."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.objects import JOB_ID, apply, flink_deployment, get
from tests.envtest import ControlPlane

# What failover-relay reads and writes (controllers/access/kube.py, webhook routing) besides Karmada's other CRDs.
EXPECTED = {
    "clusterpropagationpolicies.policy.karmada.io",
    "clusterresourcebindings.work.karmada.io",
    "clusters.cluster.karmada.io",
    "flinkdeployments.flink.apache.org",
    "propagationpolicies.policy.karmada.io",
    "resourcebindings.work.karmada.io",
    "workloadrebalancers.apps.karmada.io",
    "works.work.karmada.io",
}


def _load(path: Path) -> Any:
    # libyaml's loader: the CRDs are 1.5 MB of YAML, several seconds for the pure-Python one on a busy machine.
    return yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _crds(crd_sources: list[Path]) -> dict[str, dict[str, Any]]:
    """Every CRD document of the sources, by name (the Karmada kustomization's resources, then the files)."""
    return _parsed(tuple(crd_sources))


@functools.cache
def _parsed(crd_sources: tuple[Path, ...]) -> dict[str, dict[str, Any]]:
    documents: list[dict[str, Any]] = []
    for source in crd_sources:
        if source.is_dir():
            kustomization = _load(source / "kustomization.yaml")
            documents += [_load(source / resource) for resource in kustomization["resources"]]
        else:
            documents.append(_load(source))
    return {document["metadata"]["name"]: document for document in documents}


def _schema(crd: dict[str, Any], version: str) -> dict[str, Any]:
    [served] = [v for v in crd["spec"]["versions"] if v["name"] == version]
    return served["schema"]["openAPIV3Schema"]


def _without_descriptions(node: Any) -> Any:
    if isinstance(node, dict):
        return {key: _without_descriptions(value) for key, value in node.items() if key != "description"}
    if isinstance(node, list):
        return [_without_descriptions(item) for item in node]
    return node


def test_the_envtest_crds_hold_everything_the_relay_touches(crd_sources: list[Path]) -> None:
    assert EXPECTED <= set(_crds(crd_sources))


def test_cluster_propagation_policy_spec_is_the_propagation_policy_spec(crd_sources: list[Path]) -> None:
    """One rule set serves both kinds (failover/admission/policy.py): Karmada declares the same spec for both."""
    crds = _crds(crd_sources)
    namespaced = _schema(crds["propagationpolicies.policy.karmada.io"], "v1alpha1")["properties"]["spec"]
    cluster = _schema(crds["clusterpropagationpolicies.policy.karmada.io"], "v1alpha1")["properties"]["spec"]

    assert _without_descriptions(cluster) == _without_descriptions(namespaced)


def test_cluster_resource_binding_schema_is_the_resource_binding_schema(crd_sources: list[Path]) -> None:
    """One binding model serves both kinds (failover/core/binding.py), in Karmada's storage version v1alpha2."""
    crds = _crds(crd_sources)
    namespaced = _schema(crds["resourcebindings.work.karmada.io"], "v1alpha2")
    cluster = _schema(crds["clusterresourcebindings.work.karmada.io"], "v1alpha2")

    assert _without_descriptions(cluster) == _without_descriptions(namespaced)


def test_bindings_have_no_conversion_webhook_on_a_bare_apiserver(crd_sources: list[Path]) -> None:
    """Without karmada-webhook a conversion webhook would fail every read in the other version (crd_sources.py)."""
    crds = _crds(crd_sources)

    for name in ("resourcebindings.work.karmada.io", "clusterresourcebindings.work.karmada.io"):
        assert (crds[name]["spec"].get("conversion") or {}).get("strategy", "None") == "None"


@pytest.mark.envtest
def test_fields_the_savepoint_mutation_writes_survive_pruning(control_plane: ControlPlane, namespace: str) -> None:
    # No job-id label: the relay's savepoint mutation stays out of it, this is about the schema alone.
    deployment = flink_deployment(
        "restored",
        namespace,
        initialSavepointPath=f"s3://checkpoints/{namespace}/{JOB_ID}/checkpoints/chk-42",
        upgradeMode="savepoint",
        state="running",
        allowNonRestoredState=False,
    )

    assert apply(control_plane, deployment).returncode == 0

    assert get(control_plane, "flinkdeployment", "restored", namespace)["spec"]["job"] == deployment["spec"]["job"]


@pytest.mark.envtest
def test_unknown_job_fields_are_pruned(control_plane: ControlPlane, namespace: str) -> None:
    """spec.job is closed: a misspelled field is refused by strict validation and dropped otherwise, as a misspelled
    patch from our webhook would be, so the savepoint tests see exactly what Flink's operator would see."""
    deployment = flink_deployment("typo", namespace, initialSavepointPth="s3://somewhere")

    strict = apply(control_plane, deployment)
    lenient = apply(control_plane, deployment, "--validate=false")

    assert strict.returncode != 0 and 'unknown field "spec.job.initialSavepointPth"' in strict.stderr
    assert lenient.returncode == 0, lenient.stderr
    assert "initialSavepointPth" not in get(control_plane, "flinkdeployment", "typo", namespace)["spec"]["job"]


@pytest.mark.envtest
def test_flink_job_status_is_written_through_the_status_subresource(
    control_plane: ControlPlane, namespace: str
) -> None:
    deployment = flink_deployment("running", namespace)
    deployment["status"] = {"jobStatus": {"jobId": "ignored-on-create"}}
    assert apply(control_plane, deployment).returncode == 0
    assert "status" not in get(control_plane, "flinkdeployment", "running", namespace)

    control_plane.kubectl(
        "patch",
        "flinkdeployment",
        "running",
        "-n",
        namespace,
        "--subresource=status",
        "--type=merge",
        "-p",
        f'{{"status": {{"jobStatus": {{"jobId": "{JOB_ID}", "state": "RUNNING"}}}}}}',
    )

    assert get(control_plane, "flinkdeployment", "running", namespace)["status"]["jobStatus"] == {
        "jobId": JOB_ID,
        "state": "RUNNING",
    }


@pytest.mark.envtest
def test_every_crd_is_established_and_structural(control_plane: ControlPlane, crd_sources: list[Path]) -> None:
    names = set(_crds(crd_sources))
    stored = json.loads(control_plane.kubectl("get", "customresourcedefinitions", "-o", "json").stdout)["items"]
    conditions = {
        crd["metadata"]["name"]: {c["type"]: c["status"] for c in crd["status"]["conditions"]}
        for crd in stored
        if crd["metadata"]["name"] in names
    }

    assert set(conditions) == names
    for name, condition in conditions.items():
        assert condition.get("Established") == "True", name
        assert condition.get("NonStructuralSchema", "False") == "False", name
