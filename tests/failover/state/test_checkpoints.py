import os
import threading
from pathlib import Path

import fsspec
import pytest

from failover.state.checkpoints import (
    DEFAULT_LAYOUT,
    FLINK_NATIVE_LAYOUT,
    KARMADA_EXAMPLE_LAYOUT,
    CheckpointStore,
    LayoutError,
    LookupCache,
    LookupResult,
    Outcome,
    newest_savepoint,
    open_store,
    parse_layout,
)
from failover.state.jobid import JobId
from failover.state.restore import RestoreQuery, find_restore_point

JOB = JobId("0123456789abcdef0123456789abcdef")
OTHER_JOB = JobId("fedcba9876543210fedcba9876543210")
DEFAULT = (parse_layout(KARMADA_EXAMPLE_LAYOUT),)
NATIVE = (parse_layout(FLINK_NATIVE_LAYOUT),)
SAVEPOINTS = (parse_layout("{root}/savepoints/{namespace}/{job_id}"),)


def checkpoint(directory: Path, n: int, completed: bool = True) -> Path:
    chk = directory / f"chk-{n}"
    chk.mkdir(parents=True)
    (chk / "state-file").write_bytes(b"x")
    if completed:
        (chk / "_metadata").write_bytes(b"meta")
    return chk


def job_dir(root: Path, namespace: str = "flink", job: JobId = JOB) -> Path:
    path = root / namespace / job.value / "checkpoints"
    path.mkdir(parents=True, exist_ok=True)
    return path


def lookup(store, layouts, savepoints, namespace, job) -> LookupResult:
    return find_restore_point((store,), layouts, savepoints, RestoreQuery(namespace, (job,)))


def find(root: Path, layouts=DEFAULT, savepoints=(), namespace="flink", job=JOB) -> LookupResult:
    return lookup(open_store(str(root)), layouts, savepoints, namespace, job)


def test_the_default_layout_is_flinks_own():
    assert DEFAULT_LAYOUT == FLINK_NATIVE_LAYOUT == "{root}/{job_id}"


def test_newest_completed_checkpoint_wins(tmp_path):
    directory = job_dir(tmp_path)
    for n in (1, 2, 10, 9):
        checkpoint(directory, n)
    result = find(tmp_path)
    assert result.outcome is Outcome.FOUND
    assert result.path == f"{tmp_path}/flink/{JOB}/checkpoints/chk-10"
    assert result.source == "checkpoint"


def test_in_progress_checkpoint_is_skipped(tmp_path):
    directory = job_dir(tmp_path)
    checkpoint(directory, 7)
    checkpoint(directory, 8, completed=False)
    assert find(tmp_path).path.endswith("/chk-7")


def test_metadata_must_be_a_file(tmp_path):
    directory = job_dir(tmp_path)
    checkpoint(directory, 3)
    broken = checkpoint(directory, 4, completed=False)
    (broken / "_metadata").mkdir()
    assert find(tmp_path).path.endswith("/chk-3")


def test_numbers_compare_numerically_not_as_text(tmp_path):
    directory = job_dir(tmp_path)
    for n in (99, 100, 1000, 998):
        checkpoint(directory, n)
    assert find(tmp_path).path.endswith("/chk-1000")


def test_other_entries_are_ignored(tmp_path):
    directory = job_dir(tmp_path)
    checkpoint(directory, 2)
    for name in ("shared", "taskowned", "chk-x", "chk-", "chk-05a", "chk-3.tmp"):
        (directory / name).mkdir()
        (directory / name / "_metadata").write_bytes(b"")
    (directory / "chk-9").write_bytes(b"a file, not a directory")
    assert find(tmp_path).path.endswith("/chk-2")


def test_only_in_progress_checkpoints_is_not_found(tmp_path):
    directory = job_dir(tmp_path)
    checkpoint(directory, 1, completed=False)
    result = find(tmp_path)
    assert result.outcome is Outcome.NOT_FOUND
    assert result.reason == f"no completed checkpoint or savepoint of the job in {tmp_path}/flink/{JOB}/checkpoints"


def test_missing_job_directory_is_not_found(tmp_path):
    job_dir(tmp_path, job=OTHER_JOB)
    assert find(tmp_path).outcome is Outcome.NOT_FOUND


