"""The real-Flink tier's driver (tests/flink): the probe of flink-probe/ (a keyed-counter job and a `_metadata`
reader), built once per Flink version by hack/build-flink-probe.sh, run in a MiniCluster configured as the Flink
operator configures a job from a FlinkDeployment. Nothing here imports pytest.

The job writes, at every snapshot, the counts that snapshot holds to `expected/<checkpoint id>` (parallelism 1, at the
barrier), and after a restore the counts Flink restored to `<run>/restored`; `Probe metadata` loads a state with
Flink's own `Checkpoints.loadCheckpointMetadata`. Checkpoint ids are one counter along a lineage of restores (Flink
continues from the restored id), so "the newest restorable state" is the largest id Flink can load.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from failover.state.flink_config import flatten_configuration
from tests.processes import die_with_parent

REPO_ROOT = Path(__file__).resolve().parent.parent
BUILD_SCRIPT = REPO_ROOT / "hack" / "build-flink-probe.sh"
# The two generations of directory keys: 1.20 still writes with the `state.*` keys, 2.x only knows
# `execution.checkpointing.*` (failover/state/flink_config.py reads both).
FLINK_VERSIONS = ("1.20.3", "2.2.0")
EXIT_NO_JAVA = 4
# Where the operator puts `spec.job.initialSavepointPath` (StateRecoveryOptions.SAVEPOINT_PATH, Flink 1.20+), and the
# job id it chose (`$internal.pipeline.job-id`, ApplicationReconciler.setJobIdIfNecessary).
RESTORE_PATH_KEY = "execution.state-recovery.path"
JOB_ID_KEY = "$internal.pipeline.job-id"
# A held job is slow (hundreds of records a second) and its start is on a failover test's clock: the client compiler
# only and the serial collector start a MiniCluster sooner (RUNNING after 3.7 s instead of 5.3-7.3 s at load 1-2).
QUICK_START = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


class FlinkUnavailable(RuntimeError):
    """No Java or Maven to build the probe with: a reason to skip locally (never on CI)."""


class ProbeFailed(RuntimeError):
    """The probe exited otherwise than asked; carries its stderr's tail."""


def build_probes(log: Path | None = None) -> Path:
    """The cache directory of hack/build-flink-probe.sh (milliseconds warm; cold, Maven downloads Flink's jars)."""
    with log.open("ab") if log else open(os.devnull, "wb") as progress:
        result = subprocess.run(["bash", str(BUILD_SCRIPT)], stdout=subprocess.PIPE, stderr=progress, text=True)
    if result.returncode == EXIT_NO_JAVA:
        raise FlinkUnavailable("the Flink probe is not built and there is no Java or Maven (hack/build-flink-probe.sh)")
    if result.returncode != 0:
        raise ProbeFailed(f"hack/build-flink-probe.sh exited {result.returncode}" + (f"; log: {log}" if log else ""))
    return Path(result.stdout.strip().splitlines()[-1])


def operator_configuration(
    flink_configuration: Mapping[str, Any],
    defaults: Mapping[str, str],
    job_id: str,
    initial_savepoint_path: str | None,
) -> dict[str, str]:
    """What the operator hands Flink for a FlinkDeployment: its `defaultConfiguration` under the workload's
    `flinkConfiguration`, the job id it chose and `spec.job.initialSavepointPath` as the restore path."""
    config = {**defaults, **flatten_configuration(flink_configuration), JOB_ID_KEY: job_id}
    if initial_savepoint_path:
        config[RESTORE_PATH_KEY] = initial_savepoint_path
    return config


@dataclass
class Run:
    events: list[dict[str, Any]]
    run_dir: Path

    def event(self, name: str) -> dict[str, Any]:
        return next(event for event in self.events if event["event"] == name)

    def restored(self) -> tuple[int, dict[int, int]]:
        """The sequence number the restored source went on from, and each key's count as Flink restored it."""
        return parse_counts(self.event("restored")["report"], header="first")

    def restore_seconds(self) -> float:
        return float(self.event("restored")["seconds"])


