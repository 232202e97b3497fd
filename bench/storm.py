"""A storm in real Karmada: one member carrying N stateful FlinkDeployments dies; every job's phases, timed.

    python bench/storm.py                            # 200 jobs, --resource-eviction-rate 0.5 then 5
    python bench/storm.py --jobs 50 --rates 0.5      # smaller, one rate
    python bench/storm.py --jobs 50 --rates 0.5 --karmada-controllers off,own,beside   # the relay against its peers
    python bench/storm.py --jobs 20 --rates 0.5 --cluster-failure-thresholds 30,10 \
        --cluster-status-update-frequencies 10,5                                         # the flags' effects
    python bench/storm.py --jobs 100 --rates 5 --relay-workers 8,32                     # the relay's workers

The control plane is the real-Karmada tier's (`tests/karmada_env/`: Karmada v1.19's own binaries, three member
kube-apiservers, failover-relay with its defaults, `fenceAfterSeconds` 60), with cluster failover as
docs/operations.md says (the Failover gate, NoExecute taint eviction, a ClusterTaintPolicy, status every 10 s,
failure threshold 30 s). One storm per combination of the lists given: `--karmada-controllers`, `--rates`
(karmada-controller-manager's `--resource-eviction-rate`), `--cluster-failure-thresholds` and
`--cluster-status-update-frequencies` (seconds; karmada-controller-manager is restarted with them for each storm) and
`--relay-workers` (the relay's `controllers.workers`; the relay is restarted with it).
What `--karmada-controllers` sets up:

- `off` (the default): docs/operations.md's install: Karmada's applicationFailover, gracefulEviction and
  workloadRebalancer controllers and the taint manager's eviction (`--enable-no-execute-taint-eviction=false`) off,
  the relay's loop and webhooks on: the relay writes the eviction tasks;
- `taint`: the same, but the taint manager writes the eviction tasks (`--enable-no-execute-taint-eviction=true`,
  the relay's `controllers.clusterEvictions: false`), the install before the relay wrote them: its pace against the
  relay's;
- `own`: Karmada alone, the world before the relay: all of Karmada's controllers with `StatefulFailoverInjection`
  (which makes the taint manager write the job id into its tasks), the relay stopped and its webhook
  configurations removed (put back after the storm);
- `beside`: the relay installed but Karmada's controllers and the taint manager's eviction left on (`--controllers=*`,
  the gates of the relay's install): two writers on the same eviction tasks (karmada#7483 measured the taint
  manager's `Update` against graceful eviction's at 5,000 bindings).

For each storm N FlinkDeployments are placed on the first member (ordered clusterAffinities), each reports a job
running and has completed checkpoints of its own; then that member's kube-apiserver is stopped and, by polling every
0.5 s, each job's phases are timed from the stop:

- `not ready`: Karmada's Cluster Ready condition leaves True (one time for all);
- `task`: the taint manager's eviction task on the job's binding;
- `released`: its old Work in `karmada-es-<member>` gone (deleted by Karmada, or fenced by the relay);
- `new work`: its Work for another member;
- `new copy`: its copy on another member (the job runs again);
- `restored`: that copy with `initialSavepointPath` of its own newest checkpoint and its own job id label.

The member stays down until every job is restored, or `--outage` seconds (default 300 + N / rate; Karmada alone
never restores: its execution controller cannot delete the old Work on a dead cluster,
`pkg/controllers/execution/execution_controller.go` `handleWorkDelete`, and the binding controller creates no new
Work while it is there, `checkDirectPurgeOrphanWorks`).
Then the member is started again and sampled with the others until every job has one copy, outside it: the time
each job ran nowhere (from the stop to its first copy elsewhere) and the time two copies of it existed at once (the
returning member's old copy beside the new one) are counted, with the jobs whose copy elsewhere changed (moved
twice).

Also printed: the relay's binding reconciles of the storm by result (`failover_relay_reconcile_total`: ok, conflict,
...), its binding writes whose precondition failed and its API calls (count and mean,
`failover_relay_api_call_duration_seconds`), karmada-controller-manager's log lines of the storm that report a
conflict ("the object has been modified"), by the controller that logged them, and the relay's warnings and errors
by event. Peers in the same run: the eviction tasks' pace (tasks per second over their spread, written by the relay
with `off`, by the taint manager with `taint` and `own`: `--karmada-controllers off,taint` compares the two) against
the relay's releases (per second over theirs), with the ratio; they compare when every task is written before the
fence time, so that the relay releases in one burst (the output says when not). The load average over the storm is
printed with them.

Per phase p50 / p95 / max over the N jobs, also written with `--json`. Exit status is non-zero only when the harness
fails (a wrong state restored is a result, printed); the numbers are in docs/benchmarks.md ("A storm in real
Karmada").
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import os
import re
import sys
import time
import uuid
from dataclasses import dataclass
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
from tests.karmada.storm import copies, relay_samples, storm_policy
from tests.karmada.workloads import BINDINGS, FLINK, WORKS, FlinkJob, new_job_id, restore_path
from tests.karmada_env import (
    KARMADA,
    KARMADA_CONTROLLERS,
    KARMADA_STATEFUL_GATES,
    RELAY_CONTROLLERS,
    RELAY_GATES,
    TAINT_EVICTION,
    KarmadaEnv,
    resource_path,
)

POLL_SECONDS = 0.5
PHASES = ("task", "released", "new work", "new copy", "restored")


@dataclass(frozen=True)
class Setup:
    """One value of --karmada-controllers: karmada-controller-manager's controllers, gates and flags, whether the
    relay runs, and its `controllers` settings."""

    controllers: str
    gates: str
    flags: tuple[str, ...] = ()
    relay: bool = True
    relay_settings: tuple[tuple[str, Any], ...] = ()


SETUPS = {
    "off": Setup(RELAY_CONTROLLERS, RELAY_GATES),
    "taint": Setup(RELAY_CONTROLLERS, RELAY_GATES, (TAINT_EVICTION,), relay_settings=(("clusterEvictions", False),)),
    "own": Setup(KARMADA_CONTROLLERS, KARMADA_STATEFUL_GATES, (TAINT_EVICTION,), relay=False),
    "beside": Setup(KARMADA_CONTROLLERS, RELAY_GATES, (TAINT_EVICTION,)),
}
# Who writes the eviction tasks in each set-up.
TASK_WRITERS = {"off": "the relay", "taint": "the taint manager", "own": "the taint manager", "beside": "both"}
WEBHOOK_KINDS = ("mutatingwebhookconfigurations", "validatingwebhookconfigurations")
CONFLICT = re.compile(r"the object has been modified|Operation cannot be fulfilled")
LOGGED_BY = re.compile(r'controller="([^"]+)"')


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


class RelayAway:
    """For Karmada alone: the relay stopped and its webhook configurations on karmada-apiserver taken out; `restore`
    puts both back as they were."""

    def __init__(self, env: KarmadaEnv, config: dict[str, Any]) -> None:
        self.env, self.config = env, config
        self.saved: list[dict[str, Any]] = []
        self.away = False

    def remove(self) -> None:
        if self.away:
            return
        self.away = True
        self.env.stop_relay()
        for kind in WEBHOOK_KINDS:
            listed = json.loads(self.env.kubectl("get", kind, "-o", "json").stdout)["items"]
            for item in listed:
                if item["metadata"]["name"].startswith("failover-relay"):
                    meta = item["metadata"]
                    item["metadata"] = {k: meta[k] for k in ("name", "labels", "annotations") if k in meta}
                    self.saved.append(item)
                    self.env.kubectl("delete", kind, meta["name"])

    def restore(self) -> None:
        if not self.away:
            return
        items = {"apiVersion": "v1", "kind": "List", "items": self.saved}
        self.env.kubectl("apply", "-f", "-", input=json.dumps(items))
        self.saved, self.away = [], False
        self.env.start_relay(self.config)


class LogTail:
    """The lines a log file gains from now on."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset = path, path.stat().st_size if path.exists() else 0

    def lines(self) -> list[str]:
        with self.path.open("rb") as file:
            file.seek(self.offset)
            return file.read().decode(errors="replace").splitlines()


