"""A storm in real Karmada: one member carrying N stateful FlinkDeployments dies; every job's phases, timed.

    python bench/storm.py                            # 200 jobs, --resource-eviction-rate 0.5 then 5
    python bench/storm.py --jobs 50 --rates 0.5      # smaller, one rate

The control plane is the real-Karmada tier's (`tests/karmada_env.py`: Karmada v1.19's own binaries, three member
kube-apiservers, failover-relay with its defaults, `fenceAfterSeconds` 60), with cluster failover as
docs/operations.md says (the Failover gate, NoExecute taint eviction, a ClusterTaintPolicy, status every 10 s,
failure threshold 30 s). For each rate, karmada-controller-manager is restarted with `--resource-eviction-rate`, N
FlinkDeployments are placed on the first member (ordered clusterAffinities), each reports a job running and has
completed checkpoints of its own; then that member's kube-apiserver is stopped and, by polling every 0.5 s, each
job's phases are timed from the stop:

- `not ready`: Karmada's Cluster Ready condition leaves True (one time for all);
- `task`: the taint manager's eviction task on the job's binding;
- `released`: its old Work in `karmada-es-<member>` gone (deleted by Karmada, or fenced by the relay);
- `new work`: its Work for another member;
- `restored`: its copy there with `initialSavepointPath` (the relay's Work webhook), checked to be its own state.

and the relay's binding reconciles by result (`failover_relay_reconcile_total`: ok, conflict, ...) since it started,
its binding writes whose precondition failed, and its API calls from the stop to the last restore by call (count and
mean, `failover_relay_api_call_duration_seconds`). Peers in the same run: the taint manager's pace (tasks per second
over their spread) against the relay's (releases per second over theirs), with the ratio; they compare when every
task is written before the fence time, so that the relay releases in one burst (the output says when not). The
load average over the storm is printed with them.

It prints per phase p50 / p95 / max over the N jobs and the time until the last job was restored, and writes them
with `--json`. The member is started again between rates (the relay deletes the stale copies). Exit status is
non-zero only when the harness fails; the numbers are in docs/benchmarks.md ("A storm in real Karmada").
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.crd_sources import karmada_tree
from tests.envtest import ensure_binaries
from tests.karmada.outages import (
    CLUSTER_JOB_ID_LABEL,
    cluster_ready,
    grant_fencing_in_members,
    taint_not_ready_clusters,
)
from tests.karmada.test_storm import copies, relay_samples, storm_policy
from tests.karmada.workloads import BINDINGS, WORKS, FlinkJob, new_job_id, restore_path
from tests.karmada_env import KARMADA, KarmadaEnv, resource_path

POLL_SECONDS = 0.5
PHASES = ("task", "released", "new work", "restored")


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered) + 0.5) - 1))]


def work_owners(env: KarmadaEnv, member: str) -> set[str]:
    """Names of the FlinkDeployments that have a Work in `karmada-es-<member>`."""
    owners = set()
    for work in env.api(KARMADA).list(resource_path(WORKS, "works", namespace=f"karmada-es-{member}")):
        for manifest in (work.get("spec") or {}).get("workload", {}).get("manifests") or []:
            if manifest.get("kind") == "FlinkDeployment":
                owners.add((manifest.get("metadata") or {}).get("name"))
    return owners


def answered(condition: Any) -> Any:
    """`condition()`, or False when an apiserver did not answer in time (a loaded machine): a missed poll."""
    try:
        return condition()
    except (TimeoutError, OSError):
        return False


def wait(what: str, condition: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not answered(condition):
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(1)


def storm(env: KarmadaEnv, jobs_count: int, rate: float) -> dict[str, Any]:
    home, others = env.members[0], list(env.members[1:])
    env.restart_controller_manager(args=[f"--resource-eviction-rate={rate}"])
    namespace = f"storm-{uuid.uuid4().hex[:6]}"
    karmada = env.api(KARMADA)
    karmada.create(
        resource_path("v1", "namespaces"), {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    )
    jobs = [FlinkJob(env, namespace, f"job-{index:03d}") for index in range(jobs_count)]
    started = time.monotonic()
    for job in jobs:
        job.create(storm_policy(namespace, job, home, others))
    wait(f"{jobs_count} copies in {home}", lambda: len(copies(env, home, namespace)) == jobs_count, 60 + jobs_count)
    ids, newest = {}, {}
    for index, job in enumerate(jobs):
        ids[job.name] = new_job_id()
        job.report_healthy(home, ids[job.name])
        newest[job.name] = job.write_checkpoints(ids[job.name], completed=(1, 2 + index % 7)) / f"chk-{2 + index % 7}"

    def recorded() -> bool:
        listed = karmada.list(resource_path(BINDINGS, "resourcebindings", namespace=namespace))
        return sum(ids[b["spec"]["resource"]["name"]] in str(b["metadata"].get("annotations")) for b in listed) == len(
            jobs
        )

    wait("every job's state recorded by the relay", recorded, 60 + jobs_count)
    setup = time.monotonic() - started

    seen: dict[str, dict[str, float]] = {job.name: {} for job in jobs}
    not_ready: float | None = None
    loads = []
    calls_before = api_calls(env)
    with taint_not_ready_clusters(env):
        env.stop_member(home)
        stopped = time.monotonic()
        deadline = stopped + 300 + jobs_count / rate
        while sum("restored" in phases for phases in seen.values()) < jobs_count:
            if time.monotonic() > deadline:
                raise RuntimeError(f"storm not over after {deadline - stopped:.0f} s: {summary(seen)}")
            now = time.monotonic() - stopped
            answered(lambda at=now: poll(env, namespace, home, others, seen, newest, ids, at))
            if not_ready is None and answered(lambda: not cluster_ready(env, home)):
                not_ready = now
            loads.append(os.getloadavg()[0])
            time.sleep(POLL_SECONDS)
    reconciles = relay_samples(env, "failover_relay_reconcile_total")
    calls = {
        call: (count - calls_before.get(call, (0, 0.0))[0], total - calls_before.get(call, (0, 0.0))[1])
        for call, (count, total) in api_calls(env).items()
    }
    precondition_failures = sum(relay_samples(env, "failover_relay_binding_precondition_failures_total").values())
    env.start_member(home)
    wait(f"the stale copies in {home} deleted", lambda: not copies(env, home, namespace), 300)
    wait(f"{home} Ready", lambda: cluster_ready(env, home), 180)
    for job in jobs:
        job.delete()
    return {
        "jobs": jobs_count,
        "resource_eviction_rate": rate,
        "setup_seconds": setup,
        "not_ready_seconds": not_ready,
        "phases": {phase: [phases[phase] for phases in seen.values() if phase in phases] for phase in PHASES},
        "last_restored_seconds": max(phases["restored"] for phases in seen.values()),
        # The relay's binding reconciles until the last job was restored, by result (a conflict: a 409 on a write
        # with the resourceVersion the decision was made on; it is retried with a fresh read).
        "binding_reconciles": {
            dict(labels)["result"]: value
            for labels, value in reconciles.items()
            if dict(labels).get("controller") == "resourcebindings"
        },
        # Binding writes whose test of a read field failed (decided again on a fresh read; 0 before they existed).
        "precondition_failures": precondition_failures,
        # The loop's API calls from the stop until the last job was restored: call -> (count, seconds in total).
        "api_calls": {call: value for call, value in calls.items() if value[0]},
        "load_1m": [min(loads), max(loads)],
    }


def api_calls(env: KarmadaEnv) -> dict[str, tuple[float, float]]:
    """The relay's API calls so far (`failover_relay_api_call_duration_seconds`): call -> (count, seconds)."""
    counts = relay_samples(env, "failover_relay_api_call_duration_seconds_count")
    sums = relay_samples(env, "failover_relay_api_call_duration_seconds_sum")
    return {dict(labels)["call"]: (count, sums.get(labels, 0.0)) for labels, count in counts.items()}


