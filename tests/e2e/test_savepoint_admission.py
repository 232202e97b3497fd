"""Savepoint injection through a real kube-apiserver: a FlinkDeployment created with `kubectl apply` and the job-id
label is stored with the restore path of its job's newest completed checkpoint in a real directory tree."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from failover.core.api import DEFAULT_JOB_ID_LABEL
from tests.e2e.objects import JOB_ID, apply, flink_deployment, get, warnings_of
from tests.e2e.relay_process import RelayProcess
from tests.envtest import ControlPlane

pytestmark = pytest.mark.envtest


def checkpoints(root: Path, namespace: str, *completed: int, in_progress: tuple[int, ...] = ()) -> Path:
    """Flink's own layout under the workload's checkpoint dir `<root>/<namespace>`: `<JOB_ID>/chk-<n>`, with
    `_metadata` only in the completed ones."""
    directory = root / namespace / JOB_ID
    for n in (*completed, *in_progress):
        (directory / f"chk-{n}").mkdir(parents=True)
    for n in completed:
        (directory / f"chk-{n}" / "_metadata").write_bytes(b"flink checkpoint metadata")
    return directory


def stateful(deployment: dict, root: Path, namespace: str) -> dict:
    """The deployment with its own checkpoint and savepoint directories, inside the relay's root."""
    deployment["spec"]["flinkConfiguration"] = {
        "state.checkpoints.dir": f"file://{root}/{namespace}",
        "state.savepoints.dir": f"file://{root}/{namespace}/savepoints",
    }
    return deployment


@pytest.fixture
def checkpoint_relay(registered_relay: Callable[..., RelayProcess], tmp_path: Path) -> Path:
    """A relay with `--checkpoint-root` = a fresh directory, registered in the control plane; that directory."""
    root = tmp_path / "checkpoints"
    root.mkdir()
    registered_relay(serve_args=["--checkpoint-root", str(root)])
    return root


def test_created_flink_deployment_restores_from_the_newest_completed_checkpoint(
    checkpoint_relay: Path, control_plane: ControlPlane, namespace: str
) -> None:
    directory = checkpoints(checkpoint_relay, namespace, 3, 7, in_progress=(8,))

    result = apply(
        control_plane,
        stateful(
            flink_deployment("restored", namespace, labels={DEFAULT_JOB_ID_LABEL: JOB_ID}), checkpoint_relay, namespace
        ),
    )

    assert result.returncode == 0, result.stderr
    assert warnings_of(result) == []
    job = get(control_plane, "flinkdeployment", "restored", namespace)["spec"]["job"]
    assert job["initialSavepointPath"] == f"file://{directory}/chk-7"
    assert job["upgradeMode"] == "savepoint"  # both directories are set: the operator's validator accepts it
    assert "state" not in job  # never forced (the operator's JobSpec defaults it to running)


def test_without_directories_only_the_path_is_set_and_the_state_loss_is_warned(
    checkpoint_relay: Path, control_plane: ControlPlane, namespace: str
) -> None:
    checkpoints(checkpoint_relay, "", 4)  # no directory of its own: the relay's root, Flink's layout

    result = apply(control_plane, flink_deployment("bare", namespace, labels={DEFAULT_JOB_ID_LABEL: JOB_ID}))

    assert result.returncode == 0, result.stderr
    assert [w for w in warnings_of(result) if "sets no checkpoint dir" in w]
    job = get(control_plane, "flinkdeployment", "bare", namespace)["spec"]["job"]
    assert job["initialSavepointPath"] == str(checkpoint_relay / JOB_ID / "chk-4")
    assert job["upgradeMode"] == "stateless"


def test_without_a_completed_checkpoint_it_is_admitted_unchanged_with_a_warning(
    checkpoint_relay: Path, control_plane: ControlPlane, namespace: str
) -> None:
    checkpoints(checkpoint_relay, namespace, in_progress=(1, 2))
    deployment = stateful(
        flink_deployment("fresh", namespace, labels={DEFAULT_JOB_ID_LABEL: JOB_ID}), checkpoint_relay, namespace
    )

    result = apply(control_plane, deployment)

    assert result.returncode == 0, result.stderr
    (warning,) = warnings_of(result)
    assert warning.startswith("no savepoint set: no completed checkpoint or savepoint of the job in")
    assert get(control_plane, "flinkdeployment", "fresh", namespace)["spec"]["job"] == deployment["spec"]["job"]


def test_a_reapplied_flink_deployment_keeps_its_restore_path(
    checkpoint_relay: Path, control_plane: ControlPlane, namespace: str
) -> None:
    # A re-sync from the Karmada control plane sends the template again, which never holds the path.
    directory = checkpoints(checkpoint_relay, namespace, 1)
    deployment = stateful(
        flink_deployment("resynced", namespace, labels={DEFAULT_JOB_ID_LABEL: JOB_ID}), checkpoint_relay, namespace
    )
    assert apply(control_plane, deployment).returncode == 0
    checkpoints(checkpoint_relay, namespace, 2)

    deployment["spec"]["job"]["parallelism"] = 3
    result = apply(control_plane, deployment)

    assert result.returncode == 0, result.stderr
    job = get(control_plane, "flinkdeployment", "resynced", namespace)["spec"]["job"]
    assert job["initialSavepointPath"] == f"file://{directory}/chk-1"
    assert job["parallelism"] == 3
