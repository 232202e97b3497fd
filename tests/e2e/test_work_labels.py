"""Preserved-state labels on Karmada Works through a real kube-apiserver: the relay reads the Work's
ResourceBinding from the same apiserver (control-plane mode) and labels the workload manifest, as Karmada's
binding controller does behind its alpha gate StatefulFailoverInjection."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from failover.core.api import DEFAULT_JOB_ID_LABEL
from tests.e2e.objects import JOB_ID, apply, flink_deployment, get, warnings_of
from tests.e2e.relay_process import RelayProcess
from tests.envtest import ControlPlane
from tests.failover.work_builders import work

pytestmark = pytest.mark.envtest


@pytest.fixture
def cluster(control_plane: ControlPlane) -> str:
    """A member cluster name whose execution namespace `karmada-es-<name>` exists."""
    name = f"member-{uuid.uuid4().hex[:8]}"
    control_plane.kubectl("create", "namespace", f"karmada-es-{name}")
    return name


def failed_over_binding(name: str, namespace: str, target: str, **spec: Any) -> dict[str, Any]:
    """The binding of FlinkDeployment `name` after application failover from member1 to `target`."""
    return {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {"name": f"{name}-flinkdeployment", "namespace": namespace},
        "spec": {
            "resource": {
                "apiVersion": "flink.apache.org/v1beta1",
                "kind": "FlinkDeployment",
                "namespace": namespace,
                "name": name,
            },
            "clusters": [{"name": target, "replicas": 1}],
            "gracefulEvictionTasks": [
                {
                    "fromCluster": "member1",
                    "purgeMode": "Directly",
                    "reason": "ApplicationFailure",
                    "producer": "resource-binding-application-failover-controller",
                    "preservedLabelState": {DEFAULT_JOB_ID_LABEL: JOB_ID},
                    "clustersBeforeFailover": ["member1"],
                }
            ],
            **spec,
        },
    }


def rendered_work(name: str, namespace: str, cluster: str) -> dict[str, Any]:
    """The Work Karmada's binding controller renders for `cluster`: the template, without the preserved label."""
    return work(
        flink_deployment(name, namespace, labels={"app": name}),
        cluster=cluster,
        name=f"{name}-work",
        annotations={
            "resourcebinding.karmada.io/namespace": namespace,
            "resourcebinding.karmada.io/name": f"{name}-flinkdeployment",
        },
    )


def stored_manifest(control_plane: ControlPlane, name: str, cluster: str) -> dict[str, Any]:
    return get(control_plane, "work", f"{name}-work", f"karmada-es-{cluster}")["spec"]["workload"]["manifests"][0]


@pytest.mark.usefixtures("webhooks")
def test_work_for_the_single_new_cluster_gets_the_preserved_labels(
    control_plane: ControlPlane, namespace: str, cluster: str, relay: RelayProcess
) -> None:
    labelled = 'failover_relay_work_labels_total{outcome="labelled"}'
    before = relay.metric(labelled)
    assert apply(control_plane, failed_over_binding("job", namespace, cluster)).returncode == 0

    result = apply(control_plane, rendered_work("job", namespace, cluster))

    assert result.returncode == 0, result.stderr
    assert warnings_of(result) == []
    labels = stored_manifest(control_plane, "job", cluster)["metadata"]["labels"]
    assert labels == {"app": "job", DEFAULT_JOB_ID_LABEL: JOB_ID}
    assert relay.metric(labelled) == before + 1


@pytest.mark.usefixtures("webhooks")
def test_work_of_a_placement_over_two_clusters_is_left_alone(
    control_plane: ControlPlane, namespace: str, cluster: str
) -> None:
    binding = failed_over_binding("spread", namespace, cluster)
    binding["spec"]["clusters"].append({"name": "member3", "replicas": 1})
    assert apply(control_plane, binding).returncode == 0

    result = apply(control_plane, rendered_work("spread", namespace, cluster))

    assert result.returncode == 0, result.stderr
    assert stored_manifest(control_plane, "spread", cluster)["metadata"]["labels"] == {"app": "spread"}


@pytest.mark.usefixtures("webhooks")
def test_work_whose_binding_is_missing_is_admitted_unchanged_with_a_warning(
    control_plane: ControlPlane, namespace: str, cluster: str
) -> None:
    result = apply(control_plane, rendered_work("orphan", namespace, cluster))

    assert result.returncode == 0, result.stderr
    (warning,) = warnings_of(result)
    assert warning == f"preserved labels not set: ResourceBinding {namespace}/orphan-flinkdeployment not found"
    assert stored_manifest(control_plane, "orphan", cluster)["metadata"]["labels"] == {"app": "orphan"}


def test_work_savepoints_set_the_restore_path_inside_the_work(
    registered_relay: Callable[..., RelayProcess],
    control_plane: ControlPlane,
    namespace: str,
    cluster: str,
    tmp_path: Path,
) -> None:
    root = tmp_path / "checkpoints"
    checkpoint = root / namespace / JOB_ID / "checkpoints" / "chk-12"
    checkpoint.mkdir(parents=True)
    (checkpoint / "_metadata").write_bytes(b"flink checkpoint metadata")
    config = tmp_path / "relay.yaml"
    # Karmada's documented layout (the default is Flink's own, {root}/{job_id}).
    config.write_text('savepoint:\n  workSavepoints: true\n  layouts: ["{root}/{namespace}/{job_id}/checkpoints"]\n')
    registered_relay(serve_args=["--config", str(config), "--checkpoint-root", str(root)])
    assert apply(control_plane, failed_over_binding("restored", namespace, cluster)).returncode == 0

    result = apply(control_plane, rendered_work("restored", namespace, cluster))

    assert result.returncode == 0, result.stderr
    manifest = stored_manifest(control_plane, "restored", cluster)
    assert manifest["metadata"]["labels"][DEFAULT_JOB_ID_LABEL] == JOB_ID
    assert manifest["spec"]["job"]["initialSavepointPath"] == str(checkpoint)
    # No checkpoint/savepoint directory in its flinkConfiguration: upgradeMode and job.state are left as they are.
    assert manifest["spec"]["job"]["upgradeMode"] == "stateless"
    assert "state" not in manifest["spec"]["job"]


@pytest.mark.usefixtures("webhooks")
def test_a_work_being_deleted_is_released_without_reading_its_binding(
    control_plane: ControlPlane, namespace: str, cluster: str
) -> None:
    leaving = rendered_work("leaving", namespace, cluster)  # its binding does not exist: reading it would warn
    leaving["metadata"]["finalizers"] = ["karmada.io/execution-controller"]
    assert apply(control_plane, leaving).returncode == 0
    execution = f"karmada-es-{cluster}"
    control_plane.kubectl("delete", "work", "leaving-work", "-n", execution, "--wait=false")

    result = control_plane.kubectl(
        "patch", "work", "leaving-work", "-n", execution, "--type=merge", "-p", '{"metadata":{"finalizers":null}}'
    )

    assert warnings_of(result) == []
    assert get(control_plane, "work", "leaving-work", execution) is None
