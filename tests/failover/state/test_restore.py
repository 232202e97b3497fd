"""The newest restorable state over real directory trees: checkpoints and savepoints with controlled completion
times, the workload's own directories, symbolic links at every level, rotated job ids and the named fallbacks."""

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from failover.state.checkpoints import FLINK_NATIVE_LAYOUT, KARMADA_EXAMPLE_LAYOUT, Outcome, open_store, parse_layout
from failover.state.jobid import JobId
from failover.state.restore import (
    OTHER_LABEL,
    PREVIOUS_JOB_ID,
    UPGRADE_SAVEPOINT_PATH,
    RestoreQuery,
    carried_path_belongs,
    find_restore_point,
)
from failover.state.state_roots import DirectoryRefused, locate, parse_state_url
from tests.hostile_strings import HOSTILE_STRINGS

JOB = JobId("0123456789abcdef0123456789abcdef")
ROTATED = JobId("89abcdef0123456789abcdef01234567")  # the id the operator gave the run that never checkpointed
OTHER = JobId("fedcba9876543210fedcba9876543210")
NATIVE = (parse_layout(FLINK_NATIVE_LAYOUT),)
KARMADA = (parse_layout(KARMADA_EXAMPLE_LAYOUT),)


def state(directory: Path, name: str, completed_at: float | None = 1000.0) -> Path:
    """A checkpoint or savepoint directory; complete (with `_metadata` written at `completed_at`) unless None."""
    path = directory / name
    path.mkdir(parents=True)
    (path / "state-file").write_bytes(b"x")
    if completed_at is not None:
        (path / "_metadata").write_bytes(b"meta")
        os.utime(path / "_metadata", (completed_at, completed_at))
    return path


def savepoint_name(job: JobId, suffix: str = "a1b2c3d4e5f6") -> str:
    return f"savepoint-{job.value[:6]}-{suffix}"


def find(root: Path, *job_ids: JobId, layouts=NATIVE, savepoint_layouts=(), extra_roots=(), **query):
    roots = (open_store(str(root)), *(open_store(str(extra)) for extra in extra_roots))
    return find_restore_point(roots, layouts, savepoint_layouts, RestoreQuery("flink", job_ids or (JOB,), **query))


# The workload's own directories and the newest restorable state.


def test_native_layout_under_the_workloads_own_checkpoint_dir(tmp_path):
    state(tmp_path / "team-a" / "checkpoints" / JOB.value, "chk-7")
    result = find(tmp_path, checkpoint_dir=f"file://{tmp_path}/team-a/checkpoints")
    assert result.path == f"file://{tmp_path}/team-a/checkpoints/{JOB}/chk-7"
    assert (result.source, result.job_id, result.fallback) == ("checkpoint", JOB.value, "")


def test_karmada_example_layout_stays_available_by_configuration(tmp_path):
    state(tmp_path / "flink" / JOB.value / "checkpoints", "chk-3")
    assert find(tmp_path, layouts=KARMADA).path == f"{tmp_path}/flink/{JOB}/checkpoints/chk-3"
    assert find(tmp_path).outcome is Outcome.NOT_FOUND


def test_savepoint_on_deletion_wins_over_an_older_checkpoint(tmp_path):
    state(tmp_path / "c" / JOB.value, "chk-41", completed_at=1000)
    state(tmp_path / "s", savepoint_name(JOB), completed_at=1060)  # written when the old copy was deleted
    state(tmp_path / "s", savepoint_name(OTHER, "ffffffffffff"), completed_at=5000)  # another job's: never
    result = find(tmp_path, checkpoint_dir=f"{tmp_path}/c", savepoint_dir=f"{tmp_path}/s")
    assert (result.path, result.source) == (f"{tmp_path}/s/{savepoint_name(JOB)}", "savepoint")


def test_a_newer_checkpoint_wins_over_an_older_savepoint(tmp_path):
    state(tmp_path / "c" / JOB.value, "chk-41", completed_at=2000)
    state(tmp_path / "s", savepoint_name(JOB), completed_at=1000)
    assert find(tmp_path, checkpoint_dir=f"{tmp_path}/c", savepoint_dir=f"{tmp_path}/s").source == "checkpoint"


def test_only_flinks_savepoint_names_of_the_job_count(tmp_path):
    for name in (
        f"savepoint-{JOB.value[:6]}",
        f"savepoint-{JOB.value[:6]}-xyz",
        f"savepoint-{JOB.value[:5]}-a1b2c3d4e5f6",
        f"savepoint-{JOB.value[:6]}-A1B2C3D4E5F6",
    ):
        state(tmp_path / "s", name, completed_at=9000)
    state(tmp_path / "s", savepoint_name(JOB, "000000000000"), completed_at=10)
    state(tmp_path / "s", savepoint_name(JOB, "111111111111"), completed_at=None)  # in progress
    result = find(tmp_path, savepoint_dir=f"{tmp_path}/s")
    assert result.path == f"{tmp_path}/s/{savepoint_name(JOB, '000000000000')}"


