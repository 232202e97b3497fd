"""Instructions per review of each whole server, counted by valgrind's callgrind: repeatable on a busy host.

    python bench/server_instructions.py [--servers ceiling,us,kopf] [--before TREE] [--requests N] [--workdir DIR]
    make bench-instructions ARGS="..."

`make bench` reads server CPU per review at saturation, which moves by 2-10x between rounds when anything else runs
on this 2-core host; bench/instructions.py counts instructions per *piece* of a review. This counts the whole server:
the servers of bench/servers.py (started exactly as `make bench` starts them, same bodies, same kind of certificate,
same checkpoint tree) each run under `valgrind --tool=callgrind` in STEPS fresh processes. Every process answers the
same warm-up (a check of both answers, then WARM_UP requests on each endpoint) and opens CONNECTIONS connections per
endpoint with one request each; step 0 stops there, step 1 also sends N `/validate` reviews on its connections, step 2
N `/validate` and N `/mutate`. An endpoint's instructions per review is the difference between consecutive steps over
N: interpreter start-up, imports, TLS handshakes, the warm-up and shutdown are the same in both and cancel out. Each
measured request must be answered 2xx (h2load's "status codes" line) or the run stops. Servers: `ceiling` (the
same-stack ceiling), `us` and `kopf` by default; `--before TREE` adds `us-before` (the relay of another source tree, as
in run.py), `--servers` picks from all of them (also `ceiling-fast` and `member`). A CPU-bound server's throughput is
inversely proportional to its instructions per review, so ceiling/us is the fraction of the ceiling's throughput `us`
can reach and kopf/us how many times kopf's it reaches (the webhook's throughput targets are stated that way).

What this does NOT measure: kernel time (TLS record and socket syscalls, log file writes: the relay writes a log line
for every patched review), cache misses and branch mispredictions (an instruction is not a fixed time), latency and
its tails, and anything that depends on wall time (under valgrind `us` answers about 45 reviews/s, so the savepoint
cache's 10 s TTL expires every few hundred /mutate reviews rather than every 50,000: measured, a one-hour TTL moved
`us` /mutate by less than the ±1 % that three runs on a busy host differ by). Server CPU per review from `make bench`
at saturation on a quiet host is the check that instructions track time. Needs valgrind and h2load
(installed with apt-get when missing, as run.py installs its tools); 20 s to 2 minutes per process, about 12
minutes for the default servers on a busy 2-core host (kopf's /mutate is the longest step).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.report import same_stack
from bench.run import check_answers, ensure_kopf_venv, ensure_load_tools, set_up
from bench.servers import BENCH, FAST_STACK, OUR_STACK, Server

ENDPOINTS = ("validate", "mutate")
STEPS = len(ENDPOINTS) + 1  # step k sends N reviews to each of the first k endpoints
DEFAULT_SERVERS = ("ceiling", "us", "kopf")
ALL_SERVERS = ("ceiling", "ceiling-fast", "kopf", "us", "us-before", "member")
NEEDS_BENCH_VENV = ("ceiling-fast", "kopf")  # their Python is bench/.venv's (run.py's ensure_kopf_venv)
REQUESTS = 2000
WARM_UP = 50
WARM_UP_CONNECTIONS = 2
CONNECTIONS = 4
START_SECONDS = 120.0
KOPF_START_SECONDS = 400.0  # kopf answered after 30 s here, but has needed 3 minutes on a loaded host
STOP_SECONDS = 120.0
TOOLS = (("h2load", "nghttp2-client"), ("valgrind", "valgrind"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--servers",
        default=",".join(DEFAULT_SERVERS),
        help=f"comma-separated, from {', '.join(ALL_SERVERS)} (default: %(default)s)",
    )
    parser.add_argument(
        "--before",
        type=Path,
        metavar="TREE",
        help="also count the relay of this source tree as `us-before` (as run.py --before)",
    )
    parser.add_argument("--requests", type=int, default=REQUESTS, help="measured reviews per endpoint (N)")
    parser.add_argument(
        "--workdir",
        type=Path,
        help="where bodies, certificates, logs and results go (default: a new temporary directory)",
    )
    args = parser.parse_args()
    chosen = [name.strip() for name in args.servers.split(",") if name.strip()]
    if args.before is not None and "us-before" not in chosen:
        chosen.append("us-before")
    unknown = [name for name in chosen if name not in ALL_SERVERS]
    if unknown or not chosen or args.requests < 1:
        parser.error(f"--servers takes names from {', '.join(ALL_SERVERS)}, --requests at least 1")
    if "us-before" in chosen and args.before is None:
        parser.error("us-before needs --before TREE")
    if args.before is not None and not (args.before / "relay" / "cli.py").is_file():
        parser.error(f"--before {args.before}: not a failover-relay source tree (no relay/cli.py)")

    ensure_load_tools(TOOLS)
    kopf_python = ensure_kopf_venv() if set(chosen) & set(NEEDS_BENCH_VENV) else BENCH / ".venv" / "bin" / "python"
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="failover-relay-instructions-"))
    body_files, newest, under_test = set_up(workdir, kopf_python, args.before)
    results: dict = {
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": sys.version.split()[0],
        "valgrind": _version(["valgrind", "--version"]),
        "h2load": _version(["h2load", "--version"]),
        "requests": args.requests,
        "warm_up": WARM_UP,
        "connections": CONNECTIONS,
        "stack": {"ours": list(OUR_STACK), "fast": list(FAST_STACK)},
        "collected": {},
    }
    print(
        f"workdir {workdir}; {len(chosen)} servers x {STEPS} processes under callgrind, "
        f"{args.requests} reviews per endpoint",
        flush=True,
    )
    try:
        for name in chosen:
            results["collected"][name] = [
                count(under_test[name], step, body_files, newest, args.requests, workdir) for step in range(STEPS)
            ]
    except RuntimeError as error:  # a server that did not start, answer right or stop: its logs say why
        print(f"error: {error}", file=sys.stderr)
        return 1
    results["per_review"] = {name: per_review(steps, args.requests) for name, steps in results["collected"].items()}
    results["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
    (workdir / "instructions.json").write_text(json.dumps(results, indent=1))
    print()
    print(render(results))
    print(f"\nraw results: {workdir / 'instructions.json'}; server and valgrind logs in {workdir}")
    return 0


def count(server: Server, step: int, body_files: dict[str, Path], newest: str, requests: int, workdir: Path) -> int:
    """Instructions of one whole server process under callgrind: start, warm-up, the step's reviews, SIGTERM."""
    valgrind_log = workdir / f"{server.name}-{step}.valgrind"
    run = replace(
        server,
        command=[
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            f"--log-file={valgrind_log}",
            *server.command,
        ],
        log=workdir / f"{server.name}-{step}.log",
        process=None,
    )
    print(f"{server.name} step {step}/{STEPS - 1}", flush=True)
    start_seconds = KOPF_START_SECONDS if server.name == "kopf" else START_SECONDS
    run.start()
    try:
        run.wait_until_answering(body_files["validate"].read_bytes(), timeout=start_seconds)
        check_answers(run, body_files, newest)
        for endpoint in ENDPOINTS:
            h2load(run, endpoint, body_files[endpoint], WARM_UP, WARM_UP_CONNECTIONS)
        for index, endpoint in enumerate(ENDPOINTS):
            measured = requests if index < step else 0
            h2load(run, endpoint, body_files[endpoint], CONNECTIONS + measured, CONNECTIONS)
    finally:
        stop(run)
    text = valgrind_log.read_text() if valgrind_log.exists() else ""
    collected = parse_collected(text)
    if collected is None:
        raise RuntimeError(f"{server.name}: no 'Collected' line from callgrind; see {valgrind_log} and {run.log}")
    return collected