def karmada_conflicts(lines: list[str]) -> dict[str, int]:
    """karmada-controller-manager's log lines reporting a 409, by who logged them: the taint manager logs "Failed to
    update binding" (`pkg/controllers/cluster/taint_manager.go`), controller-runtime's controllers name themselves,
    the others by their message (klog's text after the source location, up to the error)."""
    counts: collections.Counter[str] = collections.Counter()
    for line in lines:
        if CONFLICT.search(line):
            named = LOGGED_BY.search(line)
            if "Failed to update binding" in line or "Failed to update cluster binding" in line:
                counts["taint-manager"] += 1
            elif named:
                counts[named.group(1)] += 1
            else:
                message = line.split("] ", 1)[-1]
                counts[re.split(r"[:,(]| err", message, maxsplit=1)[0][:80]] += 1
    return dict(counts)


def relay_complaints(lines: list[str]) -> dict[str, int]:
    """The relay's log lines of level warning or error, by event."""
    counts: collections.Counter[str] = collections.Counter()
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("level") in ("warning", "error", "critical"):
            counts[f"{entry.get('level')}:{entry.get('event')}"] += 1
    return dict(counts)


def reconciles(env: KarmadaEnv) -> dict[str, float]:
    return {
        dict(labels)["result"]: value
        for labels, value in relay_samples(env, "failover_relay_reconcile_total").items()
        if dict(labels).get("controller") == "resourcebindings"
    }


