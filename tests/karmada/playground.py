"""`make playground`: the real-Karmada tier's control plane on a workstation, for trying a failover by hand.

It starts what the tier starts (tests/karmada_env: Karmada v1.19's own binaries, two Push members, the relay with the
quick start's configuration, a member relay with the storage fence's watcher in each member), creates one stateful
FlinkDeployment under the quick start's kind of policy, plays its Flink operator in the members, and prints how to
make it fail over and watch it. Ctrl-C, or `make playground-stop` from another terminal, stops everything.

The operator is played as the tier plays it (tests/karmada/workloads.py `FlinkJob`): a copy that appears in a member
is reported RUNNING under a new job id, and a completed checkpoint is written in Flink's layout every
CHECKPOINT_SECONDS. With `--flink`, a real Flink job runs behind each copy instead, as in the tier's records tests
(`FlinkJob.run_flink`: the probe of hack/build-flink-probe.sh in a MiniCluster, started from the copy's own spec and
the restore path the relay gave it, checkpointing every 2 s), and its restore is Flink's own. Two ways to break it:

- application failover: annotate the template with FAIL_ANNOTATION naming the member; its copy there is then
  reported failing (RECONCILING with the JobManager's error), Karmada turns it Unhealthy and the relay evicts it after
  the policy's tolerationSeconds;
- cluster failover: SIGSTOP the loopback link the member is registered behind (the tier's partition): Karmada loses
  the member, the ClusterTaintPolicy taints it, the relay fences the copy and moves it. SIGCONT heals it.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from pathlib import Path

from tests.crd_sources import karmada_tree
from tests.envtest import ensure_binaries
from tests.flink_job import FlinkUnavailable, Probe, ProbeFailed, RunningJob, build_probes
from tests.karmada.outages import TAINT_POLICY_FILE, grant_fencing_in_members, stateful_cluster_policy
from tests.karmada.records import FLINK_CONFIGURATION, FLINK_VERSION, KEYS, RATE
from tests.karmada.workloads import FLINK, FlinkJob, new_job_id, restore_path
from tests.karmada_env import KARMADA, KarmadaEnv, resource_path

MEMBERS = ("member1", "member2")
NAMESPACE, NAME = "playground", "wordcount"
TOLERATION_SECONDS = 30
CHECKPOINT_SECONDS = 10
FAIL_ANNOTATION = "playground.failover-relay.io/fail"
# Where `make playground-stop` finds the running playground.
PID_FILE = Path(os.environ.get("XDG_RUNTIME_DIR") or "/tmp") / f"failover-relay-playground-{os.getuid()}.pid"


class OperatorPlayer(threading.Thread):
    """The Flink operator of the playground's job, in every member: run new copies, checkpoint, fail on request."""

    def __init__(
        self, job: FlinkJob, checkpoint_seconds: float = CHECKPOINT_SECONDS, probe: Probe | None = None
    ) -> None:
        super().__init__(name="operator-player", daemon=True)
        self.job = job
        self.checkpoint_seconds = checkpoint_seconds
        self.probe = probe  # a real Flink job behind each copy; None: checkpoints written by the player
        self.flink: dict[str, RunningJob] = {}  # member -> its copy's job, with --flink
        self.started = 0
        self.stopped = threading.Event()
        self.runs: dict[str, str] = {}  # member -> the job id its copy runs under
        self.checkpoints: dict[str, int] = {}  # job id -> its newest completed checkpoint
        self.failing: set[str] = set()
        self.problems: dict[str, str] = {}  # member -> why it could not be played, said once

    def run(self) -> None:
        next_checkpoint = time.monotonic() + self.checkpoint_seconds
        while not self.stopped.wait(1):
            for member in self.job.env.members:
                try:
                    self._play(member)
                    self.problems.pop(member, None)
                except Exception as error:  # noqa: BLE001  a member's apiserver stopped by hand: again next second
                    problem = f"{error.__class__.__name__}: {error}"
                    if self.problems.get(member) != problem:  # once, not every second
                        self.problems[member] = problem
                        say(f"{member}: not played until it answers ({problem})")
            if self.probe is None and time.monotonic() >= next_checkpoint:
                next_checkpoint += self.checkpoint_seconds
                for member, job_id in self.runs.items():
                    if member not in self.failing:
                        number = self.checkpoints.get(job_id, 0) + 1
                        self.job.write_checkpoints(job_id, completed=(number,))
                        self.checkpoints[job_id] = number

    def _play(self, member: str) -> None:
        copy = self.job.copy_in(member)
        if copy is None:
            if self.runs.pop(member, None):
                self.failing.discard(member)
                self._stop_flink(member)
                say(f"{member}: copy deleted")
            return
        if member not in self.runs:
            start = restore_path(copy)
            if self.probe is None:
                job_id = self.runs[member] = new_job_id()
                self.job.report_healthy(member, job_id)
            else:  # the operator starts the job from the copy's spec: Flink restores the path, or starts empty
                self.started += 1
                run_dir = self.job.env.checkpoint_root.parent / "playground-flink" / f"{self.started}-{member}"
                running = self.flink[member] = self.job.run_flink(member, self.probe, run_dir, KEYS, RATE)
                job_id = self.runs[member] = running.job_id
            say(f"{member}: copy running as job {job_id}, from {start or 'empty state'}")
            return
        annotations = (copy.get("metadata") or {}).get("annotations") or {}
        suspended = ((copy.get("spec") or {}).get("job") or {}).get("state") == "suspended"
        if (annotations.get(FAIL_ANNOTATION) == member or suspended) and member not in self.failing:
            self.failing.add(member)
            self._stop_flink(member)  # its JobManager dies (OutOfMemoryError), or the suspension stops the job
            if suspended:  # the storage fence suspended it: its job stops, checkpoints no more
                self.job.report(member, "FINISHED", self.runs[member], lifecycle="SUSPENDED")
                say(f"{member}: copy suspended by the storage fence")
            else:
                self.job.report_unhealthy(member, self.runs[member])
                self._consume_fail_request()
                say(f"{member}: copy failing (JobManager error reported); Karmada turns it Unhealthy")

    def _stop_flink(self, member: str) -> None:
        running = self.flink.pop(member, None)
        if running is not None:
            running.kill()

    def stop(self) -> None:
        self.stopped.set()
        self.join(10)
        for member in list(self.flink):
            self._stop_flink(member)

    def _consume_fail_request(self) -> None:
        """Take the annotation off the template, so that the copy Karmada makes next does not inherit it."""
        self.job.env.api(KARMADA).patch(
            resource_path(FLINK, "flinkdeployments", self.job.name, self.job.namespace),
            {"metadata": {"annotations": {FAIL_ANNOTATION: None}}},
        )