def test_jobs_and_namespaces_do_not_mix(tmp_path):
    checkpoint(job_dir(tmp_path, job=OTHER_JOB), 50)
    checkpoint(job_dir(tmp_path, namespace="other"), 40)
    checkpoint(job_dir(tmp_path), 3)
    assert find(tmp_path).path == f"{tmp_path}/flink/{JOB}/checkpoints/chk-3"
    assert find(tmp_path, namespace="other").path.endswith("/other/" + JOB.value + "/checkpoints/chk-40")


def test_many_jobs_many_checkpoints(tmp_path):
    jobs = [JobId(f"{i:032x}") for i in range(30)]
    for i, job in enumerate(jobs):
        directory = job_dir(tmp_path, job=job)
        for n in range(1, 41):
            checkpoint(directory, n, completed=n <= 40 - i % 3)
    for i, job in enumerate(jobs):
        assert find(tmp_path, job=job).path.endswith(f"/chk-{40 - i % 3}")


def test_flink_native_layout(tmp_path):
    checkpoint(tmp_path / JOB.value, 12)
    (tmp_path / JOB.value / "shared").mkdir()
    result = find(tmp_path, layouts=NATIVE, namespace="")
    assert result.path == f"{tmp_path}/{JOB}/chk-12"


def completed_at(chk: Path, when: float) -> Path:
    os.utime(chk / "_metadata", (when, when))
    return chk


def test_across_layouts_the_newest_completion_wins(tmp_path):
    completed_at(checkpoint(tmp_path / JOB.value, 99), 1000)
    completed_at(checkpoint(job_dir(tmp_path), 5), 2000)
    assert find(tmp_path, layouts=DEFAULT + NATIVE).path.endswith("/checkpoints/chk-5")
    assert find(tmp_path, layouts=NATIVE + DEFAULT).path.endswith("/checkpoints/chk-5")


def test_the_newest_of_the_jobs_savepoints_is_found(tmp_path):
    savepoints = tmp_path / "savepoints" / "flink" / JOB.value
    older = savepoints / "savepoint-012345-aaaaaaaaaaaa"
    newer = savepoints / "savepoint-012345-bbbbbbbbbbbb"
    for index, directory in enumerate((newer, older)):
        directory.mkdir(parents=True)
        (directory / "_metadata").write_bytes(b"m")
        os.utime(directory / "_metadata", (1000 + index * 1000, 1000 + index * 1000))
    (savepoints / "savepoint-012345-cccccccccccc").mkdir()  # no _metadata: in progress
    result = find(tmp_path, savepoints=SAVEPOINTS)
    assert result.outcome is Outcome.FOUND
    assert result.source == "savepoint"
    assert result.path == f"{tmp_path}/savepoints/flink/{JOB}/savepoint-012345-aaaaaaaaaaaa"


@pytest.mark.parametrize(
    "checkpoint_time, savepoint_time, source", [(2000, 1000, "checkpoint"), (1000, 2000, "savepoint")]
)
def test_checkpoint_and_savepoint_compare_by_completion_time(tmp_path, checkpoint_time, savepoint_time, source):
    completed_at(checkpoint(job_dir(tmp_path), 1), checkpoint_time)
    sp = tmp_path / "savepoints" / "flink" / JOB.value / "savepoint-012345-aaaaaaaaaaaa"
    sp.mkdir(parents=True)
    (sp / "_metadata").write_bytes(b"m")
    completed_at(sp, savepoint_time)
    assert find(tmp_path, savepoints=SAVEPOINTS).source == source


def test_file_url_root_keeps_its_spelling(tmp_path):
    checkpoint(job_dir(tmp_path), 4)
    result = lookup(open_store(f"file://{tmp_path}/"), DEFAULT, (), "flink", JOB)
    assert result.path == f"file://{tmp_path}/flink/{JOB}/checkpoints/chk-4"


def test_relative_root_becomes_absolute(tmp_path, monkeypatch):
    checkpoint(job_dir(tmp_path / "ckpt"), 4)
    monkeypatch.chdir(tmp_path)
    result = lookup(open_store("ckpt"), DEFAULT, (), "flink", JOB)
    assert result.path == f"{tmp_path}/ckpt/flink/{JOB}/checkpoints/chk-4"