def api_calls(env: KarmadaEnv) -> dict[str, tuple[float, float]]:
    """The relay's API calls so far (`failover_relay_api_call_duration_seconds`): call -> (count, seconds)."""
    counts = relay_samples(env, "failover_relay_api_call_duration_seconds_count")
    sums = relay_samples(env, "failover_relay_api_call_duration_seconds_sum")
    return {dict(labels)["call"]: (count, sums.get(labels, 0.0)) for labels, count in counts.items()}


def relay_counters(env: KarmadaEnv) -> dict[str, Any]:
    return {
        "reconciles": reconciles(env),
        "calls": api_calls(env),
        "precondition_failures": sum(relay_samples(env, "failover_relay_binding_precondition_failures_total").values()),
    }


def relay_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    calls = {
        call: (count - before["calls"].get(call, (0, 0.0))[0], total - before["calls"].get(call, (0, 0.0))[1])
        for call, (count, total) in after["calls"].items()
    }
    return {
        # The relay's binding reconciles of the storm, by result (a conflict: a write whose resourceVersion or test
        # failed twice; it is requeued).
        "binding_reconciles": {
            result: value - before["reconciles"].get(result, 0.0) for result, value in after["reconciles"].items()
        },
        # Binding writes whose test of a read field failed (decided again on a fresh read).
        "precondition_failures": after["precondition_failures"] - before["precondition_failures"],
        # The loop's API calls of the storm: call -> (count, seconds in total).
        "api_calls": {call: value for call, value in calls.items() if value[0]},
    }


def set_up(env: KarmadaEnv, mode: str, karmada_args: list[str], relay: RelayAway) -> None:
    """karmada-controller-manager and the relay as `mode` has them."""
    setup = SETUPS[mode]
    env.restart_controller_manager(setup.controllers, setup.gates, [*setup.flags, *karmada_args])
    if setup.relay:
        relay.restore()
    else:
        relay.remove()