def say(line: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {line}", flush=True)


def start(members: tuple[str, ...], member_relays: bool, flink: bool) -> tuple[KarmadaEnv, FlinkJob]:
    env = KarmadaEnv(karmada_tree(source_only=False), ensure_binaries(), members=members)
    env.start()
    try:
        for member in members if member_relays else ():
            env.start_member_relay(member)
        grant_fencing_in_members(env)  # the relay deletes a fenced copy through Karmada's proxy once it answers
        env.kubectl("apply", "-f", str(TAINT_POLICY_FILE), cluster=KARMADA)
        env.api(KARMADA).create(
            resource_path("v1", "namespaces"),
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        )
        job = FlinkJob(env, NAMESPACE, NAME)
        # Application and cluster failover, each with the job id (the tier's partition tests' policy).
        job.create(
            stateful_cluster_policy(NAME, NAMESPACE, NAME, members, toleration_seconds=TOLERATION_SECONDS),
            flink_configuration=FLINK_CONFIGURATION if flink else None,
        )
        job.wait_placed()
    except BaseException:
        env.stop(keep=True)
        raise
    return env, job


def instructions(
    env: KarmadaEnv,
    job: FlinkJob,
    member_relays: bool,
    toleration_seconds: int = TOLERATION_SECONDS,
    flink: bool = False,
) -> str:
    placed = job.placed_on()[0]
    fence = (
        "each member runs a member relay: a partitioned member's copy is suspended before its replacement starts"
        if member_relays
        else "no member relays (--no-member-relays): a partitioned member's copy is fenced by time only"
    )
    links = "\n".join(
        f"    kill -STOP {env.link_pid(member)}   # {member}; kill -CONT heals it" for member in env.members
    )
    operator = (
        f"runs a real Flink {FLINK_VERSION} job behind each copy (a checkpoint every 2 s)"
        if flink
        else f"plays its Flink operator (a checkpoint every {CHECKPOINT_SECONDS} s)"
    )
    exports = "\n".join(
        f"    export {cluster.upper()}_KUBECONFIG={env.kubeconfig(cluster)}" for cluster in (KARMADA, *env.members)
    )
    return f"""
Karmada {env.tree.version}, {", ".join(env.members)} and failover-relay ready in {env.startup_seconds:.0f} s
(relay {env.relay_url}, checkpoints below {env.checkpoint_root}; {fence}).

{exports}

{job.namespace}/{job.name} runs on {placed}; the playground {operator}.
Watch where it stands, in another terminal:

    failover-relay status {job.namespace}/{job.name} --kubeconfig "$KARMADA_KUBECONFIG" \\
        --config {env.relay_config_file} --watch

Application failover: make the copy on {placed} fail; the relay moves it {toleration_seconds} s after Karmada
sees it Unhealthy, and the new copy starts from the newest checkpoint:

    kubectl --kubeconfig "$KARMADA_KUBECONFIG" -n {job.namespace} annotate --overwrite flinkdeployment {job.name} \\
        {FAIL_ANNOTATION}={placed}

Cluster failover: cut a member off the control plane (its apiserver and the copy keep running):

{links}

Logs: {env.logs_dir} (the relay's: {env.relay_log}).
Ctrl-C here, or `make playground-stop`, stops everything.
"""


def stop_running() -> int:
    try:
        pid = int(PID_FILE.read_text())
        os.kill(pid, signal.SIGINT)
    except (FileNotFoundError, ValueError, ProcessLookupError):
        print("failover-relay playground: none running", file=sys.stderr)
        return 1
    print(f"failover-relay playground: stopping (pid {pid})")
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="make playground", description=__doc__.split("\n\n")[0])
    parser.add_argument("--stop", action="store_true", help="stop the playground running in another terminal")
    parser.add_argument("--no-member-relays", action="store_true", help="fence a partitioned member by time only")
    parser.add_argument(
        "--flink", action="store_true", help=f"a real Flink {FLINK_VERSION} job behind each copy (Java, Maven once)"
    )
    args = parser.parse_args(argv)
    if args.stop:
        return stop_running()
    if PID_FILE.exists():
        try:
            os.kill(int(PID_FILE.read_text()), 0)
            print(f"failover-relay playground: already running (pid {PID_FILE.read_text()})", file=sys.stderr)
            return 2
        except (ValueError, ProcessLookupError):
            pass  # left by one that was killed
    PID_FILE.write_text(str(os.getpid()))
    env: KarmadaEnv | None = None
    player: OperatorPlayer | None = None
    try:
        say(f"starting Karmada with {', '.join(MEMBERS)} and failover-relay (about 2 minutes)")
        probe = None
        if args.flink:
            say("building the Flink probe if it is not yet (hack/build-flink-probe.sh; Maven, once)")
            try:
                probe = Probe.of(build_probes(), FLINK_VERSION)
            except (FlinkUnavailable, ProbeFailed) as error:
                print(f"failover-relay playground: --flink: {error}", file=sys.stderr)
                return 2
        env, job = start(MEMBERS, not args.no_member_relays, args.flink)
        player = OperatorPlayer(job, probe=probe)
        player.start()
        print(instructions(env, job, not args.no_member_relays, flink=args.flink), flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return 0
    finally:
        if player is not None:
            player.stop()
        if env is not None:
            say("stopping")
            for member in env.members:  # a SIGSTOPped link would not stop
                env.heal_member(member)
            env.stop()
        PID_FILE.unlink(missing_ok=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
