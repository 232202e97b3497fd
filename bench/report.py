"""Tables of a benchmark run (Markdown, so they paste into docs/benchmarks.md): medians over rounds with (min–max),
per-round ratios us/ceiling and us/kopf, memory, the savepoint lookup, the profile, and the issue's targets."""

from __future__ import annotations

import statistics
from typing import Callable, Iterable

SERVERS = ("ceiling", "kopf", "us")
RATES = (200, 500, 1000)
MUTATE_RATE = 1000


def render(results: dict) -> str:
    rounds = results["rounds"]
    settings = results["settings"]
    parts = [f"{len(rounds)} round(s); closed loop {settings['closed_seconds']:g} s per run, open loop "
             f"{settings['open_seconds']:g} s per run (first {settings['discard_seconds']:g} s dropped); "
             f"16 keep-alive HTTP/1.1 connections over TLS; servers on CPU 1, load on CPU 0."]
    parts.append(closed_table(rounds))
    parts.append(open_table(rounds))
    parts.append(ratio_table(rounds))
    parts.append(memory_table(results.get("memory", {})))
    parts.append(errors_line(rounds))
    if "lookup" in results:
        parts.append("Savepoint lookup (bench/lookup_bench.py):\n\n```\n" + results["lookup"] + "\n```")
    if "profile" in results:
        parts.append(profile_tables(results["profile"]))
    parts.append(targets(results))
    return "\n\n".join(parts)


def _values(rounds: list[dict], server: str, run: str, field: str) -> list[float]:
    return [r[server][run][field] for r in rounds if server in r and run in r[server]]


def spread(values: list[float], fmt: Callable[[float], str]) -> str:
    if not values:
        return "-"
    middle = fmt(statistics.median(values))
    return middle if len(values) == 1 else f"{middle} ({fmt(min(values))}–{fmt(max(values))})"


def ms(value: float) -> str:
    return f"{value:.2f}"


def whole(value: float) -> str:
    return f"{value:,.0f}"


def ratio(value: float) -> str:
    return f"{value:.2f}"


def closed_table(rounds: list[dict]) -> str:
    lines = ["Closed loop (wrk, 16 connections, saturation); medians over rounds (min–max):", "",
             "| server | endpoint | req/s | p50 ms | p99 ms | max ms | server CPU µs/req |", "|---|---|---|---|---|---|---|"]
    for endpoint in ("validate", "mutate"):
        run = f"closed/{endpoint}"
        for server in SERVERS:
            lines.append(f"| {server} | /{endpoint} | {spread(_values(rounds, server, run, 'rate'), whole)} | "
                         f"{spread(_values(rounds, server, run, 'p50'), ms)} | "
                         f"{spread(_values(rounds, server, run, 'p99'), ms)} | "
                         f"{spread(_values(rounds, server, run, 'max'), ms)} | "
                         f"{spread(_values(rounds, server, run, 'cpu_us_per_request'), whole)} |")
    return "\n".join(lines)


def _open_runs() -> Iterable[tuple[str, str, int]]:
    for rate in RATES:
        yield f"open/validate/{rate}", "validate", rate
    yield f"open/mutate/{MUTATE_RATE}", "mutate", MUTATE_RATE


def open_table(rounds: list[dict]) -> str:
    lines = ["Open loop (h2load, fixed rate, staggered connections); medians over rounds (min–max):", "",
             "| server | endpoint | rate/s | achieved | p50 ms | p99 ms | p99.9 ms | max ms | CPU µs/req |",
             "|---|---|---|---|---|---|---|---|---|"]
    for run, endpoint, rate in _open_runs():
        for server in SERVERS:
            lines.append(f"| {server} | /{endpoint} | {rate} | {spread(_values(rounds, server, run, 'rate'), whole)} | "
                         f"{spread(_values(rounds, server, run, 'p50'), ms)} | "
                         f"{spread(_values(rounds, server, run, 'p99'), ms)} | "
                         f"{spread(_values(rounds, server, run, 'p999'), ms)} | "
                         f"{spread(_values(rounds, server, run, 'max'), ms)} | "
                         f"{spread(_values(rounds, server, run, 'cpu_us_per_request'), whole)} |")
    return "\n".join(lines)


def _ratios(rounds: list[dict], other: str, run: str, field: str) -> list[float]:
    return [r["us"][run][field] / r[other][run][field] for r in rounds
            if "us" in r and other in r and r[other][run][field]]