def parse_counts(text: str, header: str) -> tuple[int, dict[int, int]]:
    lines = text.strip().splitlines()
    head, value = lines[0].split()
    if head != header:
        raise ValueError(f"expected {header!r}, got {lines[0]!r}")
    counts = {int(key): int(count) for key, count in (line.split() for line in lines[1:])}
    return int(value) if header == "first" else int(value == "true"), counts


def expected_counts(expected_dir: Path, checkpoint_id: int) -> dict[int, int]:
    """The counts the job's snapshot `checkpoint_id` held, as the job wrote them at the barrier."""
    complete, counts = parse_counts((expected_dir / str(checkpoint_id)).read_text(), header="complete")
    if not complete:
        raise ValueError(f"snapshot {checkpoint_id} was taken before every key was seen after a restore")
    return counts


@dataclass
class Probe:
    version: str
    classpath: str

    @classmethod
    def of(cls, cache: Path, version: str) -> Probe:
        directory = cache / version
        jars = (directory / "classpath").read_text().split()
        return cls(version, os.pathsep.join([str(directory / "classes"), *jars]))

    def _command(self, *args: str, jvm: Sequence[str] = ()) -> list[str]:
        return ["java", "-Xmx512m", *jvm, "-cp", self.classpath, "io.failoverrelay.probe.Probe", *args]

    def run(
        self,
        config: Mapping[str, str],
        run_dir: Path,
        expected_dir: Path,
        steps: Sequence[str],
        keys: int,
        rate: int,
        timeout: float = 240,
        payload_bytes: int = 0,
        wait_seconds: int | None = None,
        jvm: Sequence[str] = (),
    ) -> Run:
        """Run the job with exactly `config`; with a last step `crash-in-checkpoint`, kill -9 the JVM while a
        checkpoint is in progress. Returns the events it printed. `payload_bytes`: a payload of that many random
        bytes per key beside its count (a state of keys x payload_bytes); `wait_seconds`: the probe's bound on each
        wait (180 s unless given); `jvm`: more JVM options (a later -Xmx overrides the probe's 512 MB)."""
        run_dir.mkdir(parents=True)
        config_file = run_dir / "flink.properties"
        config_file.write_text(_properties(config))
        options = ["--payload-bytes", str(payload_bytes)] if payload_bytes else []
        options += ["--wait-seconds", str(wait_seconds)] if wait_seconds is not None else []
        args = ["run", *options, str(config_file), str(run_dir), str(expected_dir), str(keys), str(rate), *steps]
        stderr = (run_dir / "stderr").open("wb")
        process = subprocess.Popen(
            self._command(*args, jvm=jvm), stdout=subprocess.PIPE, stderr=stderr, text=True, preexec_fn=die_with_parent
        )
        events: list[dict[str, Any]] = []
        # A JVM that stops printing is killed at the deadline, which also ends the read below.
        watchdog = threading.Timer(timeout, process.kill)
        watchdog.start()
        try:
            assert process.stdout is not None
            for line in process.stdout:
                if line.startswith("{"):
                    events.append(json.loads(line))
                if events and events[-1]["event"] == "blocking":
                    os.kill(process.pid, signal.SIGKILL)  # a crash while the checkpoint is in progress
                    break
            process.wait()
        finally:
            watchdog.cancel()
            stderr.close()
        crashed = bool(events) and events[-1]["event"] == "blocking"  # killed by us, not by the watchdog
        if (process.returncode != (-signal.SIGKILL if crashed else 0)) or not events:
            tail = (run_dir / "stderr").read_text(errors="replace")[-3000:]
            raise ProbeFailed(f"Flink {self.version} probe exited {process.returncode}: {tail}")
        return Run(events, run_dir)

    def start(self, config: Mapping[str, str], run_dir: Path, expected_dir: Path, keys: int, rate: int) -> RunningJob:
        """Start the job with exactly `config` in the background, held until `RunningJob.kill`, each record it counts
        written to `<run_dir>/records`: the job of one member copy (tests/karmada)."""
        run_dir.mkdir(parents=True)
        (run_dir / "records").touch()  # asks the job for its records (Counter)
        config_file = run_dir / "flink.properties"
        config_file.write_text(_properties(config))
        args = ["run", str(config_file), str(run_dir), str(expected_dir), str(keys), str(rate), "hold"]
        with (run_dir / "stderr").open("wb") as stderr:
            process = subprocess.Popen(
                self._command(*args, jvm=QUICK_START),
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                preexec_fn=die_with_parent,
            )
        return RunningJob(process, run_dir, expected_dir)

    def metadata(self, config: Mapping[str, str], *paths: str) -> dict[str, dict[str, Any]]:
        """Each state as Flink's `Checkpoints.loadCheckpointMetadata` loads it (file systems configured from `config`):
        its checkpoint id, or the error."""
        with tempfile.NamedTemporaryFile("w", suffix=".properties") as config_file:
            config_file.write(_properties(config))
            config_file.flush()
            result = subprocess.run(
                self._command("metadata", config_file.name, *paths),
                capture_output=True,
                text=True,
                timeout=120,
                preexec_fn=die_with_parent,
            )
        if result.returncode != 0:
            raise ProbeFailed(f"Probe metadata exited {result.returncode}: {result.stderr[-2000:]}")
        loaded = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
        return {entry["path"]: entry for entry in loaded}