def h2load(server: Server, endpoint: str, body: Path, requests: int, connections: int) -> None:
    """`requests` reviews over `connections` HTTP/1.1 keep-alive TLS connections (h2load splits them evenly)."""
    command = [
        "h2load",
        "--h1",
        "-t1",
        "-n",
        str(requests),
        f"-c{connections}",
        "-d",
        str(body),
        "-H",
        "Content-Type: application/json",
        f"{server.url}/{endpoint}",
    ]
    done = subprocess.run(command, capture_output=True, text=True)
    answered = successful_answers(done.stdout)
    if done.returncode != 0 or answered != requests:
        raise RuntimeError(
            f"{server.name} /{endpoint}: {answered} of {requests} requests answered 2xx "
            f"(h2load exit {done.returncode}: {(done.stdout + done.stderr)[-400:]!r}); see {server.log}"
        )


def successful_answers(output: str) -> int | None:
    """The requests h2load saw succeed with a 2xx status; None when its summary is not there."""
    requests = re.search(r"requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded", output)
    statuses = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", output)
    if not requests or not statuses:
        return None
    return min(int(requests.group(1)), int(statuses.group(1)))


def parse_collected(valgrind_log: str) -> int | None:
    """callgrind's total instruction count ("==PID== Collected : 123456"), None when the log has none."""
    match = re.search(r"Collected : (\d+)", valgrind_log)
    return int(match.group(1)) if match else None


