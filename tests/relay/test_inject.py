"""`failover-relay inject` and the savepoint settings it shares with `serve`."""

import io
import json
import os
import socket
from pathlib import Path

import pytest
import yaml

from relay.commands.inject import run_inject
from relay.settings import SavepointSettings, SettingsError, apply, load_settings

JOB = "0123456789abcdef0123456789abcdef"
FLINK = """apiVersion: flink.apache.org/v1beta1
kind: FlinkDeployment
metadata: {name: basic-example, namespace: flink}
spec: {image: "flink:1.17", job: {jarURI: "local:///x.jar", upgradeMode: stateless}}
"""


@pytest.fixture
def tree(tmp_path):
    directory = tmp_path / "ckpt" / JOB  # Flink's own layout, the default
    (directory / "chk-3").mkdir(parents=True)
    (directory / "chk-3" / "_metadata").write_bytes(b"m")
    (directory / "chk-4").mkdir()
    manifest = tmp_path / "flink.yaml"
    manifest.write_text(FLINK)
    return tmp_path / "ckpt", manifest, directory


def inject(manifest, root, job_id=JOB, patch=False, **settings):
    out, err = io.StringIO(), io.StringIO()
    code = run_inject(
        manifest,
        SavepointSettings(checkpoint_root=str(root) if root else None, **settings),
        job_id,
        patch,
        None,
        out,
        err,
    )
    return code, out.getvalue(), err.getvalue()


def test_prints_the_mutated_object(tree):
    root, manifest, directory = tree
    code, out, _ = inject(manifest, root)
    assert code == 0
    job = yaml.safe_load(out)["spec"]["job"]
    assert job == {"jarURI": "local:///x.jar", "upgradeMode": "stateless", "initialSavepointPath": f"{directory}/chk-3"}


def test_reads_the_object_from_the_standard_input_for_a_dash(tree, monkeypatch):
    root, manifest, directory = tree
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(manifest.read_bytes())))
    code, out, _ = inject(Path("-"), root)
    assert code == 0
    assert yaml.safe_load(out)["spec"]["job"]["initialSavepointPath"] == f"{directory}/chk-3"


def test_prints_the_patch(tree):
    root, manifest, directory = tree
    code, out, _ = inject(manifest, root, patch=True)
    assert code == 0
    assert json.loads(out)[0] == {"op": "add", "path": "/spec/job/initialSavepointPath", "value": f"{directory}/chk-3"}


def test_missing_checkpoint_is_a_warning_or_a_denial(tree):
    root, manifest, _ = tree
    code, out, err = inject(manifest, root, job_id="f" * 32)
    assert code == 0 and "warning: no savepoint set: no completed checkpoint" in err
    assert "initialSavepointPath" not in out
    code, _, err = inject(manifest, root, job_id="f" * 32, failure_mode="closed")
    assert code == 1 and "denied: spec.job.initialSavepointPath" in err


def test_hostile_job_id_is_refused(tree):
    root, manifest, _ = tree
    code, out, err = inject(manifest, root, job_id="../../etc")
    assert code == 2 and out == "" and "not a Flink JobID" in err


def test_needs_a_checkpoint_root(tree):
    _, manifest, _ = tree
    assert inject(manifest, None)[0] == 2


def test_unknown_kind_is_refused(tree, tmp_path):
    root, _, _ = tree
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n")
    code, _, err = inject(manifest, root)
    assert code == 2 and "no injection profile for Deployment" in err


def test_config_file_with_a_profile_that_cannot_work_stops_start_up(tmp_path):
    config = tmp_path / "relay.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "savepoint": {
                    "checkpointRoot": "/data",
                    "profiles": [
                        {
                            "kind": "FlinkSessionJob",
                            "group": "flink.apache.org",
                            "version": "v1beta1",
                            "targets": [{"field": "spec.job[0].path", "value": "{path}"}],
                        }
                    ],
                }
            }
        )
    )
    with pytest.raises(SettingsError, match=r"savepoint.profiles\[0\].targets\[0\].field"):
        load_settings(config)


def test_config_file_with_a_bad_layout_stops_start_up(tmp_path):
    config = tmp_path / "relay.yaml"
    config.write_text(yaml.safe_dump({"savepoint": {"layouts": ["{root}/{jobID}"]}}))
    with pytest.raises(SettingsError, match="unknown field {jobID}"):
        load_settings(config)


def test_flags_override_the_savepoint_section(tmp_path):
    config = tmp_path / "relay.yaml"
    config.write_text(yaml.safe_dump({"savepoint": {"checkpointRoot": "/data", "failureMode": "closed"}}))
    settings = apply(load_settings(config), {"savepoint.checkpointRoot": "s3://b/c"})
    assert (settings.savepoint.checkpoint_root, settings.savepoint.failure_mode) == ("s3://b/c", "closed")


