"""Admission benchmark: failover-relay (`us`) against kopf (`peer`) and a bare aiohttp endpoint (`ceiling`).

    make bench            # full: 3 alternating rounds, 10 s closed-loop runs, 12 s open-loop runs, lookup, profile
    make bench-quick      # smoke test under two minutes; never fails on numbers

Method (shared/reference perf-anchors): every server is one process on CPU 1, the load generators and this script
on CPU 0; everything on 127.0.0.1 over TLS with 16 HTTP/1.1 keep-alive connections. Each round runs the servers one
after another in a rotated order; numbers are reported as medians over rounds and as per-round ratios, because the
host's noise (±25 % between rounds) cancels within a round far better than across runs. Exit status is non-zero only
when the harness itself fails (a tool or server missing), never because of a number.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import bodies, load, profile
from bench.servers import BENCH, FAST_STACK, OUR_STACK, REPO, Server, servers

KOPF_VERSION = "1.45.2"
RATES = (200, 500, 1000)
MUTATE_RATE = 1000
ORDER = ("ceiling", "ceiling-fast", "kopf", "us")
LOAD_TOOLS = (("wrk", "wrk"), ("h2load", "nghttp2-client"))  # (command, Debian package)
FAST_PACKAGES = ("uvloop", "orjson")  # the fast ceiling's stack, in bench/.venv only
LOOKUP_TREE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "failover-relay-bench" / "lookup-tree"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one short round, small lookup tree, no profile")
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--closed-seconds", type=float, help="length of each wrk run")
    parser.add_argument("--open-seconds", type=float, help="length of each h2load run (the first 2 s are dropped)")
    parser.add_argument("--no-lookup", action="store_true", help="skip the savepoint-lookup benchmark")
    parser.add_argument("--no-profile", action="store_true", help="skip the py-spy profile of `us`")
    parser.add_argument(
        "--workdir",
        type=Path,
        help="where bodies, certificates, logs and results go (default: a new temporary directory)",
    )
    parser.add_argument(
        "--before",
        type=Path,
        metavar="TREE",
        help="also measure the relay of this source tree (e.g. `git worktree add TREE <commit>`) "
        "as `us-before`, in the same rounds",
    )
    args = parser.parse_args()
    quick = args.quick
    rounds = args.rounds or (1 if quick else 3)
    closed = args.closed_seconds or (3 if quick else 10)
    opened = args.open_seconds or (3 if quick else 12)
    discard = 1.0 if opened < 6 else 2.0
    pause = 0.5 if quick else 2.0

    os.sched_setaffinity(0, {0})  # this script and the load generators on CPU 0, the servers on CPU 1
    ensure_load_tools()
    kopf_python = ensure_kopf_venv()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="failover-relay-bench-"))
    body_files, newest, under_test = set_up(workdir, kopf_python, args.before)
    print(
        f"workdir {workdir}; bodies: validate {body_files['validate'].stat().st_size} B, "
        f"mutate {body_files['mutate'].stat().st_size} B",
        flush=True,
    )

    loaded = [name for name in (*ORDER, "us-before") if name in under_test]
    results: dict = {
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "settings": {
            "rounds": rounds,
            "closed_seconds": closed,
            "open_seconds": opened,
            "discard_seconds": discard,
            "quick": quick,
        },
        "stack": {"ours": list(OUR_STACK), "fast": list(FAST_STACK)},
        "rounds": [],
        "memory": {},
        "memory_at_start": {},
        "checks": {},
    }
    try:
        for server in under_test.values():
            server.start()
        for server in under_test.values():
            server.wait_until_answering(body_files["validate"].read_bytes())
            results["checks"][server.name] = check_answers(server, body_files, newest)
            results["memory_at_start"][server.name] = server.memory()
        check_our_loop(under_test["us"])
        print("answers: " + "; ".join(f"{name}: {check}" for name, check in results["checks"].items()), flush=True)

        for number in range(rounds):
            shift = number % len(loaded)
            order = loaded[shift:] + loaded[:shift]
            this_round: dict = {}
            for name in order:
                print(f"round {number + 1}/{rounds}: {name}", flush=True)
                this_round[name] = measure(under_test[name], body_files, closed, opened, discard, pause, quick)
            results["rounds"].append(this_round)
            results.setdefault("load_average_after_round", []).append(os.getloadavg())
        # The member-mode relay is not in the rounds (it is `us` without the control plane's modules): it serves
        # the same warm /mutate and /validate load once, so its memory includes what serving costs.
        load.wrk(under_test["member"].url + "/mutate", body_files["mutate"], closed)
        load.wrk(under_test["member"].url + "/validate", body_files["validate"], closed)
        for name, server in under_test.items():
            results["memory"][name] = server.memory()
        if not quick and not args.no_profile:
            print("profiling us with py-spy", flush=True)
            results["profile"] = profile.record(
                under_test["us"], body_files, kopf_python.parent / "py-spy", workdir, seconds=15
            )
    finally:
        for server in under_test.values():
            server.stop()
    if not args.no_lookup:
        results["lookup"] = lookup_benchmark(quick)

    results["machine"]["load_average_at_end"] = os.getloadavg()
    (workdir / "results.json").write_text(json.dumps(results, indent=1, default=str))
    print()
    print(report(results))
    print(f"\nraw results: {workdir / 'results.json'}; server logs in {workdir}")
    return 0


def set_up(workdir: Path, kopf_python: Path, before: Path | None) -> tuple[dict[str, Path], str, dict[str, Server]]:
    """The bodies, the checkpoint tree (and its newest checkpoint), the certificates and the servers, in `workdir`;
    shared with bench/server_instructions.py, so both benchmarks run the same servers on the same inputs."""
    from certs.serving import ensure_certificates

    workdir.mkdir(parents=True, exist_ok=True)
    body_files = bodies.write_bodies(workdir)
    checkpoint_root = workdir / "checkpoints"
    newest = bodies.build_checkpoint_tree(checkpoint_root)
    cert_dir = workdir / "certs"
    files = ensure_certificates(cert_dir, None, None, datetime.now(UTC))
    # By keyword: a change of servers()'s parameters fails here (and in tests/bench) instead of shifting them.
    listed = servers(
        workdir=workdir,
        cert=files.cert_file,
        key=files.key_file,
        cert_dir=cert_dir,
        member_cert_dir=write_cert_manager_files(workdir / "member-certs"),
        checkpoint_root=checkpoint_root,
        kopf_python=kopf_python,
        before=before,
    )
    return body_files, str(newest), {server.name: server for server in listed}


def write_cert_manager_files(cert_dir: Path) -> Path:
    """A cert dir as a cert-manager Certificate's Secret mounts it on a member cluster: tls.crt, tls.key and ca.crt
    of a CA that is not the relay's, no ca.key (certs/serving.py then serves the files as they are)."""
    from certs.authority import generate_ca, generate_serving_certificate
    from certs.serving_names import serving_names

    now = datetime.now(UTC)
    ca = generate_ca("cert-manager-ca", now, timedelta(days=365))
    leaf = generate_serving_certificate(ca, *serving_names(None, None), now, timedelta(days=90))
    cert_dir.mkdir(parents=True, exist_ok=True)
    for name, content in (
        ("tls.crt", leaf.certificate_pem),
        ("tls.key", leaf.private_key_pem),
        ("ca.crt", ca.certificate_pem),
    ):
        (cert_dir / name).write_bytes(content)
    return cert_dir