def test_savepoints_where_the_operators_defaults_put_them(tmp_path):
    """The workload names only its checkpoint dir; its savepoints go to the operator's default savepoint dir, which
    `savepoint.savepointLayouts: ["{root}/savepoints"]` names: Flink's own layout, no job-id level."""
    state(tmp_path / "c" / JOB.value, "chk-41", completed_at=1000)
    state(tmp_path / "savepoints", savepoint_name(JOB), completed_at=1060)  # savepoint-on-deletion
    state(tmp_path / "savepoints", savepoint_name(OTHER, "ffffffffffff"), completed_at=5000)
    layouts = (parse_layout("{root}/savepoints", savepoints=True),)
    result = find(tmp_path, checkpoint_dir=f"{tmp_path}/c", savepoint_layouts=layouts)
    assert (result.path, result.source) == (f"{tmp_path}/savepoints/{savepoint_name(JOB)}", "savepoint")
    assert find(tmp_path, checkpoint_dir=f"{tmp_path}/c").path == f"{tmp_path}/c/{JOB}/chk-41"


def test_a_shared_savepoint_prefix_is_the_known_limit(tmp_path):
    """Two jobs whose ids share the first 6 hex digits, one savepoint directory: the names and `_metadata` carry
    nothing else of the job id, so the newer savepoint of either is taken and `inject` lists both (docs/restore.md,
    "Two jobs, one savepoint prefix"). A workload with a savepoint directory of its own is never confused."""
    twin = JobId(JOB.value[:6] + "f" * 26)
    state(tmp_path / "c" / JOB.value, "chk-41", completed_at=1000)
    state(tmp_path / "s", savepoint_name(JOB), completed_at=1060)
    state(tmp_path / "s", savepoint_name(twin, "ffffffffffff"), completed_at=2000)
    result = find(tmp_path, checkpoint_dir=f"{tmp_path}/c", savepoint_dir=f"{tmp_path}/s")
    assert result.path == f"{tmp_path}/s/{savepoint_name(twin, 'ffffffffffff')}"
    assert f"{tmp_path}/c/{JOB}/chk-41" in {candidate.path for candidate in result.candidates}


def test_create_subdir_off_compares_checkpoints_by_time_across_runs(tmp_path):
    # Without the <jobId> level every run counts from chk-1 again: chk-50 of an old run is older than chk-3 now.
    state(tmp_path / "c", "chk-50", completed_at=1000)
    state(tmp_path / "c", "chk-3", completed_at=2000)
    result = find(tmp_path, checkpoint_dir=f"{tmp_path}/c", per_job_checkpoints=False)
    assert result.path == f"{tmp_path}/c/chk-3"


# Rotated job ids: the fallbacks, each named.


def test_a_rotated_job_id_falls_back_to_the_previous_job_id(tmp_path):
    state(tmp_path / JOB.value, "chk-12", completed_at=1000)
    result = find(tmp_path, ROTATED, previous_job_ids=(JOB,))
    assert result.path == f"{tmp_path}/{JOB}/chk-12"
    assert (result.fallback, result.job_id) == (PREVIOUS_JOB_ID, JOB.value)


def test_a_rotated_job_id_falls_back_to_the_failed_runs_start_path(tmp_path):
    start = state(tmp_path / "s", savepoint_name(JOB), completed_at=1000)
    result = find(tmp_path, ROTATED, upgrade_savepoint_path=f"{start}/_metadata")
    # Handed on as the operator recorded it: Flink restores from a state directory or its `_metadata` alike.
    assert (result.path, result.fallback) == (f"{start}/_metadata", UPGRADE_SAVEPOINT_PATH)


def test_the_newest_fallback_wins(tmp_path):
    start = state(tmp_path / "s", savepoint_name(OTHER), completed_at=1000)
    state(tmp_path / JOB.value, "chk-30", completed_at=3000)  # the previous run kept checkpointing after it
    result = find(tmp_path, ROTATED, previous_job_ids=(JOB,), upgrade_savepoint_path=str(start))
    assert (result.path, result.fallback) == (f"{tmp_path}/{JOB}/chk-30", PREVIOUS_JOB_ID)


