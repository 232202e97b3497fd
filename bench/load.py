"""Running wrk (closed loop) and h2load (open loop) against one URL and reading their results.

Both tools run on CPU 0 (`taskset -c 0`), the servers on CPU 1. Connections are HTTP/1.1 keep-alive over TLS, 16 of
them, as the kube-apiserver keeps to a webhook.
"""

from __future__ import annotations

import math
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent
CONNECTIONS = 16
LOAD_CPU = "0"

_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


@dataclass
class Result:
    """One load run. Latencies in milliseconds; `errors` counts every response that is not 2xx and every socket error
    or timeout."""

    requests: int = 0
    rate: float = 0.0  # achieved requests per second
    p50: float = 0.0
    p99: float = 0.0
    p999: float = 0.0
    max: float = 0.0
    errors: int = 0
    cpu_us_per_request: float = 0.0  # server CPU (all threads) over the run / requests
    notes: list[str] = field(default_factory=list)


def wrk(url: str, body: Path, seconds: float) -> Result:
    """Closed loop: 16 connections, each sends its next request as soon as the previous answer arrives."""
    command = [
        "taskset",
        "-c",
        LOAD_CPU,
        "wrk",
        "-t1",
        f"-c{CONNECTIONS}",
        f"-d{max(1, round(seconds))}s",
        "--latency",
        "-s",
        str(BENCH / "post.lua"),
        url,
        "--",
        str(body),
    ]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return parse_wrk(output)


def parse_wrk(output: str) -> Result:
    result = Result()
    if match := re.search(r"(\d+) requests in", output):
        result.requests = int(match.group(1))
    if match := re.search(r"Requests/sec:\s+([\d.]+)", output):
        result.rate = float(match.group(1))
    for label, attribute in (("50%", "p50"), ("99%", "p99")):
        if match := re.search(rf"^\s+{re.escape(label)}\s+([\d.]+)(us|ms|s)\s*$", output, re.MULTILINE):
            setattr(result, attribute, float(match.group(1)) * _UNITS[match.group(2)])
    if match := re.search(r"Latency\s+[\d.]+\w+\s+[\d.]+\w+\s+([\d.]+)(us|ms|s)", output):
        result.max = float(match.group(1)) * _UNITS[match.group(2)]
    if match := re.search(r"Non-2xx or 3xx responses: (\d+)", output):
        result.errors += int(match.group(1))
    if match := re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output):
        result.errors += sum(int(group) for group in match.groups())
    if not result.requests:
        result.notes.append("wrk output not understood: " + output[-300:])
    return result


def h2load(url: str, body: Path, rate: int, seconds: float, discard_seconds: float) -> Result:
    """Open loop at `rate` requests/s: 16 connections opened one every 1/rate s (`-r1 --rate-period`), each sending
    rate/16 requests/s, so arrivals are staggered instead of coming in bursts of 16. The first `discard_seconds` of
    the per-request log are dropped (connection set-up, warm-up)."""
    total = int(rate * seconds)
    with tempfile.NamedTemporaryFile(prefix="h2load-", suffix=".log") as log:
        command = [
            "taskset",
            "-c",
            LOAD_CPU,
            "h2load",
            "--h1",
            "-t1",
            "-d",
            str(body),
            "-H",
            "Content-Type: application/json",
            "--log-file",
            log.name,
            f"-c{CONNECTIONS}",
            "-r1",
            f"--rate-period={1000 / rate:g}ms",
            f"--rps={rate / CONNECTIONS:g}",
            "-n",
            str(total),
            url,
        ]
        output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        rows = Path(log.name).read_text().splitlines()
    return parse_h2load(output, rows, discard_seconds)


def parse_h2load(output: str, rows: list[str], discard_seconds: float) -> Result:
    result = Result()
    samples: list[tuple[int, int, int]] = []  # start (µs), status, duration (µs)
    for row in rows:
        parts = row.split()
        if len(parts) == 3:
            samples.append((int(parts[0]), int(parts[1]), int(parts[2])))
    if match := re.search(
        r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
        r"(\d+) errored, (\d+) timeout",
        output,
    ):
        total, _, done, _, failed, errored, timeout = map(int, match.groups())
        result.errors += failed + errored + timeout + (total - done)
    else:
        result.notes.append("h2load summary not understood: " + output[-300:])
    result.errors += sum(1 for _, status, _ in samples if not 200 <= status < 300 and status > 0)
    if not samples:
        return result
    samples.sort()
    start = samples[0][0] + discard_seconds * 1e6
    kept = [sample for sample in samples if sample[0] >= start] or samples
    span = (kept[-1][0] - kept[0][0]) / 1e6
    result.requests = len(kept)
    result.rate = (len(kept) - 1) / span if span > 0 else 0.0
    durations = sorted(duration / 1000 for _, _, duration in kept)
    result.p50, result.p99, result.p999 = (nearest_rank(durations, q) for q in (0.50, 0.99, 0.999))
    result.max = durations[-1]
    return result


def nearest_rank(ordered: list[float], quantile: float) -> float:
    """The smallest sample with at least `quantile` of all samples at or below it."""
    return ordered[max(0, min(len(ordered) - 1, math.ceil(quantile * len(ordered)) - 1))]