def rate_of(times: list[float]) -> float:
    """Jobs per second over a phase's spread: (N - 1) / (last - first)."""
    return (len(times) - 1) / (max(times) - min(times)) if len(times) > 1 and max(times) > min(times) else float("inf")


def poll(
    env: KarmadaEnv,
    namespace: str,
    home: str,
    others: list[str],
    seen: dict[str, dict[str, float]],
    newest: dict[str, Path],
    ids: dict[str, str],
    now: float,
) -> bool:
    """One look at every job's phase (`now`: seconds after the stop); raises when a job got another's state."""
    karmada = env.api(KARMADA)
    for binding in karmada.list(resource_path(BINDINGS, "resourcebindings", namespace=namespace)):
        if binding["spec"].get("gracefulEvictionTasks"):
            seen[binding["spec"]["resource"]["name"]].setdefault("task", now)
    in_home = work_owners(env, home)
    elsewhere = set().union(*(work_owners(env, member) for member in others))
    for name, phases in seen.items():
        if "task" in phases and name not in in_home:
            phases.setdefault("released", now)
        if name in elsewhere:
            phases.setdefault("new work", now)
    for member in others:
        for name, copy in copies(env, member, namespace).items():
            if "restored" not in seen[name] and restore_path(copy):
                if (
                    restore_path(copy) != newest[name]
                    or copy["metadata"]["labels"].get(CLUSTER_JOB_ID_LABEL) != ids[name]
                ):
                    raise RuntimeError(f"{name} restored with another state: {restore_path(copy)}")
                seen[name]["restored"] = now
    return True


