"""How long a real Flink restore takes, by state size and state backend, up to the first checkpoint the restored job
completes: the keyed-counter probe of the real-Flink tier (flink-probe/, tests/flink_job.py), each key carrying a
random payload so the state has the size asked for, restored from its last checkpoint.

    python bench/flink_restore.py                 # Flink 2.2.0; every backend below; 1 MiB .. 1 GiB; NO_CLAIM
    python bench/flink_restore.py --quick         # 1 MiB and 10 MiB only
    python bench/flink_restore.py --backends rocksdb --sizes 1G --keys 1000000   # 1 KiB a key: a slower fill
    python bench/flink_restore.py --backends rocksdb --sizes 1G --claim-modes NO_CLAIM,CLAIM --json restore.json
    python bench/flink_restore.py --version 1.20.3 --backends hashmap,rocksdb
    python bench/flink_restore.py --storage s3    # checkpoints in a bucket of moto's S3 server on this machine

Per backend and state size, three JVMs (and one more per extra claim mode), each a MiniCluster of one slot:
1. fill: the job writes KEYS keys, each a count and a payload of SIZE / KEYS random bytes, waits until every key has
   been written, then for one checkpoint taken after that, and is cancelled (checkpoints retained);
2. fresh: the same job with no state and no payload, the floor of this row (MiniCluster start, first checkpoint);
3. restored: the job restored from the fill's last checkpoint (`execution.state-recovery.path`, claim mode NO_CLAIM
   unless asked), cancelled after its first completed checkpoint.
Printed per row: the checkpoint's state size (Flink's own `_metadata`), and the seconds from the JVM's start to the
job RUNNING, to every key's restored state seen by the job (count and payload read back; the fresh job: every key
seen), and to the first checkpoint completed after the restore (its barrier at the counter and its completion
notified), with that checkpoint's own size (what it wrote: a full checkpoint writes the whole state) and the
restored job's times as ratios to the fresh job's. Then, per backend and claim mode, a straight line through the
times from RUNNING to the first checkpoint by state size (least squares): seconds = fixed + per GiB x size (from
RUNNING, not from the JVM's start: the MiniCluster's start-up is the same with or without state).
Checkpoints every `--interval` (1 s), so the first one comes as soon as the tasks run; a deployment's interval adds
up to one interval (docs/benchmarks.md, "Restore time and the first checkpoint"). 10,000 keys by default, so 1 GiB
is 10,000 payloads of 105 KiB: the fill writes it in seconds, and the per-key costs (one record per key, a heap
object per key) stay small beside the bytes; `--keys` for more, smaller values. The checkpoints go to a local
directory the fill has just written, so the restore reads mostly from the page cache: Flink's own work per GiB, no
transfer. `--storage s3` puts them in a bucket of an S3-protocol server instead (moto, in memory, on the same cores),
read and written through Flink's flink-s3-fs-hadoop as from an object store. Exit status is non-zero only when the
harness fails, never because of a number.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import boto3
import fsspec

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.flink_job import Probe, Run, build_probes, operator_configuration  # noqa: E402
from tests.processes import die_with_parent, free_port  # noqa: E402

MIB = 1 << 20
COMMON = {"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION"}
# The restored job's first checkpoint must still be there when the job is cancelled: it can complete while the job
# still reads its keys, and more follow before the job is cancelled.
RETAINED = {"execution.checkpointing.num-retained": "20"}
# What a FlinkDeployment's flinkConfiguration says per backend. ForSt (Flink 2.x) with the probe's synchronous keyed
# state keeps its files in a local directory like RocksDB (`state.backend.forst.sync.enforce-local`, true by
# default); "forst-remote" turns that off, so its SST files live in `state.backend.forst.primary-dir`, by default the
# checkpoint directory: ForSt's disaggregated layout.
BACKENDS: dict[str, dict[str, str]] = {
    "hashmap": {"state.backend.type": "hashmap", "execution.checkpointing.incremental": "false"},
    "rocksdb": {"state.backend.type": "rocksdb", "execution.checkpointing.incremental": "true"},
    "forst": {"state.backend.type": "forst", "execution.checkpointing.incremental": "true"},
    "forst-remote": {
        "state.backend.type": "forst",
        "execution.checkpointing.incremental": "true",
        "state.backend.forst.sync.enforce-local": "false",
    },
}
FLINK2_ONLY = {"forst", "forst-remote"}
# Both 1.20 and 2.x read it (1.20 also its older name, execution.savepoint-restore-mode).
CLAIM_MODE_KEY = "execution.state-recovery.claim-mode"
WAIT_SECONDS = 1800  # the probe's bound on each wait: a 1 GiB heap state on a loaded machine takes minutes
TIMEOUT = 3600  # the bound on one JVM


@dataclass
class Times:
    """One job's seconds from its JVM's start (the probe's clock)."""

    running: float
    seen: float  # every key's state seen (restored) or every key written (fresh, fill)
    first_checkpoint_barrier: float
    first_checkpoint_done: float
    first_checkpoint_id: int
    first_checkpoint_bytes: int = 0  # what the first checkpoint wrote itself (_metadata's checkpointed size)
    first_checkpoint_full_bytes: int = 0  # the whole state it stands for (_metadata's state size)


@dataclass
class Row:
    backend: str
    size: int  # asked for
    keys: int
    payload_bytes: int
    state_bytes: int  # the restored checkpoint's state size (_metadata)
    checkpoint_id: int
    fill_seconds: float  # the fill job: every key written, seconds from its JVM's start
    fresh: Times
    restored: dict[str, Times] = field(default_factory=dict)  # by claim mode


def parse_size(text: str) -> int:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([KMG]?)(?:i?B)?", text.strip(), re.IGNORECASE)
    if not match:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 1M, 100M, 1G)")
    return int(float(match[1]) * {"": 1, "K": 1 << 10, "M": MIB, "G": 1 << 30}[match[2].upper()])