def stop(server: Server) -> None:
    """SIGTERM, then up to STOP_SECONDS for a shutdown that runs 50 times slower than usual; callgrind writes its
    count when the process ends."""
    if server.process is None:
        return
    if server.process.poll() is None:
        server.process.terminate()
    try:
        server.process.wait(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired as err:
        server.process.kill()
        server.process.wait()
        raise RuntimeError(
            f"{server.name} did not stop within {STOP_SECONDS:g}s after SIGTERM; see {server.log}"
        ) from err


def per_review(steps: list[int], requests: int) -> dict[str, float]:
    """Each endpoint's instructions per review: the difference between the step that adds it and the one before."""
    return {endpoint: (steps[index + 1] - steps[index]) / requests for index, endpoint in enumerate(ENDPOINTS)}


def render(results: dict) -> str:
    """Instructions per review of each server and endpoint, and the ratios between servers (Markdown)."""
    counts = results["per_review"]
    ceiling = same_stack(results)
    lines = [
        f"Instructions per review (callgrind, {results['requests']} reviews per endpoint, whole server process; "
        f"`{ceiling}` is the same-stack ceiling):",
        "",
        "| server | endpoint | instructions per review | × same-stack ceiling |",
        "|---|---|---|---|",
    ]
    for name, endpoints in counts.items():
        for endpoint in ENDPOINTS:
            value = endpoints[endpoint]
            versus = _ratio(value, counts.get(ceiling, {}).get(endpoint))
            lines.append(f"| {name} | /{endpoint} | {value:,.0f} | {versus} |")
    rows = [(f"us / {other}", "us", other) for other in (ceiling, "kopf", "us-before")]
    rows.append((f"{ceiling} / us (throughput of a CPU-bound `us`, × ceiling)", ceiling, "us"))
    rows.append(("kopf / us (throughput of a CPU-bound `us`, × kopf)", "kopf", "us"))
    table = [
        (
            label,
            [_ratio(counts.get(mine, {}).get(endpoint), counts.get(other, {}).get(endpoint)) for endpoint in ENDPOINTS],
        )
        for label, mine, other in rows
    ]
    lines += [
        "",
        "Ratios of instructions per review (> 1: the first has more work per review):",
        "",
        "| ratio | " + " | ".join(f"/{endpoint}" for endpoint in ENDPOINTS) + " |",
        "|---|" + "---|" * len(ENDPOINTS),
    ]
    lines += [f"| {label} | " + " | ".join(cells) + " |" for label, cells in table if any(c != "-" for c in cells)]
    return "\n".join(lines)


def _ratio(mine: float | None, other: float | None) -> str:
    return f"{mine / other:.2f}" if mine is not None and other else "-"


def _version(command: list[str]) -> str:
    done = subprocess.run(command, capture_output=True, text=True)
    output = (done.stdout or done.stderr).strip()
    return output.splitlines()[0] if output else "?"


if __name__ == "__main__":
    sys.exit(main())
