"""Every restore the relay picks, proven by Flink itself: a keyed-counter job in a MiniCluster configured from a
FlinkDeployment's `flinkConfiguration` writes real trees (a crash by kill -9 during a checkpoint, a rotated job id at
every restart, stop-with-savepoint, a savepoint followed by newer checkpoints, a clean cancel); after each,
`failover-relay inject --patch` picks the state from the manifest, and Flink restores from that path. Each step asserts
that the restore succeeds, that Flink restored exactly the counts that snapshot held, and that no state in the tree that
Flink can load is newer (checkpoint ids run on along the lineage of restores).

Three scenarios, one JVM per run (about 20 runs in all): Flink 1.20.3 with the `state.*` keys naming both
directories, ending with the known limit of a shared savepoint prefix; Flink 2.2.0 with only the checkpoint directory
in the manifest and the savepoints where the operator's defaults put them (`savepointLayouts`); both RocksDB
incremental. Flink 2.2.0 with both directories on the S3-protocol server (heap state)."""

import json
import subprocess
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import boto3
import fsspec
import pytest
import yaml

from tests.flink_job import FLINK_VERSIONS, Probe, expected_counts, operator_configuration
from tests.storage.conftest import s3_endpoint  # noqa: F401  the S3-protocol server, for the s3 shape

pytestmark = pytest.mark.flink

RETAIN = {"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}
ROCKSDB_INCREMENTAL = {"state.backend.type": "rocksdb", "execution.checkpointing.incremental": "true"}


@dataclass
class Shape:
    manifest: Callable[[str], dict[str, str]]  # the FlinkDeployment's flinkConfiguration, over the state root's URL
    defaults: Callable[[str], dict[str, str]] = lambda root: {}  # the operator's defaultConfiguration
    savepoint_layouts: tuple[str, ...] = ()
    keys: int = 4
    rate: int = 2000
    versions: tuple[str, ...] = FLINK_VERSIONS
    storage: str = "file"
    twin: bool = False  # end with the known limit: another job's savepoint under the same prefix


SHAPES = {
    # The workload names both directories, with the keys of the Flink 1.20 generation; RocksDB incremental with
    # enough keys that its files land in shared/ rather than inline in _metadata.
    "own-dirs-state-keys-rocksdb": Shape(
        manifest=lambda root: {
            "state.checkpoints.dir": f"{root}/checkpoints",
            "state.savepoints.dir": f"{root}/savepoints",
            "execution.checkpointing.interval": "300ms",
            **ROCKSDB_INCREMENTAL,
            **RETAIN,
        },
        keys=3000,
        rate=20000,
        versions=FLINK_VERSIONS[:1],
        twin=True,
    ),
    # Only the checkpoint directory in the manifest (2.x keys); savepoints where the operator's defaults put them.
    "operator-default-savepoints-rocksdb": Shape(
        manifest=lambda root: {
            "execution.checkpointing.dir": f"{root}/checkpoints",
            "execution.checkpointing.interval": "300ms",
            **ROCKSDB_INCREMENTAL,
            **RETAIN,
        },
        defaults=lambda root: {"execution.checkpointing.savepoint-dir": f"{root}/savepoints"},
        savepoint_layouts=("{root}/savepoints",),
        keys=3000,
        rate=20000,
        versions=FLINK_VERSIONS[1:],
    ),
    # Both directories on the S3-protocol server (flink-s3-fs-hadoop), its endpoint and keys in the operator's
    # defaults. S3's LastModified has whole seconds, so checkpoints are a second apart (docs/restore.md).
    "s3-own-dirs": Shape(
        manifest=lambda root: {
            "execution.checkpointing.dir": f"{root}/checkpoints",
            "execution.checkpointing.savepoint-dir": f"{root}/savepoints",
            "execution.checkpointing.interval": "1s",
            **RETAIN,
        },
        versions=FLINK_VERSIONS[1:],
        storage="s3",
    ),
}


def new_job_id() -> str:
    return uuid.uuid4().hex


def manifest(path: Path, flink_configuration: dict[str, str]) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "flink.apache.org/v1beta1",
                "kind": "FlinkDeployment",
                "metadata": {"name": "counter", "namespace": "flink"},
                "spec": {
                    "image": "flink:2.2",
                    "flinkVersion": "v2_2",
                    "flinkConfiguration": flink_configuration,
                    "job": {"jarURI": "local:///opt/flink/usrlib/probe.jar", "upgradeMode": "stateless"},
                },
            }
        )
    )
    return path