def human(size: float) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", MIB), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.3g} {unit}"
    return f"{size:.0f} B"


def first_checkpoint(run: Run) -> tuple[int, float, float]:
    """The first checkpoint the run completed: its id, the seconds its barrier reached the counter, its completion."""
    checkpoint_id, barrier, done = run.event("checkpoints")["completed"][0]
    return int(checkpoint_id), float(barrier), float(done)


@dataclass
class Storage:
    """Where the checkpoints go: a directory URL (file:// or s3://), the Flink options that reach it, and an fsspec
    view of it for the runner."""

    checkpoints: str
    flink: dict[str, str]
    fs: Any


def newest_checkpoint(storage: Storage, job_id: str) -> str:
    """The URL of the newest checkpoint of a job that Flink completed (its `_metadata` written)."""
    directory = f"{storage.checkpoints}/{job_id}"
    done = [found.rstrip("/").split("/")[-2] for found in storage.fs.glob(f"{directory}/chk-*/_metadata")]
    if not done:
        raise SystemExit(f"no completed checkpoint in {directory}")
    return f"{directory}/{max(done, key=lambda name: int(name[4:]))}"


def measure(
    probe: Probe,
    backend: str,
    size: int,
    keys: int,
    claim_modes: list[str],
    interval: str,
    work: Path,
    storage: Storage,
) -> Row:
    payload = max(8, size // keys)
    flink_configuration = {
        **COMMON,
        **BACKENDS[backend],
        **storage.flink,
        "execution.checkpointing.interval": interval,
        "execution.checkpointing.dir": storage.checkpoints,
        "io.tmp.dirs": str(work / "tmp"),  # RocksDB's and ForSt's local files, removed with the work directory
    }
    # A heap state lives on the JVM's heap, and a restore reads it whole before the old copy is collected.
    heap_mib = 512 + (3 * size // MIB if backend == "hashmap" else 0)
    jvm = [f"-Xmx{heap_mib}m"]

    def run(name: str, restore: str | None, steps: list[str], payload_bytes: int, extra: dict[str, str]) -> Run:
        config = operator_configuration({**flink_configuration, **extra}, {}, uuid.uuid4().hex, restore)
        expected = work / f"expected-{name}"  # each run its own: "chk:1" is then this run's first checkpoint
        return probe.run(
            config,
            work / name,
            expected,
            steps,
            keys=keys,
            rate=0,
            timeout=TIMEOUT,
            payload_bytes=payload_bytes,
            wait_seconds=WAIT_SECONDS,
            jvm=jvm,
        )

    (work / "tmp").mkdir()
    filled = run("fill", None, ["filled", "chk:1", "cancel"], payload, {})
    path = newest_checkpoint(storage, filled.event("submitted")["jobId"])
    loaded = probe.metadata(storage.flink, path)[path]
    if "error" in loaded:
        raise SystemExit(f"the fill's checkpoint {path} cannot be read: {loaded['error']}")
    fresh = run("fresh", None, ["filled", "chk:1", "cancel"], 0, RETAINED)
    row = Row(
        backend=backend,
        size=size,
        keys=keys,
        payload_bytes=payload,
        state_bytes=int(loaded["stateSize"]),
        checkpoint_id=int(loaded["checkpointId"]),
        fill_seconds=float(filled.event("filled")["at"]),
        fresh=times(probe, fresh, float(fresh.event("filled")["at"]), storage),
    )
    # NO_CLAIM first: a CLAIM restore owns the checkpoint afterwards and may delete it.
    for mode in sorted(claim_modes, key=lambda mode: mode != "NO_CLAIM"):
        restored = run(f"restored-{mode}", path, ["chk:1", "cancel"], payload, {**RETAINED, CLAIM_MODE_KEY: mode})
        _, counts = restored.restored()
        if len(counts) != keys:
            raise SystemExit(f"{backend} {human(size)}: the restore brought back {len(counts)} of {keys} keys")
        row.restored[mode] = times(probe, restored, restored.restore_seconds(), storage)
    return row


def times(probe: Probe, run: Run, seen: float, storage: Storage) -> Times:
    checkpoint_id, barrier, done = first_checkpoint(run)
    path = f"{storage.checkpoints}/{run.event('submitted')['jobId']}/chk-{checkpoint_id}"
    loaded = probe.metadata(storage.flink, path)[path]
    if "error" in loaded:
        raise SystemExit(f"the run's first checkpoint cannot be read (more than {RETAINED} since?): {loaded['error']}")
    return Times(
        running=float(run.event("running")["seconds"]),
        seen=seen,
        first_checkpoint_barrier=barrier,
        first_checkpoint_done=done,
        first_checkpoint_id=checkpoint_id,
        first_checkpoint_bytes=int(loaded["checkpointedSize"]),
        first_checkpoint_full_bytes=int(loaded["stateSize"]),
    )


HEADER = (
    "| backend | claim | state (`_metadata`) | keys × payload | RUNNING | every key's state seen | first checkpoint:"
    " barrier | first checkpoint: completed | its size written / whole | RUNNING → 1st chk (barrier → done) |\n"
    "|---|---|---|---|---|---|---|---|---|---|"
)


def table_rows(row: Row) -> list[str]:
    """Markdown rows: the restored job per claim mode, then its floor (the fresh job); times in seconds from the
    JVM's start, the restored job's with its ratio to the floor."""
    fresh = row.fresh
    lines = []
    for mode, restored in row.restored.items():
        lines.append(
            f"| {row.backend} | {mode} | {human(row.state_bytes)} | {row.keys:,} × {human(row.payload_bytes)} | "
            f"{_ratio(restored.running, fresh.running)} | {_ratio(restored.seen, fresh.seen)} | "
            f"{_ratio(restored.first_checkpoint_barrier, fresh.first_checkpoint_barrier)} | "
            f"{_ratio(restored.first_checkpoint_done, fresh.first_checkpoint_done)} | "
            f"{human(restored.first_checkpoint_bytes)} / {human(restored.first_checkpoint_full_bytes)} | "
            f"{restored.first_checkpoint_done - restored.running:.1f} s "
            f"({restored.first_checkpoint_done - restored.first_checkpoint_barrier:.1f} s) |"
        )
    lines.append(
        f"| {row.backend} | fresh (floor) | none | {row.keys:,} × 0 | {fresh.running:.1f} | {fresh.seen:.1f} | "
        f"{fresh.first_checkpoint_barrier:.1f} | {fresh.first_checkpoint_done:.1f} | "
        f"{human(fresh.first_checkpoint_bytes)} / {human(fresh.first_checkpoint_full_bytes)} | "
        f"{fresh.first_checkpoint_done - fresh.running:.1f} s "
        f"({fresh.first_checkpoint_done - fresh.first_checkpoint_barrier:.1f} s) |"
    )
    return lines


def _ratio(value: float, floor: float) -> str:
    return f"{value:.1f} ({value / floor:.1f}×)" if floor > 0 else f"{value:.1f}"


# Below this the restore hides in the start-up's spread (docs/benchmarks.md: 0.6-3.9 s at 100 MiB and under, any
# backend), so a line through such sizes alone (--quick) says nothing per GiB.
NOISE_GIB = 0.5


def fit(rows: list[Row]) -> list[str]:
    """Per backend and claim mode, seconds from the restored job RUNNING to its first completed checkpoint as fixed +
    per GiB x state size (least squares over the sizes), with the largest miss. From RUNNING, not from the JVM's
    start: the MiniCluster's start-up is the same with or without state and moves by seconds with the machine's load;
    it is given beside, as the fresh job's."""
    lines = []
    for backend in dict.fromkeys(row.backend for row in rows):
        mine = [row for row in rows if row.backend == backend]
        for mode in dict.fromkeys(mode for row in mine for mode in row.restored):
            points = [(row.state_bytes / (1 << 30), _to_first_checkpoint(row.restored[mode])) for row in mine]
            if len(points) < 2:
                continue
            mean_x = sum(x for x, _ in points) / len(points)
            mean_y = sum(y for _, y in points) / len(points)
            spread = sum((x - mean_x) ** 2 for x, _ in points)
            slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / spread if spread else 0.0
            fixed = mean_y - slope * mean_x
            miss = max(abs(y - fixed - slope * x) for x, y in points)
            running = [row.fresh.running for row in mine]
            floors = [_to_first_checkpoint(row.fresh) for row in mine]
            sign = "-" if slope < 0 else "+"
            largest = max(x for x, _ in points)
            caveat = (
                f" (states up to {human(largest * (1 << 30))} only: the slope is the start-up's noise, not a cost "
                "per GiB)"
                if largest < NOISE_GIB
                else ""
            )
            lines.append(
                f"{backend} {mode}: RUNNING to the first checkpoint after the restore ≈ {fixed:.1f} s {sign} "
                f"{abs(slope):.1f} s/GiB (largest miss {miss:.1f} s){caveat}; the fresh job: RUNNING "
                f"{min(running):.1f}-{max(running):.1f} s after the JVM's start, its first checkpoint "
                f"{min(floors):.1f}-{max(floors):.1f} s after that"
            )
    return lines


def _to_first_checkpoint(times: Times) -> float:
    return times.first_checkpoint_done - times.running


StorageOf = Any  # a callable: the row's work directory -> a context manager of its Storage


@contextmanager
def local() -> Iterator[StorageOf]:
    """Checkpoints in the row's work directory (removed with it)."""

    @contextmanager
    def of(work: Path) -> Iterator[Storage]:
        yield Storage(f"file://{work / 'state' / 'checkpoints'}", {}, fsspec.filesystem("file"))

    yield of


# moto's S3-protocol server, as tests/storage/conftest.py starts it; its keys and region are moto's test defaults.
S3_KEYS = {"key": "testing", "secret": "testing"}


@contextmanager
def s3_bucket() -> Iterator[StorageOf]:
    """An S3-protocol server (moto, in memory, in its own process on this machine) and one bucket; each row writes
    below its own prefix, removed after the row so the server holds one row's state at a time."""
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    server = Path(sys.executable).with_name("moto_server")
    command = [str(server)] if server.exists() else [sys.executable, "-m", "moto.server"]
    env = {**os.environ, "AWS_ACCESS_KEY_ID": S3_KEYS["key"], "AWS_SECRET_ACCESS_KEY": S3_KEYS["secret"]}
    process = subprocess.Popen(
        [*command, "-H", "127.0.0.1", "-p", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=die_with_parent,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("moto_server did not start") from None
                time.sleep(0.1)
        fs = fsspec.filesystem(
            "s3", endpoint_url=endpoint, client_kwargs={"region_name": "us-east-1"}, skip_instance_cache=True, **S3_KEYS
        )
        bucket = f"flink-restore-{uuid.uuid4().hex[:8]}"
        boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id=S3_KEYS["key"],
            aws_secret_access_key=S3_KEYS["secret"],
        ).create_bucket(Bucket=bucket)  # s3fs's mkdir asks for a location constraint moto refuses in us-east-1
        flink = {
            "s3.endpoint": endpoint,
            "s3.path.style.access": "true",
            "s3.access-key": S3_KEYS["key"],
            "s3.secret-key": S3_KEYS["secret"],
            "s3.endpoint.region": "us-east-1",
        }

        @contextmanager
        def of(work: Path) -> Iterator[Storage]:
            prefix = f"{bucket}/{work.name}"
            try:
                yield Storage(f"s3://{prefix}/checkpoints", flink, fs)
            finally:
                if fs.exists(prefix):
                    fs.rm(prefix, recursive=True)

        yield of
    finally:
        process.terminate()
        process.wait(10)


def load_average() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", default="2.2.0", help="the Flink version (hack/build-flink-probe.sh builds it)")
    parser.add_argument("--backends", default=",".join(BACKENDS), help=f"of {', '.join(BACKENDS)}")
    parser.add_argument("--sizes", default="1M,10M,100M,1G", help="state sizes (binary units)")
    parser.add_argument("--keys", type=int, default=10_000, help="keys; each key's payload is SIZE / KEYS bytes")
    parser.add_argument("--claim-modes", default="NO_CLAIM", help="NO_CLAIM (the default), CLAIM, or both")
    parser.add_argument("--interval", default="1s", help="execution.checkpointing.interval of every run")
    parser.add_argument("--quick", action="store_true", help="1 MiB and 10 MiB only")
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    parser.add_argument(
        "--storage",
        choices=("file", "s3"),
        default="file",
        help="where the checkpoints go: a local directory, or a bucket of an S3-protocol server (moto, started here "
        "on this machine; Flink's flink-s3-fs-hadoop, 2.x only)",
    )
    args = parser.parse_args()
    if args.storage == "s3" and not args.version.startswith("2."):
        parser.error(f"--storage s3: the probe of Flink {args.version} has no S3 file system (flink-probe/pom.xml)")
    backends = [name for name in args.backends.split(",") if name]
    unknown = [name for name in backends if name not in BACKENDS]
    if unknown:
        parser.error(f"unknown backends {unknown}: {', '.join(BACKENDS)}")
    if not args.version.startswith("2."):
        skipped = [name for name in backends if name in FLINK2_ONLY]
        if skipped:
            print(f"Flink {args.version} has no ForSt: {', '.join(skipped)} left out", flush=True)
        backends = [name for name in backends if name not in FLINK2_ONLY]
    sizes = [parse_size(text) for text in ("1M,10M" if args.quick else args.sizes).split(",") if text]
    claim_modes = [mode.strip().upper() for mode in args.claim_modes.split(",") if mode.strip()]

    probe = Probe.of(build_probes(), args.version)
    results: dict[str, Any] = {
        "flink": args.version,
        "keys": args.keys,
        "interval": args.interval,
        "storage": args.storage,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "rows": [],
    }
    print(
        f"Flink {args.version}, {args.keys:,} keys, checkpoints every {args.interval} to {args.storage}; "
        f"seconds from the JVM's start, "
        f"the restored job's in parentheses as a multiple of the fresh job's (the floor); "
        f"load average {load_average()} on {os.cpu_count()} CPUs\n\n{HEADER}",
        flush=True,
    )
    rows: list[Row] = []
    with s3_bucket() if args.storage == "s3" else local() as storage_of:
        for backend in backends:
            for size in sizes:
                before = load_average()
                with tempfile.TemporaryDirectory(prefix="flink-restore-") as work, storage_of(Path(work)) as storage:
                    row = measure(probe, backend, size, args.keys, claim_modes, args.interval, Path(work), storage)
                rows.append(row)
                entry = {**asdict(row), "load_average_before": before, "load_average_after": load_average()}
                results["rows"].append(entry)
                print("\n".join(table_rows(row)), flush=True)
                if args.json:
                    args.json.write_text(json.dumps(results, indent=2))
    results["finished"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    results["fit"] = fit(rows)
    loads = [entry["load_average_before"][0] for entry in results["rows"]]
    loads += [entry["load_average_after"][0] for entry in results["rows"]]
    print("\n" + "\n".join(results["fit"]))
    print(f"\nload average (1 min) before and after the rows: {min(loads):.1f}-{max(loads):.1f}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
