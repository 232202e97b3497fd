"""What each piece of a review costs on its own, in-process, against the one piece the ceiling also pays (`json.loads`).

    python bench/pieces.py [--number N]

The server's extra CPU per review (docs/benchmarks.md) is the sum of these pieces plus the framework glue around
them. Timed back to back in a hot loop, each piece is cheaper than under load, where it runs between aiohttp and TLS
with cold caches (about 1.5-2x); the ratios between pieces are what this shows. Best of 7 repeats.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import sys
import tempfile
import timeit
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import structlog

from bench import bodies
from failover.admission.registry import DEFAULTERS, VALIDATORS
from failover.core.api import PROPAGATION_POLICY
from relay.logs import configure_logging
from relay.settings import SavepointSettings, open_injection
from webhook.blocking import BlockingPool
from webhook.metrics import AdmissionMetrics
from webhook.mutators import savepoint_mutators
from webhook.review import complete, encode, parse_review


def best_us(function: Callable[[], object], number: int) -> float:
    return min(timeit.repeat(function, number=number, repeat=7)) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=5000, help="calls per repeat")
    number = parser.parse_args().number

    policy_body = json.dumps(bodies.propagation_policy_review()).encode()
    flink_body = json.dumps(bodies.flink_deployment_review()).encode()
    policy = parse_review(policy_body)
    flink = parse_review(flink_body)

    root = Path(tempfile.mkdtemp(prefix="failover-relay-pieces-")) / "checkpoints"
    bodies.build_checkpoint_tree(root)
    profiles, store, _ = open_injection(replace(SavepointSettings(), checkpoint_root=str(root)))
    pool = BlockingPool(1)
    mutator = next(iter(savepoint_mutators(profiles, store, executor=pool, cache_ttl=3600).values()))
    configure_logging("json", stream=io.StringIO())
    loop = asyncio.new_event_loop()
    loop.run_until_complete(mutator(flink))  # fill the cache: the benchmark's warm /mutate

    async def mutate_cached(calls: int) -> None:
        for _ in range(calls):
            await mutator(flink)

    log = structlog.get_logger("failover_relay.webhook")
    metrics = AdmissionMetrics()
    verdict = VALIDATORS[PROPAGATION_POLICY](policy.object)

    def log_line() -> None:
        log.info(
            "admission_review",
            endpoint="validate",
            uid=policy.uid,
            kind=policy.kind,
            object=policy.display_name,
            operation=policy.operation,
            dry_run=False,
            verdict="allowed",
            reason=None,
            warnings=0,
            audit=None,
            latency_ms=0.321,
        )

    pieces: list[tuple[str, Callable[[], object]]] = [
        ("json.loads of the /validate body (the ceiling's work)", lambda: json.loads(policy_body)),
        ("parse_review /validate (decode + checks)", lambda: parse_review(policy_body)),
        ("parse_review /mutate", lambda: parse_review(flink_body)),
        ("policy rules: validate_policy", lambda: VALIDATORS[PROPAGATION_POLICY](policy.object)),
        ("policy rules: mutate_policy", lambda: DEFAULTERS[PROPAGATION_POLICY](policy.object)),
        # Many awaits inside one loop turn, as the server makes them: a run_until_complete per call would time
        # the event loop's start and stop instead.
        ("savepoint mutation, cache hit", lambda: loop.run_until_complete(mutate_cached(1000))),
        ("response: complete + JSON encoding", lambda: encode(policy, complete(policy, verdict))),
        ("metrics: count_answer", lambda: metrics.count_answer("validate", policy.kind, "allowed", 0.0003)),
        ("log line: admission_review (structlog JSON)", log_line),
    ]
    baseline = best_us(pieces[0][1], number)
    print(f"{'piece':56} {'us':>7} {'/ json.loads':>12}")
    for name, function in pieces:
        calls = 1000 if name.startswith("savepoint") else 1
        cost = baseline if function is pieces[0][1] else best_us(function, max(1, number // calls)) / calls
        print(f"{name:56} {cost:7.1f} {cost / baseline:12.2f}")
    loop.close()
    pool.shutdown()


if __name__ == "__main__":
    main()
