"""Tables of a benchmark run (Markdown, so they paste into docs/benchmarks.md): medians over rounds with (min–max),
per-round ratios us/ceiling and us/kopf, memory, the savepoint lookup, the profile, and the issue's targets."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable

SERVERS = ("ceiling", "ceiling-fast", "kopf", "us", "us-before")
MEMORY_SERVERS = (*SERVERS, "member")
RATES = (200, 500, 1000)
MUTATE_RATE = 1000


def render(results: dict) -> str:
    rounds = results["rounds"]
    settings = results["settings"]
    parts = [
        f"{len(rounds)} round(s); closed loop {settings['closed_seconds']:g} s per run, open loop "
        f"{settings['open_seconds']:g} s per run (first {settings['discard_seconds']:g} s dropped); "
        f"16 keep-alive HTTP/1.1 connections over TLS; servers on CPU 1, load on CPU 0."
    ]
    parts.append(closed_table(rounds))
    parts.append(open_table(rounds))
    parts.append(stack_line(results))
    parts.append(ratio_table(rounds))
    parts.append(memory_table(results.get("memory", {}), results.get("memory_at_start", {})))
    if "load_average_after_round" in results:
        parts.append(
            "Load average (1, 5, 15 min) at the start and after each round: "
            + "; ".join(
                ", ".join(f"{value:.2f}" for value in loads)
                for loads in [results["machine"]["load_average_at_start"], *results["load_average_after_round"]]
            )
        )
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
    lines = [
        "Closed loop (wrk, 16 connections, saturation); medians over rounds (min–max):",
        "",
        "| server | endpoint | req/s | p50 ms | p99 ms | max ms | server CPU µs/req |",
        "|---|---|---|---|---|---|---|",
    ]
    for endpoint in ("validate", "mutate"):
        run = f"closed/{endpoint}"
        for server in SERVERS:
            lines.append(
                f"| {server} | /{endpoint} | {spread(_values(rounds, server, run, 'rate'), whole)} | "
                f"{spread(_values(rounds, server, run, 'p50'), ms)} | "
                f"{spread(_values(rounds, server, run, 'p99'), ms)} | "
                f"{spread(_values(rounds, server, run, 'max'), ms)} | "
                f"{spread(_values(rounds, server, run, 'cpu_us_per_request'), whole)} |"
            )
    return "\n".join(lines)


def _open_runs() -> Iterable[tuple[str, str, int]]:
    for rate in RATES:
        yield f"open/validate/{rate}", "validate", rate
    yield f"open/mutate/{MUTATE_RATE}", "mutate", MUTATE_RATE


def open_table(rounds: list[dict]) -> str:
    lines = [
        "Open loop (h2load, fixed rate, staggered connections); medians over rounds (min–max):",
        "",
        "| server | endpoint | rate/s | achieved | p50 ms | p99 ms | p99.9 ms | max ms | CPU µs/req |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for run, endpoint, rate in _open_runs():
        for server in SERVERS:
            lines.append(
                f"| {server} | /{endpoint} | {rate} | {spread(_values(rounds, server, run, 'rate'), whole)} | "
                f"{spread(_values(rounds, server, run, 'p50'), ms)} | "
                f"{spread(_values(rounds, server, run, 'p99'), ms)} | "
                f"{spread(_values(rounds, server, run, 'p999'), ms)} | "
                f"{spread(_values(rounds, server, run, 'max'), ms)} | "
                f"{spread(_values(rounds, server, run, 'cpu_us_per_request'), whole)} |"
            )
    return "\n".join(lines)


def _ratios(rounds: list[dict], other: str, run: str, field: str, ours: str = "us") -> list[float]:
    return [
        r[ours][run][field] / r[other][run][field] for r in rounds if ours in r and other in r and r[other][run][field]
    ]


def same_stack(results: dict) -> str:
    """The ceiling on the relay's own event loop and JSON library (bench/servers.py OUR_STACK)."""
    stack = results.get("stack", {})
    return "ceiling-fast" if stack.get("ours") == stack.get("fast") else "ceiling"


def stack_line(results: dict) -> str:
    stack = results.get("stack")
    if not stack:
        return ""
    return (
        f"Stacks: failover-relay runs on {' + '.join(stack['ours'])}, so the same-stack ceiling is "
        f"`{same_stack(results)}`; `ceiling` is a bare aiohttp server on {' + '.join(stack['ours'])}, "
        f"`ceiling-fast` the same on {' + '.join(stack['fast'])}."
    )