def ratio_table(rounds: list[dict]) -> str:
    columns = [("req/s validate", "closed/validate", "rate"), ("req/s mutate", "closed/mutate", "rate"),
               ("CPU/req validate (sat.)", "closed/validate", "cpu_us_per_request"),
               ("CPU/req mutate (sat.)", "closed/mutate", "cpu_us_per_request")]
    columns += [(f"p99 validate @{rate}", f"open/validate/{rate}", "p99") for rate in RATES]
    columns += [(f"p99 mutate @{MUTATE_RATE}", f"open/mutate/{MUTATE_RATE}", "p99"),
                (f"max validate @{MUTATE_RATE}", f"open/validate/{MUTATE_RATE}", "max")]
    lines = ["Per-round ratios, median (min–max) over rounds; > 1 means `us` has more of it:", "",
             "| ratio | " + " | ".join(name for name, _, _ in columns) + " |",
             "|---|" + "---|" * len(columns)]
    for other in ("ceiling", "kopf"):
        cells = [spread(_ratios(rounds, other, run, field), ratio) for _, run, field in columns]
        lines.append(f"| us / {other} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def memory_table(memory: dict) -> str:
    lines = ["Memory after all runs:", "", "| server | RSS MiB | peak RSS MiB | threads |", "|---|---|---|---|"]
    for server in SERVERS:
        if server in memory:
            values = memory[server]
            lines.append(f"| {server} | {values.get('VmRSS', 0):.1f} | {values.get('VmHWM', 0):.1f} | "
                         f"{values.get('Threads', 0):.0f} |")
    return "\n".join(lines)


def errors_line(rounds: list[dict]) -> str:
    counts = {server: sum(run["errors"] for r in rounds if server in r for run in r[server].values())
              for server in SERVERS}
    notes = [note for r in rounds for runs in r.values() for run in runs.values() for note in run["notes"]]
    line = "Errors (non-2xx, socket errors, timeouts) over all runs: " + ", ".join(
        f"{server} {count}" for server, count in counts.items())
    return line + ("\n\nTool output not understood:\n" + "\n".join(notes) if notes else "")


def profile_tables(profile: dict) -> str:
    if "error" in profile:
        return f"Profile: {profile['error']}"
    lines = [f"Profile of `us` under saturation (py-spy, {profile['samples']} CPU samples, half /validate, "
             "half /mutate):", "", "| where (innermost library of the sample) | % of CPU |", "|---|---|"]
    lines += [f"| {name} | {share} |" for name, share in profile["buckets"]]
    lines += ["", "| function (self time) | % |", "|---|---|"]
    lines += [f"| `{name}` | {share} |" for name, share in profile["self"]]
    lines += ["", "| function (inclusive) | % |", "|---|---|"]
    lines += [f"| `{name}` | {share} |" for name, share in profile["inclusive"]]
    return "\n".join(lines)


def targets(results: dict) -> str:
    """The issue's targets, reported and never enforced (the host's noise is larger than some margins)."""
    rounds = results["rounds"]

    def median(values: list[float]) -> float | None:
        return statistics.median(values) if values else None

    rows = []
    for endpoint in ("validate", "mutate"):
        value = median(_ratios(rounds, "ceiling", f"closed/{endpoint}", "rate"))
        rows.append((f"saturation /{endpoint} ≥ 0.8 × ceiling", value, value is not None and value >= 0.8))
        value = median(_ratios(rounds, "kopf", f"closed/{endpoint}", "rate"))
        rows.append((f"saturation /{endpoint} ≥ 4 × kopf", value, value is not None and value >= 4))
        run = f"open/{endpoint}/1000"
        for field, limit in (("p99", 1.5), ("p999", 5.0), ("max", 10.0)):
            value = median(_values(rounds, "us", run, field))
            rows.append((f"/{endpoint} @1000/s {field} ≤ {limit:g} ms", value, value is not None and value <= limit))
    rss = results.get("memory", {}).get("us", {}).get("VmRSS")
    rows.append(("RSS of serve ≤ 80 MiB", rss, rss is not None and rss <= 80))
    lines = ["Targets of issue 6 (informational; medians):", "", "| target | measured | met |", "|---|---|---|"]
    lines += [f"| {name} | {'-' if value is None else f'{value:.2f}'} | {'yes' if met else 'no'} |"
              for name, value, met in rows]
    return "\n".join(lines)