class RunningJob:
    """A job started by `Probe.start`: its events as they come, each stamped with `time.monotonic()` on arrival, its
    records, and a kill -9 (a dead node)."""

    def __init__(self, process: subprocess.Popen[str], run_dir: Path, expected_dir: Path) -> None:
        self.process, self.run_dir, self.expected_dir = process, run_dir, expected_dir
        self.arrived: dict[str, tuple[float, dict[str, Any]]] = {}
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("{"):
                event = json.loads(line)
                self.arrived.setdefault(event["event"], (time.monotonic(), event))

    def wait_event(self, name: str, timeout: float) -> tuple[float, dict[str, Any]]:
        """The event `name` and when it arrived; ProbeFailed with the stderr's tail if the JVM ends without it."""
        deadline = time.monotonic() + timeout
        while name not in self.arrived:
            if self.process.poll() is not None or time.monotonic() > deadline:
                self._reader.join(5)
                if name in self.arrived:
                    break
                tail = (self.run_dir / "stderr").read_text(errors="replace")[-3000:]
                raise ProbeFailed(f"no {name!r} event from the job (exit {self.process.returncode}): {tail}")
            time.sleep(0.05)
        return self.arrived[name]

    @property
    def job_id(self) -> str:
        return str(self.arrived["running"][1]["jobId"])

    def completed(self) -> list[int]:
        """The ids of the checkpoints Flink notified complete so far."""
        return sorted(int(p.name) for p in (self.run_dir / "completed").glob("*") if p.name.isdigit())

    def restored(self) -> tuple[int, dict[int, int]]:
        """As `Run.restored`: the sequence number the restored source went on from, and the counts it restored."""
        return parse_counts(self.wait_event("restored", 120)[1]["report"], header="first")

    def records(self) -> list[int]:
        """The sequence number of every record counted, in order; a line cut by kill -9 is dropped."""
        lines = (self.run_dir / "records").read_text().splitlines(keepends=True)
        return [int(line) for line in lines if line.endswith("\n")]

    def stop_with_savepoint(self, timeout: float = 120) -> str:
        """Stop the job with a savepoint, as the operator does for a savepoint suspend: its path, once the JVM
        ended."""
        (self.run_dir / "stop-with-savepoint").touch()
        _, event = self.wait_event("stopped-with-savepoint", timeout)
        self.process.wait(timeout)
        return str(event["path"])

    def kill(self) -> None:
        """kill -9 the JVM (nothing is flushed, nothing is cancelled: as a node dies)."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self._reader.join(5)


def _properties(config: Mapping[str, str]) -> str:
    """`config` as java.util.Properties reads it back."""
    return "".join(f"{key}={_escape(value)}\n" for key, value in sorted(config.items()))


def _escape(value: str) -> str:
    """A value as java.util.Properties reads it back."""
    return value.replace("\\", "\\\\").replace("\n", "\\n")