def summary(seen: dict[str, dict[str, float]]) -> str:
    return ", ".join(f"{phase} {sum(phase in p for p in seen.values())}" for phase in PHASES)


def report(result: dict[str, Any], workers: int | None) -> None:
    print(
        f"\n{result['jobs']} jobs, relay workers {workers or 'default'}, --resource-eviction-rate "
        f"{result['resource_eviction_rate']}: cluster not Ready "
        f"{result['not_ready_seconds']:.1f} s after its apiserver stopped; set-up {result['setup_seconds']:.0f} s\n"
    )
    print("| phase, seconds after the stop | p50 | p95 | max |")
    print("|---|---|---|---|")
    for phase, values in result["phases"].items():
        cells = " | ".join(f"{percentile(values, q):.1f}" for q in (0.5, 0.95)) if values else "n/a | n/a"
        print(f"| {phase} ({len(values)} jobs) | {cells} | {max(values) if values else float('nan'):.1f} |")
    print(f"\nlast job restored {result['last_restored_seconds']:.1f} s after the stop")
    print(f"relay's binding reconciles since it started, by result: {result['binding_reconciles']}")
    print(f"binding writes whose precondition failed: {result['precondition_failures']:.0f}")
    tasks, released = result["phases"]["task"], result["phases"]["released"]
    # The relay's pace is seen only where its releases are not waiting for tasks: every task written before the
    # first release (the fence time comes after the last task), then all are released in one burst.
    print(
        f"taint manager: {rate_of(tasks):.2f} tasks/s; relay: {rate_of(released):.2f} releases/s, "
        f"{rate_of(released) / rate_of(tasks):.1f}x"
        + (
            ""
            if max(tasks) < min(released)
            else " (tasks still coming during the releases: the relay's pace is hidden)"
        )
    )
    low, high = result["load_1m"]
    print(f"load average (1 min) during the storm: {low:.1f}-{high:.1f} on {os.cpu_count()} CPUs")
    calls = result["api_calls"]
    print(
        "relay's API calls from the stop to the last restore: "
        + ", ".join(
            f"{call} {count:.0f} x {1000 * total / count:.0f} ms" for call, (count, total) in sorted(calls.items())
        )
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=200, help="FlinkDeployments on the member that dies (200)")
    parser.add_argument("--rates", default="0.5,5", help="--resource-eviction-rate values, one storm each (0.5,5)")
    parser.add_argument(
        "--relay-workers", type=int, help="the relay's controllers.workers (default: the relay's own default, 8)"
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    try:
        rates = [float(rate) for rate in args.rates.split(",")]
    except ValueError:
        print("--rates: comma-separated numbers", file=sys.stderr)
        return 2
    if args.jobs < 1 or any(rate <= 0 for rate in rates) or (args.relay_workers is not None and args.relay_workers < 1):
        print("--jobs, --relay-workers and every rate must be greater than 0", file=sys.stderr)
        return 2
    env = KarmadaEnv(karmada_tree(source_only=False), ensure_binaries())
    env.start()
    results = []
    try:
        grant_fencing_in_members(env)
        if args.relay_workers:
            env.restart_relay({"controllers": {"workers": args.relay_workers}})
        for rate in rates:
            results.append(storm(env, args.jobs, rate))
            report(results[-1], args.relay_workers)
    finally:
        env.stop()
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