def test_a_workload_dir_is_read_only_inside_the_allowed_roots(tree, tmp_path):
    root, _, _ = tree
    savepoints = tmp_path / "savepoints"
    (savepoints / f"savepoint-{JOB[:6]}-a1b2c3d4e5f6").mkdir(parents=True)
    (savepoints / f"savepoint-{JOB[:6]}-a1b2c3d4e5f6" / "_metadata").write_bytes(b"m")
    manifest = tmp_path / "stateful.yaml"
    manifest.write_text(
        FLINK.replace("spec: {", f"spec: {{flinkConfiguration: {{state.savepoints.dir: '{savepoints}'}}, ")
    )
    code, _, err = inject(manifest, root)
    assert code == 0 and "outside the allowed roots" in err  # fail-open: admitted unchanged, the reason shown
    code, out, _ = inject(manifest, root, allowed_roots=(str(savepoints),))
    assert code == 0 and yaml.safe_load(out)["spec"]["job"]["initialSavepointPath"].startswith(str(savepoints))


def test_restore_settings_are_read_and_checked(tmp_path):
    config = tmp_path / "relay.yaml"
    config.write_text(yaml.safe_dump({"savepoint": {"allowedRoots": ["s3://flink/savepoints"], "lateRestore": True}}))
    assert (load_settings(config).savepoint.allowed_roots, load_settings(config).savepoint.late_restore) == (
        ("s3://flink/savepoints",),
        True,
    )
    for root, reason in (
        ("relative/dir", "relative"),
        ("s3://key:secret@flink/x", "credentials"),
        ("/data/../etc", "'..'"),
    ):
        config.write_text(yaml.safe_dump({"savepoint": {"allowedRoots": [root]}}))
        with pytest.raises(SettingsError, match=r"savepoint.allowedRoots\[0\]") as error:
            load_settings(config)
        assert reason in str(error.value) and "secret" not in str(error.value)


def test_says_which_state_it_chose_and_what_it_compared(tree, tmp_path):
    root, manifest, directory = tree
    savepoints = root / "savepoints" / JOB
    older = savepoints / f"savepoint-{JOB[:6]}-a1b2c3d4e5f6"
    older.mkdir(parents=True)
    (older / "_metadata").write_bytes(b"m")
    os.utime(older / "_metadata", (1_700_000_000, 1_700_000_000))  # 2023-11-14T22:13:20Z, before chk-3
    code, out, err = inject(manifest, root, savepoint_layouts=("{root}/savepoints/{job_id}",))
    assert code == 0 and yaml.safe_load(out)["spec"]["job"]["initialSavepointPath"] == f"{directory}/chk-3"
    chosen, compared = err.splitlines()[:2]
    assert chosen.startswith(f"chosen: checkpoint {directory}/chk-3, completed ")
    assert chosen.endswith(f": the newest restorable state of job {JOB}")
    assert compared == f"compared: savepoint {older}, completed 2023-11-14T22:13:20Z"


def test_says_which_claim_mode_the_new_job_restores_in(tree, tmp_path):
    root, manifest, _ = tree
    _, _, err = inject(manifest, root)
    assert err.splitlines()[-2] == "restored in claim mode NO_CLAIM (flinkConfiguration; Flink's default is NO_CLAIM)"
    claiming = tmp_path / "claiming.yaml"
    claiming.write_text(
        FLINK.replace("spec: {", 'spec: {flinkConfiguration: {"execution.state-recovery.claim-mode": claim}, ')
    )
    _, _, err = inject(claiming, root)
    assert "restored in claim mode CLAIM (flinkConfiguration; Flink's default is NO_CLAIM)" in err
    assert "warning: restore is unsafe: claim mode CLAIM: the new job owns and deletes" in err


def test_a_lookup_past_its_deadline_is_followed_to_its_cause(tree, monkeypatch):
    """The webhook answers "timed out" at the deadline; inject says what the lookup then ended with. A refused S3
    endpoint (real s3fs and botocore against a closed port) is retried for seconds before botocore says so."""
    _, manifest, _ = tree
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    code, out, err = inject(
        manifest,
        "s3://flink-state/checkpoints",
        lookup_deadline_seconds=0.2,
        storage_options={"endpoint_url": f"http://127.0.0.1:{port}"},
    )
    assert code == 0 and "initialSavepointPath" not in out
    lines = err.splitlines()
    assert "warning: no savepoint set: checkpoint lookup timed out after 0.2s" in lines
    assert lines[-1].startswith("after the deadline the lookup ended storage-error: storage error: ")
    assert f"127.0.0.1:{port}" in lines[-1]
