"""Failover measured in records: what the tests whose member copies run a real Flink job (``FlinkJob.run_flink``)
share. The old job dies by kill -9 at any moment of a checkpoint interval; the new copy's job is started from its own
spec, with the restore path the relay injected; then the records decide: Flink restored the counts the picked
checkpoint held, no record is lost, and what is counted twice is less than one checkpoint interval."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from pathlib import Path

from tests.flink_job import FLINK_VERSIONS, RunningJob, expected_counts

CHECKPOINT_INTERVAL_SECONDS = 2
# The tier's FlinkDeployment carries this on top of its own flinkConfiguration (FlinkJob.create).
FLINK_CONFIGURATION = {"execution.checkpointing.interval": f"{CHECKPOINT_INTERVAL_SECONDS}s"}
KEYS, RATE = 8, 500  # records per second at most (the probe paces by 1 ms sleeps)
# The tier's FlinkDeployment names its directories with the `state.*` keys, which Flink 1.20 still reads.
FLINK_VERSION = FLINK_VERSIONS[0]


def kill_at_any_moment(job: RunningJob) -> float:
    """kill -9 `job` at a random moment of a checkpoint interval (a node dies when it dies); the wall-clock time."""
    time.sleep(random.uniform(0, CHECKPOINT_INTERVAL_SECONDS))
    killed_at = time.time()
    job.kill()
    return killed_at


def newest_completed(job_dir: Path) -> Path:
    """The newest ``chk-<n>`` with a ``_metadata`` (one Flink completed) that the job wrote."""
    return max((d for d in job_dir.glob("chk-*") if (d / "_metadata").exists()), key=lambda d: int(d.name[4:]))


def one_interval_seconds(job: RunningJob) -> float:
    """One checkpoint interval of `job` as it went at the counter: the longest between two barriers (the snapshot's
    counts written at the barrier), at least the configured interval, plus the longest a checkpoint took from its
    barrier to Flink's notice that it completed, plus half a second of a loaded machine's jitter."""
    barriers = sorted(int(p.name) for p in job.expected_dir.iterdir() if p.name.isdigit())
    at = {n: (job.expected_dir / str(n)).stat().st_mtime for n in barriers}
    gaps = [at[n] - at[m] for m, n in zip(barriers, barriers[1:], strict=False)]
    completion = [(job.run_dir / "completed" / str(n)).stat().st_mtime - at[n] for n in job.completed()]
    return max([CHECKPOINT_INTERVAL_SECONDS, *gaps]) + max(completion) + 0.5


@dataclass
class Recovery:
    checkpoint: int  # the id of the restored checkpoint
    twice: int  # records the old job counted after its barrier, counted again by the new one
    state_age: float  # seconds from that barrier to the kill

    def line(self, what: str, since: str, rto: float, flink_start: float) -> str:
        return (
            f"{what}, real Flink {FLINK_VERSION} (checkpoint every {CHECKPOINT_INTERVAL_SECONDS} s): RPO 0 records "
            f"lost, the restored chk-{self.checkpoint} {self.twice} records / {self.state_age:.2f} s older than the "
            f"kill (counted twice); RTO {rto:.1f} s from {since} to the new job RUNNING ({flink_start:.1f} s of it "
            f"Flink starting from the restored copy)"
        )


def check_records(old: RunningJob, new: RunningJob, restored: Path, killed_at: float) -> Recovery:
    """Assert on the records of the old job (killed at `killed_at`) and of the new one, restored from `restored`."""
    checkpoint = int(restored.name.removeprefix("chk-"))
    first_record, counts = new.restored()
    # Flink restored the counts the picked checkpoint held, and its source went on right after the records they
    # count (aligned checkpoints: state and source position agree).
    assert counts == expected_counts(old.expected_dir, checkpoint)
    assert first_record == sum(counts.values())
    before, after = old.records(), new.records()
    # Nothing lost: the old job counted 0, 1, 2, ... up to its kill, the new one goes on from the checkpoint's
    # position without a gap, and that position is not beyond what the old one had counted.
    assert before == list(range(len(before)))
    assert after == list(range(first_record, first_record + len(after)))
    assert 0 < first_record <= len(before)
    # Counted twice: what the old job counted after the checkpoint's barrier, up to its kill; the kill came before
    # the next checkpoint completed, so within one interval (and the time a checkpoint takes to complete).
    twice = len(before) - first_record
    state_age = killed_at - (old.expected_dir / str(checkpoint)).stat().st_mtime
    bound = one_interval_seconds(old)
    assert 0 <= state_age < bound, f"{twice} records counted twice, state {state_age:.2f} s old, bound {bound:.2f} s"
    return Recovery(checkpoint, twice, state_age)
