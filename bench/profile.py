"""Where `us` spends its CPU under saturation: py-spy samples the running server while wrk loads it.

py-spy reads the process from outside (no instrumentation in the server), and with `--format raw` writes collapsed
stacks: `frame;frame;... count`, each frame `function (file:line)`. Idle samples (the event loop waiting in epoll)
are left out, so the shares are shares of CPU time.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections import Counter
from pathlib import Path

from bench import load
from bench.servers import Server

# The file a frame comes from decides its bucket; the first match wins.
BUCKETS = (
    ("our code (failover/, webhook/, relay/)", re.compile(r"(^|/)(failover|webhook|relay|certs)/")),
    ("structlog (log line)", re.compile(r"(^|/)structlog/")),
    ("prometheus_client (metrics)", re.compile(r"(^|/)prometheus_client/")),
    ("json (stdlib)", re.compile(r"(^|/)json/")),
    ("aiohttp", re.compile(r"(^|/)aiohttp/")),
    ("ssl (stdlib)", re.compile(r"(^|/)ssl\.py")),
    ("asyncio (stdlib)", re.compile(r"(^|/)asyncio/")),
)
_FRAME = re.compile(r"^(?P<function>.*) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")


def record(server: Server, body_files: dict[str, Path], py_spy: Path, workdir: Path, seconds: float) -> dict:
    raw = workdir / "us-profile.txt"
    sampler = subprocess.Popen(
        [
            "taskset",
            "-c",
            load.LOAD_CPU,
            str(py_spy),
            "record",
            "--pid",
            str(server.process.pid),
            "--rate",
            "250",
            "--format",
            "raw",
            "--output",
            str(raw),
            "--duration",
            str(int(seconds) + 1),
            "--nonblocking",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(0.5)
    load.wrk(server.url + "/validate", body_files["validate"], seconds / 2)
    load.wrk(server.url + "/mutate", body_files["mutate"], seconds / 2)
    _, errors = sampler.communicate(timeout=seconds + 30)
    if not raw.exists():
        return {"error": f"py-spy wrote no profile: {errors[-400:]}"}
    return summarise(raw.read_text())


def summarise(collapsed: str, top: int = 18) -> dict:
    self_time: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    buckets: Counter[str] = Counter()
    total = 0
    for line in collapsed.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        samples = int(count)
        total += samples
        frames = [_name(frame) for frame in stack.split(";")]
        self_time[frames[-1][0]] += samples
        for name in {name for name, _ in frames}:
            inclusive[name] += samples
        buckets[_bucket(frames)] += samples
    share = (lambda n: round(100 * n / total, 1)) if total else (lambda n: 0.0)
    return {
        "samples": total,
        "buckets": [(name, share(n)) for name, n in buckets.most_common()],
        "self": [(name, share(n)) for name, n in self_time.most_common(top)],
        "inclusive": [(name, share(n)) for name, n in inclusive.most_common(top * 2)],
    }


def _name(frame: str) -> tuple[str, str]:
    match = _FRAME.match(frame.strip())
    if not match:
        return frame.strip(), ""
    path = match.group("file")
    short = "/".join(path.split("/")[-2:])
    return f"{match.group('function')} ({short})", path


def _bucket(frames: list[tuple[str, str]]) -> str:
    """The innermost frame that belongs to a named bucket decides: json.dumps called by structlog counts to json,
    a C call (an SSL write, a regex) to the Python frame that made it."""
    for _, path in reversed(frames):
        for name, pattern in BUCKETS:
            if pattern.search(path):
                return name
    return "other (interpreter, event loop internals)"