def test_the_preserved_id_wins_over_any_fallback(tmp_path):
    state(tmp_path / ROTATED.value, "chk-1", completed_at=100)
    state(tmp_path / JOB.value, "chk-99", completed_at=9000)
    result = find(tmp_path, ROTATED, previous_job_ids=(JOB,))
    assert (result.job_id, result.fallback) == (ROTATED.value, "")


def test_an_id_from_another_trigger_label_is_named(tmp_path):
    state(tmp_path / OTHER.value, "chk-4")
    result = find(tmp_path, JOB, OTHER)
    assert (result.job_id, result.fallback) == (OTHER.value, OTHER_LABEL)


@pytest.mark.parametrize(
    "start",
    ["/etc", "s3://other-bucket/savepoints/savepoint-012345-a1b2c3d4e5f6", "relative/savepoint", "file:///../etc"],
)
def test_a_start_path_outside_the_roots_is_not_used_and_says_so(tmp_path, start):
    result = find(tmp_path, ROTATED, upgrade_savepoint_path=start)
    assert result.outcome is Outcome.NOT_FOUND
    assert f"{UPGRADE_SAVEPOINT_PATH} not used" in result.reason


def test_an_incomplete_start_path_is_not_used(tmp_path):
    start = state(tmp_path / "s", savepoint_name(JOB), completed_at=None)
    result = find(tmp_path, ROTATED, upgrade_savepoint_path=str(start))
    assert result.outcome is Outcome.NOT_FOUND and "no complete state" in result.reason


# Bad input in the workload's configuration: refused with the reason, never looked up outside the roots.


@pytest.mark.parametrize(
    "directory, reason",
    [
        ("checkpoints", "relative"),
        ("./checkpoints", "relative"),
        ("{root}/../other-tenant", "'..'"),
        ("{root}/a/../../etc", "'..'"),
        ("{root}//a", "empty"),
        ("{other}", "outside the allowed roots"),
        ("/etc", "outside the allowed roots"),
        ("hdfs://namenode/flink", "scheme is not that of any allowed root"),
        ("s3://user:secret@bucket/checkpoints", "carries credentials"),
        ("{root}/a%2F..%2Fb", "'%'"),
        ("{root}/a?x=1", "'?'"),
        ("{root}/a b", "whitespace"),
        ("file://otherhost{root}", "names a host"),
        ("", "non-empty"),
    ],
)
def test_hostile_checkpoint_dirs_are_refused_with_the_reason(tmp_path, directory, reason):
    root, other = tmp_path / "tenant-a", tmp_path / "tenant-b"
    state(other / JOB.value, "chk-1")
    root.mkdir()
    result = find(root, checkpoint_dir=directory.format(root=root, other=other) or " ")
    assert result.outcome is Outcome.REFUSED_DIRECTORY, result
    assert reason in result.reason
    assert "secret" not in result.reason


def test_a_second_allowed_root_is_honoured(tmp_path):
    state(tmp_path / "shared" / JOB.value, "chk-2")
    (tmp_path / "main").mkdir()
    result = find(tmp_path / "main", checkpoint_dir=f"{tmp_path}/shared", extra_roots=(tmp_path / "shared",))
    assert result.path == f"{tmp_path}/shared/{JOB}/chk-2"


def test_s3_spellings_are_one_family_and_the_workloads_spelling_is_kept():
    root = open_store("memory://bucket/flink")  # only the URL is compared here; no I/O
    assert parse_state_url("s3a://bucket/flink/c") == parse_state_url("s3://bucket/flink/c")
    assert parse_state_url("file:/mnt/c") == parse_state_url("/mnt/c") == parse_state_url("file:///mnt/c")
    assert locate("memory://bucket/flink/team/c", (root,)).relative == "/team/c"
    with pytest.raises(DirectoryRefused):
        locate("memory://bucket/flinkother/c", (root,))  # a shared prefix is not a parent directory


# Symbolic links anywhere on the path must not lead outside the root.


@pytest.mark.parametrize("level", ["namespace", "job", "checkpoints", "chk", "metadata"])
def test_a_link_at_any_level_does_not_lead_outside_the_root(tmp_path, level):
    root, outside = tmp_path / "root", tmp_path / "outside"
    # Outside: a complete, newer checkpoint tree of the same job, reachable only through the link.
    outside_tree = outside / "flink" / JOB.value / "checkpoints"
    state(outside_tree, "chk-99", completed_at=9000)
    inside = root / "flink" / JOB.value / "checkpoints"
    state(inside, "chk-1", completed_at=1000)
    link_at = {
        "namespace": (root / "flink", outside / "flink"),
        "job": (root / "flink" / JOB.value, outside_tree.parent),
        "checkpoints": (inside, outside_tree),
        "chk": (inside / "chk-99", outside_tree / "chk-99"),
        "metadata": (inside / "chk-98" / "_metadata", outside_tree / "chk-99" / "_metadata"),
    }
    link, target = link_at[level]
    if link.exists():
        import shutil

        shutil.rmtree(link)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)
    result = find(root, layouts=KARMADA)
    assert result.path is None or result.path == f"{root}/flink/{JOB}/checkpoints/chk-1", result
    assert "outside" not in (result.path or "") and "chk-99" not in (result.path or "")