def test_absent_root_is_a_storage_error(tmp_path):
    result = find(tmp_path / "not-mounted")
    assert result.outcome is Outcome.STORAGE_ERROR
    assert "does not exist" in result.reason


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any directory")
def test_unreadable_directory_is_a_storage_error(tmp_path):
    directory = job_dir(tmp_path)
    checkpoint(directory, 1)
    directory.chmod(0)
    try:
        result = find(tmp_path)
    finally:
        directory.chmod(0o755)
    assert result.outcome is Outcome.STORAGE_ERROR
    assert "PermissionError" in result.reason


def test_symbolic_links_are_not_followed(tmp_path):
    outside = tmp_path / "outside"
    checkpoint(outside, 1)
    root = tmp_path / "root"
    directory = job_dir(root)
    checkpoint(directory, 1)
    (directory / "chk-50").symlink_to(outside / "chk-1")
    link_target = tmp_path / "elsewhere"
    link_target.mkdir()
    (link_target / "_metadata").write_bytes(b"m")
    checkpoint_with_link = directory / "chk-40"
    checkpoint_with_link.mkdir()
    (checkpoint_with_link / "_metadata").symlink_to(link_target / "_metadata")
    assert find(root).path.endswith("/chk-1")


def test_invalid_namespace_is_not_joined(tmp_path):
    checkpoint(job_dir(tmp_path), 1)
    result = find(tmp_path, namespace="../flink")
    assert result.outcome is Outcome.NOT_FOUND
    assert "not a DNS label" in result.reason


def test_layouts_take_only_checked_job_ids(tmp_path):
    with pytest.raises(TypeError):
        DEFAULT[0].relative("flink", "../../etc")


class RaisingFileSystem:
    def __init__(self, error):
        self.error = error

    def ls(self, path, detail=True, **kwargs):
        raise self.error

    def info(self, path, **kwargs):
        raise self.error


@pytest.mark.parametrize(
    "error",
    [
        ConnectionError("connection reset"),
        OSError(5, "Input/output error"),
        PermissionError(13, "Permission denied"),
        RuntimeError("throttled"),
    ],
)
def test_a_raising_filesystem_is_a_storage_error(error):
    store = CheckpointStore(RaisingFileSystem(error), "root", "s3://root")
    result = lookup(store, DEFAULT, (), "flink", JOB)
    assert result.outcome is Outcome.STORAGE_ERROR
    assert type(error).__name__ in result.reason


class BlockingFileSystem:
    def __init__(self):
        self.release = threading.Event()
        self.entered = threading.Event()

    def ls(self, path, detail=True, **kwargs):
        self.entered.set()
        self.release.wait(5)
        raise FileNotFoundError(path)

    def info(self, path, **kwargs):
        raise FileNotFoundError(path)


def test_a_blocking_filesystem_blocks_only_the_lookup_thread():
    fs = BlockingFileSystem()
    store = CheckpointStore(fs, "root", "/root")
    results = []
    thread = threading.Thread(target=lambda: results.append(lookup(store, DEFAULT, (), "flink", JOB)))
    thread.start()
    assert fs.entered.wait(2)
    assert not results
    fs.release.set()
    thread.join(2)
    assert results[0].outcome is Outcome.STORAGE_ERROR  # the root itself is missing too


def test_memory_filesystem_through_fsspec_url():
    fs = fsspec.filesystem("memory")
    base = f"/ckpt/flink/{JOB}/checkpoints"
    fs.pipe(f"{base}/chk-3/_metadata", b"m")
    fs.pipe(f"{base}/chk-4/state", b"s")
    result = lookup(open_store("memory://ckpt"), DEFAULT, (), "flink", JOB)
    assert result.path == f"memory://ckpt/flink/{JOB}/checkpoints/chk-3"
    fs.rm("/ckpt", recursive=True)