def storm(
    env: KarmadaEnv,
    jobs_count: int,
    mode: str,
    rate: float,
    threshold: float,
    frequency: float,
    outage: float,
    relay_away: RelayAway,
) -> dict[str, Any]:
    home, others = env.members[0], list(env.members[1:])
    relay = SETUPS[mode].relay
    set_up(
        env,
        mode,
        [
            f"--resource-eviction-rate={rate}",
            f"--cluster-failure-threshold={threshold:g}s",
            f"--cluster-status-update-frequency={frequency:g}s",
        ],
        relay_away,
    )
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
        # The relay's record of each job's last healthy state, or for Karmada alone its reflection of the copy's
        # status (from which the taint manager takes the job id).
        listed = karmada.list(resource_path(BINDINGS, "resourcebindings", namespace=namespace))
        where = (lambda b: b["metadata"].get("annotations")) if relay else (lambda b: b.get("status"))
        return sum(ids[b["spec"]["resource"]["name"]] in str(where(b)) for b in listed) == len(jobs)

    wait("every job's state recorded", recorded, 60 + jobs_count)
    setup = time.monotonic() - started

    look = Look(env, namespace, home, others, newest, ids)
    not_ready: float | None = None
    loads = []
    before = relay_counters(env) if relay else None
    karmada_log, relay_log = LogTail(env.logs()["karmada-controller-manager"]), LogTail(env.relay_log)
    with taint_not_ready_clusters(env):
        env.stop_member(home)
        look.stopped = stopped = time.monotonic()
        deadline = stopped + outage
        while time.monotonic() < deadline and not look.all_restored():
            now = time.monotonic() - stopped
            answered(lambda at=now: look.poll(at, home_up=False))
            if not_ready is None and answered(lambda: not cluster_ready(env, home)):
                not_ready = now
            loads.append(os.getloadavg()[0])
            time.sleep(POLL_SECONDS)
        down = time.monotonic() - stopped
        during = relay_delta(before, relay_counters(env)) if relay else {}
        env.start_member(home)
        back = time.monotonic() - stopped
        # The member back: sampled with the others until every job has one copy, outside it.
        settle = time.monotonic() + 300 + jobs_count
        while not answered(lambda: look.settled()):
            if time.monotonic() > settle:
                raise RuntimeError(f"{home} back {time.monotonic() - stopped - back:.0f} s: {look.summary()}")
            now = time.monotonic() - stopped
            answered(lambda at=now: look.poll(at, home_up=True))
            loads.append(os.getloadavg()[0])
            time.sleep(POLL_SECONDS)
        wait(f"{home} Ready", lambda: cluster_ready(env, home), 180)
    for job in jobs:
        job.delete()
    seen = look.seen
    return {
        "jobs": jobs_count,
        "karmada_controllers": mode,
        "resource_eviction_rate": rate,
        "cluster_failure_threshold": threshold,
        "cluster_status_update_frequency": frequency,
        "setup_seconds": setup,
        "not_ready_seconds": not_ready,
        "member_down_seconds": down,
        "member_back_seconds": back,
        "phases": {phase: [phases[phase] for phases in seen.values() if phase in phases] for phase in PHASES},
        "restored_while_down": sum(phases.get("restored", float("inf")) < back for phases in seen.values()),
        # Each job's first copy elsewhere: with its own newest checkpoint, another state, or none (label only).
        "states": dict(collections.Counter(look.state.values())),
        "own_job_id_label": sum(look.label_ok.values()),
        "nowhere_seconds": [phases.get("new copy", float("nan")) for phases in seen.values()],
        # Per job seen with a copy in the returning member and one elsewhere at once: (first, last) such sample, in
        # seconds after the stop; and when the returning member's last stale copy was seen.
        "two_copies": look.two_copies,
        "last_stale_copy_seconds": look.last_stale,
        "moved_twice": sorted(name for name, placed in look.placed.items() if len(placed) > 1),
        **during,
        "karmada_conflicts": karmada_conflicts(karmada_log.lines()),
        "relay_warnings": relay_complaints(relay_log.lines()) if relay else {},
        "load_1m": [min(loads), max(loads)],
    }


class Look:
    """Every job's phases, seen by polling; `poll` is one look at all of them."""

    def __init__(
        self,
        env: KarmadaEnv,
        namespace: str,
        home: str,
        others: list[str],
        newest: dict[str, Path],
        ids: dict[str, str],
    ) -> None:
        self.env, self.namespace, self.home, self.others, self.newest, self.ids = (
            env,
            namespace,
            home,
            others,
            newest,
            ids,
        )
        self.seen: dict[str, dict[str, float]] = {name: {} for name in ids}
        self.state: dict[str, str] = {}
        self.label_ok: dict[str, bool] = {}
        self.placed: dict[str, set[tuple[str, str]]] = {name: set() for name in ids}
        self.two_copies: dict[str, tuple[float, float]] = {}
        self.last_stale: float | None = None
        self.in_home: set[str] = set(ids)
        self.elsewhere: dict[str, int] = {}
        self.stopped = 0.0

    def all_restored(self) -> bool:
        return all("restored" in phases for phases in self.seen.values())

    def settled(self) -> bool:
        return not self.in_home and all(self.elsewhere.get(name) == 1 for name in self.ids)

    def summary(self) -> str:
        return ", ".join(f"{phase} {sum(phase in p for p in self.seen.values())}" for phase in PHASES) + (
            f"; {len(self.in_home)} still in {self.home}"
        )

    def poll(self, now: float, home_up: bool) -> bool:
        env, karmada = self.env, self.env.api(KARMADA)
        for binding in karmada.list(resource_path(BINDINGS, "resourcebindings", namespace=self.namespace)):
            if binding["spec"].get("gracefulEvictionTasks"):
                self.seen[binding["spec"]["resource"]["name"]].setdefault("task", now)
        works_home = work_owners(env, self.home)
        works_elsewhere = set().union(*(work_owners(env, member) for member in self.others))
        for name, phases in self.seen.items():
            if "task" in phases and name not in works_home:
                phases.setdefault("released", now)
            if name in works_elsewhere:
                phases.setdefault("new work", now)
        elsewhere: collections.Counter[str] = collections.Counter()
        for member in self.others:
            for name, copy in copies(env, member, self.namespace).items():
                elsewhere[name] += 1
                self.placed[name].add((member, copy["metadata"]["uid"]))
                if name not in self.state:
                    self.seen[name]["new copy"] = now
                    path = restore_path(copy)
                    self.label_ok[name] = copy["metadata"].get("labels", {}).get(CLUSTER_JOB_ID_LABEL) == self.ids[name]
                    own = path == self.newest[name] and self.label_ok[name]
                    self.state[name] = "own" if own else ("other" if path else "none")
                    if own:
                        self.seen[name]["restored"] = now
        self.elsewhere = dict(elsewhere)
        if home_up:
            try:  # not `copies`, which makes a member that does not answer yet one without copies
                listed = env.api(self.home).list(resource_path(FLINK, "flinkdeployments", namespace=self.namespace))
            except Exception:  # noqa: BLE001  not answering yet: its copies are still unknown
                return True
            self.in_home = {copy["metadata"]["name"] for copy in listed}
            for name in self.in_home:
                self.last_stale = now
                if elsewhere[name]:
                    self.two_copies[name] = (self.two_copies.get(name, (now, now))[0], now)
        return True


