"""Benchmark of the restore lookup: newest restorable state of one job among many, on a local filesystem.

    python bench/lookup_bench.py                      # 10,000 jobs x 100 checkpoints, in a temporary directory
    python bench/lookup_bench.py --jobs 1000 --checkpoints 50 --root /mnt/shared/bench --keep

The tree follows Flink's own layout, the default: `<root>/checkpoints/<jobId>/chk-<n>/_metadata`, plus one shared
savepoint directory `<root>/savepoints/savepoint-<6 hex>-<12 hex>/_metadata` holding a savepoint of every tenth job
(Flink writes the savepoints of all jobs side by side). The newest checkpoint of every job is in progress (no
`_metadata`), so each lookup has to skip one. Measured per lookup:

- `lookup`: `failover.state.restore.find_restore_point` through fsspec's LocalFileSystem for a workload that names no
  directories (the configured root and layout), what the webhook runs in its thread pool;
- `lookup + savepoint dir`: the same for a workload whose `flinkConfiguration` names its checkpoint dir and the
  shared savepoint dir: the savepoint directory is listed too and both kinds are compared by completion time;
- `mutator`: the whole async adapter (thread hop, deadline, verdict) for that second workload, uncached;
- `cached`: the adapter again for the same jobs, answered from the TTL cache;
- `ceiling`: the least work that can answer the first question (one `os.scandir` of the job directory, a parse of
  the names, one `os.stat` of `_metadata` per candidate); the ratio lookup/ceiling is the price of fsspec and checks
  (that includes resolving each directory, so a symbolic link cannot lead out of the root).

"Cold" here means not in our cache; the kernel's dentry cache is warm after the tree is built (drop it with
`echo 2 > /proc/sys/vm/drop_caches` between build and run, as root, to see a disk-cold number).

Numbers are in docs/benchmarks.md ("Savepoint lookup"); no test asserts them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from failover.core.api import FLINK_DEPLOYMENT
from failover.state.checkpoints import DEFAULT_LAYOUT, LookupCache, open_store
from failover.state.jobid import JobId
from failover.state.profiles import load_profiles
from failover.state.restore import RestoreQuery, find_restore_point
from webhook.mutators import SavepointMutator, lookup_pool
from webhook.review import AdmissionRequest

NAMESPACE = "flink"
LABEL = "application.karmada.io/failover-jobid"


SAVEPOINT_EVERY = 10  # every tenth job has a savepoint in the shared savepoint directory


def build_tree(root: Path, jobs: int, checkpoints: int) -> list[JobId]:
    ids = [JobId(f"{random.getrandbits(128):032x}") for _ in range(jobs)]
    for index, job in enumerate(ids):
        directory = root / "checkpoints" / job.value
        if index % SAVEPOINT_EVERY == 0:
            savepoint = root / "savepoints" / f"savepoint-{job.value[:6]}-{random.getrandbits(48):012x}"
            savepoint.mkdir(parents=True)
            (savepoint / "_metadata").touch()
            os.utime(savepoint / "_metadata", (1, 1))  # older than every checkpoint: the checkpoint still wins
        (directory / "shared").mkdir(parents=True)
        (directory / "taskowned").mkdir()
        for n in range(1, checkpoints + 1):
            chk = directory / f"chk-{n}"
            chk.mkdir()
            if n < checkpoints:  # the newest is still being written
                (chk / "_metadata").touch()
        if index and index % 1000 == 0:
            print(f"  built {index} jobs", file=sys.stderr)
    return ids


def ceiling(root: Path, job: JobId) -> str | None:
    """The minimal local answer: one scandir, numeric sort, stat until a `_metadata` is found."""
    directory = os.path.join(root, "checkpoints", job.value)
    numbered = []
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.name.startswith("chk-") and entry.name[4:].isdigit():
                numbered.append((int(entry.name[4:]), entry.name))
    for _, name in sorted(numbered, reverse=True):
        try:
            os.stat(os.path.join(directory, name, "_metadata"))
            return name
        except FileNotFoundError:
            continue
    return None


def timed(function, items) -> list[float]:
    samples = []
    for item in items:
        started = time.perf_counter()
        function(item)
        samples.append(time.perf_counter() - started)
    return samples


async def timed_async(function, items) -> list[float]:
    samples = []
    for item in items:
        started = time.perf_counter()
        await function(item)
        samples.append(time.perf_counter() - started)
    return samples


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--checkpoints", type=int, default=100)
    parser.add_argument("--samples", type=int, default=2000, help="lookups per measurement (random jobs)")
    parser.add_argument("--root", type=Path, help="where to build the tree (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the tree (reused by a later run with --root)")
    args = parser.parse_args()

    root = args.root or Path(tempfile.mkdtemp(prefix="lookup-bench-"))
    try:
        existing = root / "checkpoints"
        started = time.perf_counter()
        if existing.is_dir() and any(existing.iterdir()):
            ids = [JobId(path.name) for path in existing.iterdir()]
            print(f"reusing {len(ids)} jobs under {root}", file=sys.stderr)
        else:
            print(f"building {args.jobs} jobs x {args.checkpoints} checkpoints under {root}", file=sys.stderr)
            ids = build_tree(root, args.jobs, args.checkpoints)
            print(f"built in {time.perf_counter() - started:.1f}s", file=sys.stderr)
        sample = random.sample(ids, min(args.samples, len(ids)))
        store = open_store(str(root / "checkpoints"))
        roots = (open_store(str(root)),)
        profile = load_profiles([], label=LABEL, layouts=(DEFAULT_LAYOUT,))[FLINK_DEPLOYMENT]
        configuration = {"state.checkpoints.dir": f"{root}/checkpoints", "state.savepoints.dir": f"{root}/savepoints"}
        expected = {job: ceiling(root, job) for job in sample}  # also warms the dentry cache evenly for both

        def plain(job: JobId) -> str | None:
            return find_restore_point((store,), profile.layouts, (), RestoreQuery(NAMESPACE, (job,))).path

        def with_savepoints(job: JobId) -> str | None:
            query = RestoreQuery(
                NAMESPACE,
                (job,),
                checkpoint_dir=configuration["state.checkpoints.dir"],
                savepoint_dir=configuration["state.savepoints.dir"],
            )
            return find_restore_point(roots, profile.layouts, (), query).path

        for job in sample[:50]:
            for lookup in (plain, with_savepoints):
                path = lookup(job)
                assert path and path.endswith("/" + expected[job]), (path, expected[job])

        results = {
            "ceiling (os.scandir)": timed(lambda job: ceiling(root, job), sample),
            "lookup (fsspec)": timed(plain, sample),
            "lookup + savepoint dir": timed(with_savepoints, sample),
        }

        async def adapter() -> None:
            pool = lookup_pool()
            mutator = SavepointMutator(profile, roots[0], executor=pool, deadline=5.0, cache=LookupCache(ttl=3600))

            def request(job: JobId) -> AdmissionRequest:
                obj = {
                    "apiVersion": "flink.apache.org/v1beta1",
                    "kind": "FlinkDeployment",
                    "metadata": {"name": "job", "namespace": NAMESPACE, "labels": {LABEL: job.value}},
                    "spec": {"flinkConfiguration": configuration, "job": {"upgradeMode": "stateless"}},
                }
                return AdmissionRequest(
                    "admission.k8s.io/v1",
                    "uid",
                    "flink.apache.org",
                    "v1beta1",
                    "FlinkDeployment",
                    "CREATE",
                    NAMESPACE,
                    "job",
                    obj,
                    None,
                    False,
                )

            requests = {job: request(job) for job in sample}
            results["mutator, cold"] = await timed_async(lambda job: mutator(requests[job]), sample)
            results["mutator, cached"] = await timed_async(lambda job: mutator(requests[job]), sample)
            pool.shutdown()

        import structlog

        structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))  # no per-lookup log lines
        asyncio.run(adapter())

        base = statistics.median(results["ceiling (os.scandir)"])
        base99 = percentile(results["ceiling (os.scandir)"], 0.99)
        print(f"\n{len(ids)} jobs x {args.checkpoints} checkpoints, {len(sample)} lookups each")
        print(f"{'measurement':24} {'p50 ms':>9} {'p99 ms':>9} {'p50/ceiling':>12} {'p99/ceiling':>12}")
        for name, samples in results.items():
            p50, p99 = statistics.median(samples), percentile(samples, 0.99)
            print(f"{name:24} {p50 * 1000:9.3f} {p99 * 1000:9.3f} {p50 / base:12.2f} {p99 / base99:12.2f}")
    finally:
        if args.root is None and not args.keep:
            shutil.rmtree(root, ignore_errors=True)
        elif args.keep:
            print(f"tree kept at {root}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