@pytest.mark.parametrize(
    "template, message",
    [
        ("", "non-empty"),
        ("/data/{job_id}", "start with {root}"),
        ("{root}/{namespace}", "must contain {job_id}"),
        ("{root}/{jobId}", "unknown field {jobId}"),
        ("{root}/{job_id!r}", "no format spec"),
        ("{root}/{job_id:>40}", "no format spec"),
        ("{root}/../{job_id}", "'..'"),
        ("{root}{job_id}", "'/' after {root}"),
        ("{root}/{root}/{job_id}", "name it once"),
        ("{root}/{job_id", "layout"),
    ],
)
def test_bad_layouts_are_refused(template, message):
    with pytest.raises(LayoutError, match=None) as error:
        parse_layout(template)
    assert message in str(error.value)


def test_a_savepoint_layout_needs_no_job_id_level():
    """Flink writes savepoints side by side (`savepoint-<6 hex>-<12 hex>`), never below a job-id directory."""
    assert parse_layout("{root}/savepoints", savepoints=True).suffix == "/savepoints"
    assert parse_layout("{root}", savepoints=True).suffix == ""
    assert parse_layout("{root}/{namespace}/savepoints", savepoints=True).suffix == "/{namespace}/savepoints"
    with pytest.raises(LayoutError, match="'..'"):
        parse_layout("{root}/../savepoints", savepoints=True)


def test_cache_keeps_results_for_ttl():
    cache = LookupCache(ttl=10)
    found = LookupResult(Outcome.FOUND, "/x/chk-1", "checkpoint")
    cache.put("job", found, now=100.0)
    assert cache.get("job", now=109.9) is found
    assert cache.get("job", now=110.0) is None
    assert len(cache) == 0


def test_cache_keeps_only_definite_answers():
    cache = LookupCache(ttl=10)
    for outcome in (Outcome.TIMEOUT, Outcome.STORAGE_ERROR, Outcome.INVALID_JOB_ID):
        cache.put(outcome.value, LookupResult(outcome), now=0.0)
    cache.put("missing", LookupResult(Outcome.NOT_FOUND), now=0.0)
    assert len(cache) == 1
    assert cache.get("missing", now=1.0).outcome is Outcome.NOT_FOUND


def test_cache_is_bounded_and_drops_the_oldest():
    cache = LookupCache(ttl=10, max_entries=2)
    for key in "abc":
        cache.put(key, LookupResult(Outcome.NOT_FOUND), now=0.0)
    assert cache.get("a", now=1.0) is None
    assert cache.get("c", now=1.0) is not None


def test_zero_ttl_disables_the_cache():
    cache = LookupCache(ttl=0)
    cache.put("a", LookupResult(Outcome.FOUND, "/p"), now=0.0)
    assert cache.get("a", now=0.0) is None


def test_savepoints_on_an_object_store_are_listed_by_the_jobs_prefix():
    fs = fsspec.filesystem("memory")
    fs.pipe(f"/sp/savepoint-{JOB.value[:6]}-0123456789ab/_metadata", b"m")
    fs.pipe(f"/sp/savepoint-{OTHER_JOB.value[:6]}-0123456789ab/_metadata", b"m")
    fs.pipe(f"/sp/savepoint-{JOB.value[:6]}-ba9876543210/state", b"s")  # no _metadata: in progress
    store = open_store("memory://sp")
    assert store.real_root is None  # no links: listed by prefix, not directory by directory
    assert newest_savepoint(store, "/sp", JOB)[0] == f"savepoint-{JOB.value[:6]}-0123456789ab"
    assert newest_savepoint(store, "/sp", JobId("ba" * 16)) is None
    fs.rm("/sp", recursive=True)


def test_a_symlink_loop_under_one_checkpoint_skips_that_checkpoint(tmp_path):
    """A loop (ELOOP when its `_metadata` is looked up) is one unusable entry, not a storage failure."""
    directory = job_dir(tmp_path)
    checkpoint(directory, 1)
    looping = directory / "chk-9"
    looping.symlink_to(looping)  # chk-9 -> chk-9
    inner = checkpoint(directory, 7, completed=False)
    (inner / "_metadata").symlink_to(inner / "_metadata")  # a looping _metadata inside a real directory
    result = find(tmp_path)
    assert result.outcome is Outcome.FOUND, result.reason
    assert result.path.endswith("/chk-1")