def rate_of(times: list[float]) -> float:
    """Jobs per second over a phase's spread: (N - 1) / (last - first)."""
    return (len(times) - 1) / (max(times) - min(times)) if len(times) > 1 and max(times) > min(times) else float("nan")


def cells(values: list[float]) -> str:
    if not values:
        return "n/a | n/a | n/a"
    return " | ".join(f"{v:.1f}" for v in (percentile(values, 0.5), percentile(values, 0.95), max(values)))


def report(result: dict[str, Any], workers: int | None) -> None:
    not_ready = result["not_ready_seconds"]
    print(
        f"\n{result['jobs']} jobs, Karmada's controllers {result['karmada_controllers']}, relay workers "
        f"{workers or 'default'}, --resource-eviction-rate {result['resource_eviction_rate']}, "
        f"--cluster-failure-threshold {result['cluster_failure_threshold']:g}s, --cluster-status-update-frequency "
        f"{result['cluster_status_update_frequency']:g}s: cluster not Ready "
        + (f"{not_ready:.1f} s" if not_ready is not None else "never seen")
        + f" after its apiserver stopped; set-up {result['setup_seconds']:.0f} s; member down "
        f"{result['member_down_seconds']:.1f} s\n"
    )
    print("| phase, seconds after the stop | p50 | p95 | max |")
    print("|---|---|---|---|")
    for phase, values in result["phases"].items():
        print(f"| {phase} ({len(values)} jobs) | {cells(values)} |")
    restored = result["phases"]["restored"]
    print(
        f"\nlast job restored with its own state {max(restored):.1f} s after the stop"
        if restored
        else "\nno job restored with its own state"
    )
    print(
        f"first copy elsewhere, by state: {result['states']}; with its own job id label: {result['own_job_id_label']}; "
        f"restored while the member was down: {result['restored_while_down']}"
    )
    nowhere = [v for v in result["nowhere_seconds"] if v == v]
    print(f"running nowhere (stop to first copy elsewhere), p50 / p95 / max: {cells(nowhere)} s")
    two, stale = result["two_copies"], result["last_stale_copy_seconds"]
    longest = f", seen for up to {max(last - first for first, last in two.values()):.1f} s" if two else ""
    last_stale = (
        f"the last stale copy seen {stale - result['member_back_seconds']:.1f} s after the member answered"
        if stale is not None
        else "no stale copy seen after the member answered"
    )
    print(f"two copies at once after the member came back: {len(two)} jobs{longest}; {last_stale}")
    print(f"moved twice: {len(result['moved_twice'])}")
    if "binding_reconciles" in result:
        print(f"relay's binding reconciles during the outage, by result: {result['binding_reconciles']}")
        print(f"binding writes whose precondition failed: {result['precondition_failures']:.0f}")
    print(f"karmada-controller-manager's conflict log lines: {result['karmada_conflicts']}")
    if result["relay_warnings"]:
        print(f"relay's warnings and errors: {result['relay_warnings']}")
    tasks, released = result["phases"]["task"], result["phases"]["released"]
    writer = TASK_WRITERS[result["karmada_controllers"]]
    if tasks and released:
        # The relay's pace is seen only where its releases are not waiting for tasks: every task written before the
        # first release (the fence time comes after the last task), then all are released in one burst.
        print(
            f"eviction tasks ({writer}): {rate_of(tasks):.2f} /s; releases: {rate_of(released):.2f} /s, "
            f"{rate_of(released) / rate_of(tasks):.1f}x"
            + (
                ""
                if max(tasks) < min(released)
                else " (tasks still coming during the releases: the relay's pace is hidden)"
            )
        )
    elif tasks:
        print(f"eviction tasks ({writer}): {rate_of(tasks):.2f} /s; no release while the member was down")
    low, high = result["load_1m"]
    print(f"load average (1 min) during the storm: {low:.1f}-{high:.1f} on {os.cpu_count()} CPUs")
    calls = result.get("api_calls") or {}
    if calls:
        print(
            "relay's API calls during the outage: "
            + ", ".join(
                f"{call} {count:.0f} x {1000 * total / count:.0f} ms" for call, (count, total) in sorted(calls.items())
            )
        )


