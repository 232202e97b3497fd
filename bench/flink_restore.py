"""How long a real Flink restore takes, by state size: the keyed-counter probe of the real-Flink tier
(flink-probe/, tests/flink_job.py) with RocksDB incremental checkpoints, restored from its last checkpoint.

    python bench/flink_restore.py                          # Flink 2.2.0, 1,000 / 100,000 / 1,000,000 keys
    python bench/flink_restore.py --version 1.20.3 --keys 1000,100000

Per state size, three JVMs: the job fills its keyed state (one counter per key, as fast as it can), checkpoints and is
cancelled (checkpoint retained); then a fresh job with no state, for the floor; then the job restored from that
checkpoint. Printed per size: the checkpoint's state size (Flink's own `_metadata`), the seconds from the JVM's start to
the job submitted (MiniCluster start-up), and to every key's restored count seen by the job (restore plus one record per
key), for the restored and the fresh job. The restore grace (`restoreGraceSeconds`: how long a new copy that is still
restoring is kept rather than failed over again, so that there is exactly one copy) is sized from the difference. Exit
status is non-zero only when the harness fails, never because of a number.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.flink_job import Probe, build_probes, operator_configuration  # noqa: E402

CONFIG = {
    "execution.checkpointing.interval": "1s",
    "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
    "state.backend.type": "rocksdb",
    "execution.checkpointing.incremental": "true",
}


def measure(probe: Probe, keys: int, work: Path) -> dict[str, int | float]:
    root = f"file://{work}/state"
    flink_configuration = {**CONFIG, "execution.checkpointing.dir": f"{root}/checkpoints"}
    expected = work / "expected"

    def run(name: str, restore: str | None, steps: list[str]):
        config = operator_configuration(flink_configuration, {}, uuid.uuid4().hex, restore)
        return probe.run(config, work / name, expected, steps, keys=keys, rate=0, timeout=600)

    filled = run("fill", None, ["chk:3", "cancel"])
    job = filled.event("submitted")["jobId"]
    checkpoints = sorted((work / "state" / "checkpoints" / job).glob("chk-*"), key=lambda p: int(p.name[4:]))
    path = f"file://{checkpoints[-1]}"
    size = probe.metadata({}, path)[path]["stateSize"]
    restored = run("restore", path, ["cancel"])
    first, counts = restored.restored()
    if len(counts) != keys or first != sum(counts.values()):
        raise SystemExit(f"restore of {keys} keys brought back {len(counts)} keys, position {first}")
    fresh = run("fresh", None, ["chk:1", "cancel"])
    return {
        "keys": keys,
        "state_bytes": size,
        "records": first,  # the records the state counted: the source's restored position
        "restored_submitted": restored.event("submitted")["seconds"],
        "restored_all_keys": restored.restore_seconds(),
        "fresh_submitted": fresh.event("submitted")["seconds"],
        "fresh_first_checkpoint": fresh.event("checkpoints")["seconds"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", default="2.2.0")
    parser.add_argument("--keys", default="1000,100000,1000000")
    args = parser.parse_args()
    probe = Probe.of(build_probes(), args.version)
    print(f"Flink {args.version}, RocksDB incremental; seconds from the JVM's start")
    print(
        "keys | records counted | state bytes | restored: submitted | restored: every key seen | fresh: submitted"
        " | fresh: 1st chk"
    )
    for keys in (int(value) for value in args.keys.split(",")):
        with tempfile.TemporaryDirectory() as work:
            row = measure(probe, keys, Path(work))
        print(
            f"{row['keys']:,} | {row['records']:,} | {row['state_bytes']:,} | {row['restored_submitted']:.1f} | "
            f"{row['restored_all_keys']:.1f} | {row['fresh_submitted']:.1f} | {row['fresh_first_checkpoint']:.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