def measure(
    server: Server, body_files: dict[str, Path], closed: float, opened: float, discard: float, pause: float, quick: bool
) -> dict:
    """One server's block in a round: warm-up (unrecorded; also fills the savepoint cache), closed loop for both
    endpoints, open loop at each rate for /validate and at 1,000/s for /mutate."""
    runs: dict = {}
    load.wrk(server.url + "/validate", body_files["validate"], 1 if quick else 3)
    load.wrk(server.url + "/mutate", body_files["mutate"], 1)
    plan = [(f"closed/{endpoint}", endpoint, None) for endpoint in ("validate", "mutate")]
    plan += [(f"open/validate/{rate}", "validate", rate) for rate in RATES]
    plan += [(f"open/mutate/{MUTATE_RATE}", "mutate", MUTATE_RATE)]
    for key, endpoint, rate in plan:
        time.sleep(pause)
        cpu_before = server.cpu_seconds()
        if rate is None:
            result = load.wrk(f"{server.url}/{endpoint}", body_files[endpoint], closed)
        else:
            result = load.h2load(f"{server.url}/{endpoint}", body_files[endpoint], rate, opened, discard)
        cpu = server.cpu_seconds() - cpu_before
        total = result.requests if rate is None else rate * opened
        result.cpu_us_per_request = cpu / total * 1e6 if total else 0.0
        runs[key] = asdict(result)
    return runs


