"""The CRDs of manifests/crds: consistent with each other and with Karmada, and structural in the apiserver."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.objects import JOB_ID, apply, flink_deployment, get
from tests.envtest import REPO_ROOT, ControlPlane

CRD_DIR = REPO_ROOT / "manifests" / "crds"
# Karmada declares a status subresource on these (PropagationPolicies have no status at all).
WITH_STATUS_SUBRESOURCE = {
    "clusterresourcebindings.work.karmada.io",
    "clusters.cluster.karmada.io",
    "flinkdeployments.flink.apache.org",
    "resourcebindings.work.karmada.io",
    "workloadrebalancers.apps.karmada.io",
    "works.work.karmada.io",
}


def _crd(name: str) -> dict[str, Any]:
    return yaml.safe_load((CRD_DIR / f"{name}.yaml").read_text())


def _schema(name: str) -> dict[str, Any]:
    return _crd(name)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def _without_descriptions(node: Any) -> Any:
    if isinstance(node, dict):
        return {key: _without_descriptions(value) for key, value in node.items() if key != "description"}
    if isinstance(node, list):
        return [_without_descriptions(item) for item in node]
    return node


def test_kustomization_lists_every_crd_file() -> None:
    kustomization = yaml.safe_load((CRD_DIR / "kustomization.yaml").read_text())
    files = sorted(path.name for path in CRD_DIR.glob("*.yaml") if path.name != "kustomization.yaml")

    assert sorted(kustomization["resources"]) == files


def test_each_file_is_named_after_its_crd() -> None:
    for path in CRD_DIR.glob("*.yaml"):
        if path.name != "kustomization.yaml":
            crd = yaml.safe_load(path.read_text())
            assert f"{crd['metadata']['name']}.yaml" == path.name
            assert crd["metadata"]["name"] == f"{crd['spec']['names']['plural']}.{crd['spec']['group']}"


def test_cluster_propagation_policy_spec_is_the_propagation_policy_spec() -> None:
    namespaced = _schema("propagationpolicies.policy.karmada.io")["properties"]["spec"]
    cluster = _schema("clusterpropagationpolicies.policy.karmada.io")["properties"]["spec"]

    assert _without_descriptions(cluster) == _without_descriptions(namespaced)


def test_cluster_resource_binding_schema_is_the_resource_binding_schema() -> None:
    namespaced = _schema("resourcebindings.work.karmada.io")
    cluster = _schema("clusterresourcebindings.work.karmada.io")

    assert _without_descriptions(cluster) == _without_descriptions(namespaced)


def test_status_subresources_are_where_karmada_has_them() -> None:
    declared = {
        path.stem for path in CRD_DIR.glob("*.yaml")
        if path.name != "kustomization.yaml"
        and "status" in (_crd(path.stem)["spec"]["versions"][0].get("subresources") or {})
    }

    assert declared == WITH_STATUS_SUBRESOURCE


@pytest.mark.envtest
def test_fields_the_savepoint_mutation_writes_survive_pruning(control_plane: ControlPlane, namespace: str) -> None:
    # No job-id label: the relay's savepoint mutation stays out of it, this is about the schema alone.
    deployment = flink_deployment("restored", namespace,
                                  initialSavepointPath=f"s3://checkpoints/{namespace}/{JOB_ID}/checkpoints/chk-42",
                                  upgradeMode="savepoint", state="running", allowNonRestoredState=False)

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

    control_plane.kubectl("patch", "flinkdeployment", "running", "-n", namespace, "--subresource=status",
                          "--type=merge", "-p", f'{{"status": {{"jobStatus": {{"jobId": "{JOB_ID}", '
                                                f'"state": "RUNNING"}}}}}}')

    assert get(control_plane, "flinkdeployment", "running", namespace)["status"]["jobStatus"] == {
        "jobId": JOB_ID, "state": "RUNNING"}


@pytest.mark.envtest
@pytest.mark.parametrize("path", sorted(p.name for p in CRD_DIR.glob("*.yaml") if p.name != "kustomization.yaml"))
def test_every_crd_is_established_and_structural(control_plane: ControlPlane, path: str) -> None:
    name = Path(path).stem
    conditions = {condition["type"]: condition["status"]
                  for condition in get(control_plane, "customresourcedefinition", name)["status"]["conditions"]}

    assert conditions.get("Established") == "True"
    assert conditions.get("NonStructuralSchema", "False") == "False"