def inject(manifest_file: Path, config_file: Path, job_id: str) -> tuple[str | None, str]:
    """`failover-relay inject --patch`, as a user runs it: the injected path (None: none found) and the line saying
    what it chose, or its warning."""
    result = subprocess.run(
        [sys.executable, "-m", "relay.cli", "inject", str(manifest_file), "--config", str(config_file)]
        + ["--job-id", job_id, "--patch"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert result.returncode == 0, result.stderr
    patch = json.loads(result.stdout)
    path = next((op["value"] for op in patch if op["path"] == "/spec/job/initialSavepointPath"), None)
    said = next(line for line in result.stderr.splitlines() if line.startswith(("chosen:", "warning:")))
    return path, said


def pairs():
    for shape_name, shape in SHAPES.items():
        for version in shape.versions:
            yield pytest.param(version, shape_name, shape.storage, id=f"flink-{version}-{shape_name}")


@pytest.fixture
def storage(request, tmp_path):
    """The state root as Flink and the relay spell it, the relay's storage options and an fsspec view of it."""
    if request.param == "file":
        root = f"file://{tmp_path / 'state'}"
        (tmp_path / "state").mkdir()
        return root, {}, {}, fsspec.filesystem("file")
    endpoint = request.getfixturevalue("s3_endpoint")
    bucket = f"flink-{uuid.uuid4().hex[:12]}"
    options = {"endpoint_url": endpoint, "key": "testing", "secret": "testing", "skip_instance_cache": True}
    options["client_kwargs"] = {"region_name": "us-east-1"}
    boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    ).create_bucket(Bucket=bucket)
    fs = fsspec.filesystem("s3", **options)
    flink_s3 = {
        "s3.endpoint": endpoint,
        "s3.path.style.access": "true",
        "s3.access-key": "testing",
        "s3.secret-key": "testing",
        "s3.endpoint.region": "us-east-1",
    }
    return f"s3://{bucket}/flink", options, flink_s3, fs


def state_urls(fs, root: str) -> list[str]:
    """Every checkpoint and savepoint below `root`, complete or not, by the keys (or files) below it."""
    scheme, _, path = root.partition("://")
    found = set()
    for key in fs.find(path, withdirs=True):
        parts = key.split("/")
        for index, part in enumerate(parts):
            if part.startswith(("chk-", "savepoint-")):
                found.add("/".join(parts[: index + 1]))
    prefix = "file://" if scheme == "file" else f"{scheme}://"
    return sorted(prefix + ("" if key.startswith("/") or scheme != "file" else "/") + key for key in found)


@pytest.mark.parametrize("version, shape_name, storage", list(pairs()), indirect=["storage"])
def test_each_pick_is_the_newest_state_flink_restores(flink_probes, tmp_path, version, shape_name, storage):
    probe = Probe.of(flink_probes, version)
    shape = SHAPES[shape_name]
    root, storage_options, flink_storage, fs = storage
    flink_configuration = shape.manifest(root)
    defaults = {**flink_storage, **shape.defaults(root)}
    manifest_file = manifest(tmp_path / "flink.yaml", flink_configuration)

    def relay_config(name, **savepoint):
        path = tmp_path / name
        savepoint = {"checkpointRoot": root, "storageOptions": storage_options, **savepoint}
        path.write_text(yaml.safe_dump({"savepoint": savepoint}))
        return path

    relay = relay_config("relay.yaml", savepointLayouts=list(shape.savepoint_layouts))
    expected = tmp_path / "expected"
    rows = []

    def run(name, job_id, restore_path, steps, expected_dir=expected):
        config = operator_configuration(flink_configuration, defaults, job_id, restore_path)
        return probe.run(config, tmp_path / name, expected_dir, steps, keys=shape.keys, rate=shape.rate)

    def loaded(*paths):
        return probe.metadata(defaults, *paths)

    def pick_and_prove(job_id, kind, tree, name, steps):
        """The relay's pick for `job_id`, checked against every state Flink can load, then restored by Flink."""
        path, chosen = inject(manifest_file, relay, job_id)
        assert path and chosen.startswith(f"chosen: {kind} "), chosen
        states = loaded(path, *state_urls(fs, root))
        restorable = {p: entry["checkpointId"] for p, entry in states.items() if "checkpointId" in entry}
        assert path in restorable, states[path]
        assert restorable[path] == max(restorable.values()), f"newer than {path}: {restorable}"
        restored_run = run(name, new_job_id(), path, steps)  # the operator gives every restored run a new job id
        first, counts = restored_run.restored()
        assert counts == expected_counts(expected, restorable[path])
        assert first == sum(counts.values())  # the source's restored position matches the keyed state
        rows.append((version, shape_name, tree, path.removeprefix(f"{root}/"), restorable[path], first))
        return restored_run

    # 1. A crash (kill -9) while checkpoint n is in progress: chk-n has no _metadata, Flink cannot load it.
    first_job = new_job_id()
    crashed = run("run-1", first_job, None, ["chk:3", "crash-in-checkpoint"])
    in_progress = f"{root}/checkpoints/{first_job}/chk-{crashed.event('blocking')['checkpointId']}"
    assert "error" in loaded(in_progress)[in_progress]
    second = pick_and_prove(
        first_job, "checkpoint", "kill -9 during a checkpoint", "run-2", ["chk:2", "stop-with-savepoint"]
    )

    # 2. Stop-with-savepoint under the rotated job id: the savepoint is newer than the run's last checkpoint.
    second_job = second.event("submitted")["jobId"]
    if shape.savepoint_layouts:
        # Without the savepoint layout the relay cannot see savepoints the operator's defaults placed: it would pick
        # an older state and Flink would silently redo what the savepoint held. It picks the older checkpoint or, once
        # Flink discarded the finished job's checkpoints, nothing at all.
        blind_path, blind = inject(manifest_file, relay_config("relay-without-savepoint-layouts.yaml"), second_job)
        assert not blind.startswith("chosen: savepoint"), blind
        blind_id = loaded(blind_path)[blind_path]["checkpointId"] if blind_path else 0
    third = pick_and_prove(
        second_job, "savepoint", "stop-with-savepoint", "run-3", ["chk:2", "savepoint", "chk:2", "cancel"]
    )
    if shape.savepoint_layouts:
        assert blind_id < rows[-1][4]

    # 3. A savepoint, then newer checkpoints, then a clean cancel: the newer checkpoint wins.
    third_job = third.event("submitted")["jobId"]
    fourth = pick_and_prove(third_job, "checkpoint", "savepoint then checkpoints, cancel", "run-4", ["chk:1", "cancel"])

    if shape.twin:
        # The known limit (docs/restore.md, "Two jobs, one savepoint prefix"): another workload of the same program,
        # its job id sharing the first 6 hex digits, takes a savepoint in the same directory afterwards. The relay
        # takes it, and Flink restores that job's counts without complaint; only the checkpoint ids, one lineage
        # each, show it is not this job's (an older id completed later).
        fourth_job = fourth.event("submitted")["jobId"]
        twin_expected = tmp_path / "twin-expected"
        twin = run("twin", fourth_job[:6] + new_job_id()[6:], None, ["chk:1", "savepoint", "cancel"], twin_expected)
        twin_savepoint = twin.event("savepoint")["path"].replace("file:/", "file:///", 1)
        path, chosen = inject(manifest_file, relay, fourth_job)
        assert path == twin_savepoint and chosen.startswith("chosen: savepoint "), (chosen, twin_savepoint)
        states = loaded(path, *state_urls(fs, root))
        own = [entry["checkpointId"] for url, entry in states.items() if fourth_job in url and "checkpointId" in entry]
        assert own and states[path]["checkpointId"] < max(own)  # the job's own checkpoint, completed earlier
        stranger = run("run-twin-restore", new_job_id(), path, ["cancel"])
        assert stranger.restored()[1] == expected_counts(twin_expected, states[path]["checkpointId"])
        rows.append(
            (
                version,
                shape_name,
                "same 6-hex prefix, shared dir",
                path.removeprefix(f"{root}/"),
                states[path]["checkpointId"],
                stranger.restored()[0],
            )
        )

    if shape_name.endswith("rocksdb"):
        written = fs.find(root.partition("://")[2] + "/checkpoints")
        assert any("/shared/" in key for key in written), "RocksDB incremental wrote no shared files"
    for row in rows:
        print("restore:", *row, sep=" | ")
    print("restore seconds:", version, shape_name, [r.restore_seconds() for r in (second, third, fourth)])