def check_our_loop(server: Server) -> None:
    """The same-stack ceiling is only that if the relay really runs on OUR_STACK's event loop (its `serving` line)."""
    for line in server.log.read_text().splitlines():
        if line.startswith("{") and json.loads(line).get("event") == "serving":
            loop = json.loads(line).get("event_loop")
            if loop != OUR_STACK[0]:
                raise RuntimeError(f"the relay runs on {loop}, bench/servers.py OUR_STACK says {OUR_STACK[0]}")
            return
    raise RuntimeError(f"no serving line in {server.log}")


def check_answers(server: Server, body_files: dict[str, Path], newest: str) -> str:
    """Every server must allow the policy; the two real ones must patch the FlinkDeployment with the newest
    completed checkpoint. A wrong answer stops the run: fast wrong answers are not a result."""
    validate = server.post("/validate", body_files["validate"].read_bytes())["response"]
    mutate = server.post("/mutate", body_files["mutate"].read_bytes())["response"]
    if validate.get("allowed") is not True or mutate.get("allowed") is not True:
        raise RuntimeError(f"{server.name} did not allow the benchmark bodies: {validate} {mutate}")
    if server.name.startswith("ceiling"):
        return "allows both"
    import base64

    patch = json.loads(base64.b64decode(mutate.get("patch", "")) or b"[]")
    if newest not in json.dumps(patch):
        raise RuntimeError(f"{server.name} did not inject {newest}: {patch}")
    return f"allows the policy, patches the FlinkDeployment ({len(patch)} ops)"


def ensure_load_tools(tools: tuple[tuple[str, str], ...] = LOAD_TOOLS) -> None:
    """Installs the Debian package of each (command, package) whose command is missing."""
    missing = [package for tool, package in tools if not shutil.which(tool)]
    if not missing:
        return
    print(f"installing {' '.join(missing)} with apt-get", flush=True)
    install = ["apt-get", "install", "-y", "-q", *missing]
    if subprocess.run(install, stdout=subprocess.DEVNULL).returncode != 0:
        subprocess.run(["apt-get", "update", "-q"], stdout=subprocess.DEVNULL, check=True)
        subprocess.run(install, stdout=subprocess.DEVNULL, check=True)


def ensure_kopf_venv() -> Path:
    """kopf lives in its own virtualenv (bench/.venv) with the project's dependencies at the versions the project
    venv has, so both servers run the same aiohttp; py-spy comes with it."""
    venv = BENCH / ".venv"
    python = venv / "bin" / "python"
    stamp = venv / f".installed-kopf-{KOPF_VERSION}-{'-'.join(FAST_PACKAGES)}"
    if stamp.exists():
        return python
    print(f"creating {venv} with kopf {KOPF_VERSION} and py-spy", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    from importlib.metadata import version

    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    pinned = [f"aiohttp=={version('aiohttp')}"] + [d for d in dependencies if not d.startswith("aiohttp")]
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", f"kopf=={KOPF_VERSION}", "py-spy", *FAST_PACKAGES, *pinned],
        check=True,
    )
    stamp.touch()
    return python


def lookup_benchmark(quick: bool) -> str:
    """bench/lookup_bench.py: cold (uncached) and warm lookups over a 10,000-job tree, kept between runs."""
    if quick:
        command = [
            sys.executable,
            str(BENCH / "lookup_bench.py"),
            "--jobs",
            "300",
            "--checkpoints",
            "20",
            "--samples",
            "200",
        ]
    else:
        LOOKUP_TREE.parent.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, str(BENCH / "lookup_bench.py"), "--root", str(LOOKUP_TREE), "--keep"]
    print("savepoint lookup benchmark: " + " ".join(command[1:]), flush=True)
    done = subprocess.run(["taskset", "-c", "1", *command], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else f"lookup benchmark failed: {done.stderr[-500:]}"


def machine() -> dict:
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        "?",
    )
    memory = Path("/proc/meminfo").read_text().split("\n")[0].split()[1]
    return {
        "cpu": model,
        "cpus": os.cpu_count(),
        "memory_gib": round(int(memory) / 2**20, 1),
        "kernel": os.uname().release,
        "python": sys.version.split()[0],
        "load_average_at_start": os.getloadavg(),
        "wrk": _first_line(["wrk", "-v"]),
        "h2load": _first_line(["h2load", "--version"]),
        "load_average_at_end": None,
    }


def _first_line(command: list[str]) -> str:
    done = subprocess.run(command, capture_output=True, text=True)
    return (done.stdout or done.stderr).strip().splitlines()[0] if (done.stdout or done.stderr) else "?"


def report(results: dict) -> str:
    from bench.report import render

    return render(results)


if __name__ == "__main__":
    sys.exit(main())