def numbers(text: str, what: str) -> list[float]:
    try:
        values = [float(value) for value in text.split(",")]
    except ValueError:
        raise SystemExit(f"{what}: comma-separated numbers") from None
    if any(value <= 0 for value in values):
        raise SystemExit(f"{what}: every value must be greater than 0")
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=200, help="FlinkDeployments on the member that dies (200)")
    parser.add_argument("--rates", default="0.5,5", help="--resource-eviction-rate values, one storm each (0.5,5)")
    parser.add_argument(
        "--karmada-controllers",
        default="off",
        help="off (the relay's install), own (Karmada alone), beside (both): one storm each (off)",
    )
    parser.add_argument("--cluster-failure-thresholds", default="30", help="seconds, one storm each (30)")
    parser.add_argument("--cluster-status-update-frequencies", default="10", help="seconds, one storm each (10)")
    parser.add_argument(
        "--outage", type=float, help="the longest the member stays down, in seconds (300 + jobs / rate, per storm)"
    )
    parser.add_argument(
        "--relay-workers",
        help="the relay's controllers.workers, one storm each (default: the relay's own default)",
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    try:
        rates = numbers(args.rates, "--rates")
        thresholds = numbers(args.cluster_failure_thresholds, "--cluster-failure-thresholds")
        frequencies = numbers(args.cluster_status_update_frequencies, "--cluster-status-update-frequencies")
        workers = numbers(args.relay_workers, "--relay-workers") if args.relay_workers else [0]
    except SystemExit as error:
        print(error, file=sys.stderr)
        return 2
    modes = args.karmada_controllers.split(",")
    if any(mode not in SETUPS for mode in modes):
        print(f"--karmada-controllers: a comma-separated list of {', '.join(SETUPS)}", file=sys.stderr)
        return 2
    if args.jobs < 1 or (args.outage is not None and args.outage <= 0):
        print("--jobs and --outage must be greater than 0", file=sys.stderr)
        return 2
    if any(count != int(count) for count in workers):
        print("--relay-workers: comma-separated whole numbers", file=sys.stderr)
        return 2
    env = KarmadaEnv(karmada_tree(source_only=False), ensure_binaries())
    env.start()
    relay_away = RelayAway(env, {})
    results = []
    try:
        grant_fencing_in_members(env)
        storms = itertools.product(workers, modes, rates, thresholds, frequencies)
        for count, mode, rate, threshold, frequency in storms:
            relay_workers = int(count) or None  # None: the relay's own default, as the tier started it
            settings = {**({"workers": relay_workers} if relay_workers else {}), **dict(SETUPS[mode].relay_settings)}
            config = {"controllers": settings} if settings else {}
            if config != relay_away.config:
                relay_away.config = config
                if not relay_away.away:
                    env.restart_relay(config)
            results.append(
                storm(
                    env, args.jobs, mode, rate, threshold, frequency, args.outage or 300 + args.jobs / rate, relay_away
                )
            )
            results[-1]["relay_workers"] = relay_workers
            report(results[-1], relay_workers)
            if args.json:
                args.json.write_text(json.dumps(results, indent=2))
    finally:
        env.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