def ratio_table(rounds: list[dict]) -> str:
    columns = [
        ("req/s validate", "closed/validate", "rate"),
        ("req/s mutate", "closed/mutate", "rate"),
        ("CPU/req validate (sat.)", "closed/validate", "cpu_us_per_request"),
        ("CPU/req mutate (sat.)", "closed/mutate", "cpu_us_per_request"),
    ]
    columns += [(f"p99 validate @{rate}", f"open/validate/{rate}", "p99") for rate in RATES]
    columns += [
        (f"p99 mutate @{MUTATE_RATE}", f"open/mutate/{MUTATE_RATE}", "p99"),
        (f"max validate @{MUTATE_RATE}", f"open/validate/{MUTATE_RATE}", "max"),
    ]
    lines = [
        "Per-round ratios, median (min–max) over rounds; > 1 means `us` has more of it:",
        "",
        "| ratio | " + " | ".join(name for name, _, _ in columns) + " |",
        "|---|" + "---|" * len(columns),
    ]
    for ours in ("us", "us-before"):
        for other in ("ceiling", "ceiling-fast", "kopf"):
            cells = [spread(_ratios(rounds, other, run, field, ours), ratio) for _, run, field in columns]
            if any(cell != "-" for cell in cells):
                lines.append(f"| {ours} / {other} | " + " | ".join(cells) + " |")
    cells = [spread(_ratios(rounds, "us-before", run, field), ratio) for _, run, field in columns]
    if any(cell != "-" for cell in cells):
        lines.append("| us / us-before | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def memory_table(memory: dict, at_start: dict) -> str:
    lines = [
        "Memory (`member`: `serve --member`, loaded once with the same bodies after the rounds):",
        "",
        "| server | RSS MiB after first answers | RSS MiB after all runs | peak RSS MiB | threads |",
        "|---|---|---|---|---|",
    ]
    for server in MEMORY_SERVERS:
        if server in memory:
            values = memory[server]
            start = at_start.get(server, {}).get("VmRSS")
            lines.append(
                f"| {server} | {'-' if start is None else f'{start:.1f}'} | {values.get('VmRSS', 0):.1f} | "
                f"{values.get('VmHWM', 0):.1f} | {values.get('Threads', 0):.0f} |"
            )
    return "\n".join(lines)


def errors_line(rounds: list[dict]) -> str:
    counts = {
        server: sum(run["errors"] for r in rounds if server in r for run in r[server].values()) for server in SERVERS
    }
    notes = [note for r in rounds for runs in r.values() for run in runs.values() for note in run["notes"]]
    line = "Errors (non-2xx, socket errors, timeouts) over all runs: " + ", ".join(
        f"{server} {count}" for server, count in counts.items()
    )
    return line + ("\n\nTool output not understood:\n" + "\n".join(notes) if notes else "")


def profile_tables(profile: dict) -> str:
    if "error" in profile:
        return f"Profile: {profile['error']}"
    lines = [
        f"Profile of `us` under saturation (py-spy, {profile['samples']} CPU samples, half /validate, half /mutate):",
        "",
        "| where (innermost library of the sample) | % of CPU |",
        "|---|---|",
    ]
    lines += [f"| {name} | {share} |" for name, share in profile["buckets"]]
    lines += ["", "| function (self time) | % |", "|---|---|"]
    lines += [f"| `{name}` | {share} |" for name, share in profile["self"]]
    lines += ["", "| function (inclusive) | % |", "|---|---|"]
    lines += [f"| `{name}` | {share} |" for name, share in profile["inclusive"]]
    return "\n".join(lines)


def targets(results: dict) -> str:
    """The webhook's performance targets (throughput against the same-stack ceiling and against kopf, p99 latency at
    1,000 reviews/s, RSS), reported and never enforced (the host's noise is larger than some margins)."""
    rounds = results["rounds"]
    ceiling = same_stack(results)

    def median(values: list[float]) -> float | None:
        return statistics.median(values) if values else None

    rows = []
    for endpoint, floor in (("validate", 0.8), ("mutate", 0.7)):
        value = median(_ratios(rounds, ceiling, f"closed/{endpoint}", "rate"))
        rows.append(
            (f"saturation /{endpoint} ≥ {floor:g} × same-stack ceiling", value, value is not None and value >= floor)
        )
        value = median(_ratios(rounds, "kopf", f"closed/{endpoint}", "rate"))
        rows.append((f"saturation /{endpoint} ≥ 4 × kopf", value, value is not None and value >= 4))
        value = median(_ratios(rounds, ceiling, f"open/{endpoint}/1000", "p99"))
        rows.append((f"/{endpoint} p99 at 1,000/s ≤ 1.3 × the ceiling's", value, value is not None and value <= 1.3))
    memory = results.get("memory", {})
    for server, limit, name in (("member", 50, "RSS in member mode"), ("us", 80, "RSS on the control plane")):
        rss = memory.get(server, {}).get("VmRSS")
        rows.append((f"{name} ≤ {limit} MiB", rss, rss is not None and rss <= limit))
    lines = [
        "Performance targets: throughput, p99 latency, RSS (informational; medians of per-round ratios):",
        "",
        "| target | measured | met |",
        "|---|---|---|",
    ]
    lines += [
        f"| {name} | {'-' if value is None else f'{value:.2f}'} | {'yes' if met else 'no'} |"
        for name, value, met in rows
    ]
    return "\n".join(lines)