def test_a_workload_dir_reached_through_a_link_is_not_searched(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    state(outside / JOB.value, "chk-5")
    root.mkdir()
    (root / "team").symlink_to(outside)
    result = find(root, checkpoint_dir=f"{root}/team")
    assert result.outcome is Outcome.NOT_FOUND


def test_a_link_inside_the_savepoint_dir_is_not_followed(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    target = state(outside, savepoint_name(JOB), completed_at=9000)
    (root / "s").mkdir(parents=True)
    (root / "s" / savepoint_name(JOB)).symlink_to(target)
    assert find(root, savepoint_dir=f"{root}/s").outcome is Outcome.NOT_FOUND


# A path carried forward from oldObject.


def test_a_carried_path_is_kept_only_inside_the_roots_and_for_the_same_job(tmp_path):
    roots = (open_store(str(tmp_path)),)
    query = RestoreQuery("flink", (JOB,), previous_job_ids=(ROTATED,))
    assert carried_path_belongs(f"{tmp_path}/{JOB}/chk-3", roots, query)
    assert carried_path_belongs(f"{tmp_path}/{ROTATED}/chk-3", roots, query)
    assert carried_path_belongs(f"{tmp_path}/s/{savepoint_name(JOB)}/_metadata", roots, query)
    assert not carried_path_belongs(f"{tmp_path}/{OTHER}/chk-3", roots, query)  # another job's state
    assert not carried_path_belongs(f"/elsewhere/{JOB}/chk-3", roots, query)  # outside the root
    assert not carried_path_belongs(f"{tmp_path}/../{JOB}/chk-3", roots, query)
    assert not carried_path_belongs("s3://user:pw@bucket/" + JOB.value, roots, query)


def test_a_carried_path_through_a_link_is_not_kept(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    state(outside / JOB.value, "chk-3")
    root.mkdir()
    (root / "c").symlink_to(outside)
    assert not carried_path_belongs(f"{root}/c/{JOB}/chk-3", (open_store(str(root)),), RestoreQuery("flink", (JOB,)))


def test_a_flat_directory_carried_path_belongs_to_its_workload(tmp_path):
    query = RestoreQuery("flink", (JOB,), checkpoint_dir=f"{tmp_path}/c", per_job_checkpoints=False)
    roots = (open_store(str(tmp_path)),)
    assert carried_path_belongs(f"{tmp_path}/c/chk-3", roots, query)
    assert not carried_path_belongs(f"{tmp_path}/d/chk-3", roots, query)


# Any text in the workload's configuration: an answer, never an exception, never a path outside the root.


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    checkpoint_dir=st.one_of(st.sampled_from(HOSTILE_STRINGS), st.text(max_size=80)),
    savepoint_dir=st.one_of(st.none(), st.sampled_from(HOSTILE_STRINGS), st.text(max_size=80)),
    start=st.one_of(st.none(), st.sampled_from(HOSTILE_STRINGS)),
    flat=st.booleans(),
)
def test_any_configured_directory_gets_an_answer_inside_the_root(tmp_path, checkpoint_dir, savepoint_dir, start, flat):
    root = tmp_path / "root"
    if not root.exists():
        state(root / JOB.value, "chk-1")
    outside = tmp_path / "outside"
    if not outside.exists():
        state(outside / JOB.value, "chk-9", completed_at=9999)
    query = RestoreQuery(
        "flink",
        (JOB,),
        checkpoint_dir=checkpoint_dir or None,
        savepoint_dir=savepoint_dir,
        per_job_checkpoints=not flat,
        upgrade_savepoint_path=start,
    )
    result = find_restore_point((open_store(str(root)),), NATIVE, (), query)
    assert result.outcome in (Outcome.FOUND, Outcome.NOT_FOUND, Outcome.REFUSED_DIRECTORY)
    if result.path is not None:
        assert parse_state_url(result.path).segments[: len(root.parts) - 1] == root.parts[1:]
    assert carried_path_belongs(checkpoint_dir, (open_store(str(root)),), query) in (True, False)
