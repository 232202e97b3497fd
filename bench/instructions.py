"""Instructions per call of each piece of a review, counted by valgrind's callgrind: repeatable on a busy host.

    python bench/instructions.py [--tree DIR] [--calls N] [PIECE ...]

Each piece runs in a fresh interpreter under `valgrind --tool=callgrind` twice, with 0 and with N calls after the
same set-up; the difference over N is its instruction count per call (imports and set-up cancel out). `--tree` runs
another source tree's code (an older commit exported with `git archive COMMIT | tar -x -C DIR`), so before and after
are counted the same way. Needs valgrind (apt-get install valgrind); about 20 s per piece and tree.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
PIECES = ("json_loads", "parse_validate", "parse_mutate", "validate_policy", "mutate_cached")


def piece(name: str) -> Callable[[int], object]:
    """What makes N calls of the piece, after its set-up (run inside the interpreter under valgrind)."""
    from bench import bodies
    from webhook.review import parse_review

    policy_body = json.dumps(bodies.propagation_policy_review()).encode()
    flink_body = json.dumps(bodies.flink_deployment_review()).encode()
    if name == "json_loads":
        return repeat(lambda: json.loads(policy_body))
    if name == "parse_validate":
        return repeat(lambda: parse_review(policy_body))
    if name == "parse_mutate":
        return repeat(lambda: parse_review(flink_body))
    if name == "validate_policy":
        from failover.core.api import PROPAGATION_POLICY

        try:
            from failover.admission.registry import VALIDATORS
        except ImportError:  # trees from before failover.rules became failover.admission.registry
            from failover.rules import VALIDATORS  # type: ignore[no-redef]
        policy = parse_review(policy_body).object
        validator = VALIDATORS[PROPAGATION_POLICY]
        return repeat(lambda: validator(policy))
    if name == "mutate_cached":
        return _mutate_cached(parse_review(flink_body), bodies)
    raise SystemExit(f"unknown piece {name!r}; one of {', '.join(PIECES)}")


def repeat(call: Callable[[], object]) -> Callable[[int], object]:
    def calls(number: int) -> None:
        for _ in range(number):
            call()

    return calls


def _mutate_cached(flink: object, bodies: object) -> Callable[[int], object]:
    from failover.state.checkpoints import open_store
    from failover.state.profiles import load_profiles
    from relay.settings import SavepointSettings
    from webhook.mutators import savepoint_mutators

    try:
        from webhook.blocking import BlockingPool as Pool
    except ImportError:  # trees from before webhook.mutators.LookupPool became webhook.blocking.BlockingPool
        from webhook.mutators import LookupPool as Pool  # type: ignore[no-redef]

    root = Path(tempfile.mkdtemp(prefix="failover-relay-instructions-")) / "checkpoints"
    bodies.build_checkpoint_tree(root)  # type: ignore[attr-defined]
    settings = SavepointSettings()
    profiles = load_profiles(
        settings.profiles,
        label=settings.job_id_label,
        layouts=settings.layouts,
        savepoint_layouts=settings.savepoint_layouts,
    )
    mutator = next(iter(savepoint_mutators(profiles, open_store(str(root)), executor=Pool(1), cache_ttl=3600).values()))
    loop = asyncio.new_event_loop()
    loop.run_until_complete(mutator(flink))  # fills the cache: the benchmark's warm /mutate

    async def mutations(number: int) -> None:  # awaited in one loop turn after another, as the server does
        for _ in range(number):
            await mutator(flink)

    return lambda number: loop.run_until_complete(mutations(number))


def count(tree: Path, name: str, calls: int) -> int:
    done = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            __file__,
            "--run",
            name,
            "--calls",
            str(calls),
            "--tree",
            str(tree),
        ],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
    )
    match = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or not match:
        raise SystemExit(f"{name} in {tree} failed: {done.stderr[-800:]}")
    return int(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pieces", nargs="*", default=list(PIECES))
    parser.add_argument("--tree", type=Path, default=REPO)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--run", help=argparse.SUPPRESS)  # inside valgrind: set up, then call --calls times
    args = parser.parse_args()
    if args.run:
        sys.path.insert(0, str(args.tree.resolve()))
        calls = piece(args.run)
        calls(3)  # warm-up, in both runs
        calls(args.calls)
        return
    print(f"{'piece':20} {'instructions per call':>22}   ({args.tree}, {args.calls} calls)")
    for name in args.pieces:
        per_call = (count(args.tree, name, args.calls) - count(args.tree, name, 0)) / args.calls
        print(f"{name:20} {per_call:22,.0f}", flush=True)


if __name__ == "__main__":
    main()
