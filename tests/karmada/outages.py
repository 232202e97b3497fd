"""What the state-on-every-path tests of this tier add to ``workloads.py``: a cluster that dies and comes back, the
ClusterTaintPolicy and member RBAC that cluster failover and fencing need (docs/operations.md "Cluster failover and
a dead cluster"), and a watch on the member copies that proves there is never more than one."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Self

import yaml

from tests.flink_jobmanager import jobmanager_pods_path, running_pods
from tests.karmada.workloads import FLINK, POLICIES, FlinkJob, stateful_policy
from tests.karmada_env import KARMADA, KarmadaEnv, resource_path

REPO_ROOT = Path(__file__).resolve().parents[2]
CLUSTERS = "cluster.karmada.io/v1alpha1"
CLUSTER_JOB_ID_LABEL = "application.karmada.io/cluster-failover-jobid"
TAINT_POLICY_FILE = REPO_ROOT / "manifests" / "karmada" / "cluster-taint-policy.yaml"


def stateful_cluster_policy(
    name: str, namespace: str, deployment: str, members: tuple[str, ...], **application: Any
) -> dict[str, Any]:
    """The mission's policy plus cluster failover with state, under the label of Karmada's cluster failover guide."""
    policy = stateful_policy(name, namespace, deployment, members, **application)
    policy["spec"]["failover"]["cluster"] = {
        "purgeMode": "Directly",
        "statePreservation": {"rules": [{"aliasLabelName": CLUSTER_JOB_ID_LABEL, "jsonPath": "{ .jobStatus.jobId }"}]},
    }
    return policy


def prefer_home(policy: dict[str, Any], home: str, others: list[str]) -> dict[str, Any]:
    """The policy placing its workload on `home`, and on one of `others` only when it has to move (Karmada's ordered
    `clusterAffinities`: the scheduler tries the next term when the one before fits no cluster)."""
    placement = policy["spec"]["placement"]
    del placement["clusterAffinity"]
    placement["clusterAffinities"] = [
        {"affinityName": "home", "clusterNames": [home]},
        {"affinityName": "away", "clusterNames": others},
    ]
    return policy


@contextlib.contextmanager
def taint_not_ready_clusters(env: KarmadaEnv) -> Iterator[None]:
    """manifests/karmada/cluster-taint-policy.yaml: NoExecute on a cluster whose Ready is False or Unknown."""
    policy = yaml.safe_load(TAINT_POLICY_FILE.read_text())
    karmada = env.api(KARMADA)
    karmada.create(resource_path(POLICIES, "clustertaintpolicies"), policy)
    try:
        yield
    finally:
        # Karmada takes a policy's taint off a cluster only while the policy exists: deleted while a member is still
        # NotReady, it leaves a NoExecute taint there for good and every later test is kept off that member. So the
        # policy goes once every running member is Ready and untainted again (a stopped one cannot be).
        try:
            for member in (*env.members, *env.pull_members):
                if env.member_pid(member) is not None:
                    back_to_normal(env, member)
        finally:
            karmada.delete(resource_path(POLICIES, "clustertaintpolicies", policy["metadata"]["name"]))


def grant_fencing_in_members(env: KarmadaEnv) -> None:
    """manifests/member/fencing-rbac.yaml in every member: the proxy deletes run as the relay, impersonated there."""
    for member in env.members:
        env.kubectl("apply", "-f", str(REPO_ROOT / "manifests" / "member" / "fencing-rbac.yaml"), cluster=member)


def back_to_normal(env: KarmadaEnv, member: str) -> float:
    """Wait until `member` is Ready and the ClusterTaintPolicy has taken its NoExecute taint off again; the seconds it
    took (Karmada calls a member Ready after 30 s of health, `--cluster-success-threshold`)."""
    started = time.monotonic()

    def normal() -> bool:
        cluster = env.api(KARMADA).get(resource_path(CLUSTERS, "clusters", member)) or {}
        return cluster_ready(env, member) and not (cluster.get("spec") or {}).get("taints")

    env.wait_until(normal, 120, f"{member} Ready and untainted")
    return time.monotonic() - started


def cluster_ready(env: KarmadaEnv, member: str) -> bool:
    cluster = env.api(KARMADA).get(resource_path(CLUSTERS, "clusters", member)) or {}
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (cluster.get("status") or {}).get("conditions") or []
    )


def recorded_state(job: FlinkJob) -> str:
    """The relay's record of the last healthy report on the binding (failover/state/last_state.py)."""
    return ((job.binding() or {}).get("metadata") or {}).get("annotations", {}).get("failover-relay.io/last-state", "")


def events_of(env: KarmadaEnv, namespace: str, reason: str, cluster: str = KARMADA) -> list[dict[str, Any]]:
    """The Events of `reason` in `namespace` of karmada-apiserver, or of a member."""
    return [
        event
        for event in env.api(cluster).list(resource_path("v1", "events", namespace=namespace))
        if event.get("reason") == reason
    ]


class Background:
    """A test's helper that runs `_run` on a thread of its own while its `with` block lasts; `_run` ends when
    `_stop` is set."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        raise NotImplementedError


class CopyWatch(Background):
    """Samples every member's copy of the job in the background (``members``: the environment's, unless given) and
    records when copies existed side by side (a member whose apiserver is down cannot be sampled and is skipped), and
    when copies ran side by side: a copy with `spec.job.state: suspended` is not running (the Flink operator stops its
    job). With ``jobmanagers``, also when JobManager pods of the job ran in two members at once, whatever the copies
    said (tests/karmada/operator.py plays the operator that leaves one up)."""

    def __init__(
        self, job: FlinkJob, interval: float = 0.2, members: tuple[str, ...] = (), jobmanagers: bool = False
    ) -> None:
        self.job, self.interval, self.jobmanagers = job, interval, jobmanagers
        self.members = members or job.env.members
        self.samples = 0
        self.overlaps: list[tuple[float, tuple[str, ...]]] = []
        self.running_overlaps: list[tuple[float, tuple[str, ...]]] = []
        self.jobmanager_overlaps: list[tuple[float, tuple[str, ...]]] = []
        self.seen: dict[str, tuple[float, float]] = {}  # member -> (first seen, last seen), monotonic
        self.suspended: dict[str, float] = {}  # member -> first seen suspended, monotonic
        self.jobmanager_misses = 0  # pod lists that failed (said in the reports that count JobManager overlaps)
        super().__init__()

    def wait_seen(self, member: str, timeout: float = 10) -> tuple[float, float]:
        """When the watch first and last saw a copy in `member`, once it has: a test that found the copy by its own
        read is ahead of the watch's next sample (three apiserver reads on a busy machine can take most of a second),
        and reading `seen` at once raced it."""
        return self.job.env.wait_until(lambda: self.seen.get(member), timeout, f"the watch sampling {member}'s copy")

    def _run(self) -> None:
        while not self._stop.is_set():
            present, running, jobmanagers = [], [], []
            now = time.monotonic()
            for member in self.members:
                try:
                    api = self.job.env.api(member)
                    copy = api.get(resource_path(FLINK, "flinkdeployments", self.job.name, self.job.namespace))
                except Exception:  # a member that is down (or coming back) cannot be sampled
                    continue
                # Apart from the copy's read: a pod list that fails must not hide a copy that was read (it once left
                # a restored copy out of `seen` for a whole test).
                if self.jobmanagers:
                    try:
                        if running_pods(api.list(jobmanager_pods_path(self.job.name, self.job.namespace))):
                            jobmanagers.append(member)
                    except Exception:
                        self.jobmanager_misses += 1
                if copy is not None:
                    present.append(member)
                    first, _ = self.seen.get(member, (now, now))
                    self.seen[member] = (first, now)
                    if ((copy.get("spec") or {}).get("job") or {}).get("state") == "suspended":
                        self.suspended.setdefault(member, now)
                    else:
                        running.append(member)
            self.samples += 1
            if len(present) > 1:
                self.overlaps.append((now, tuple(present)))
            if len(running) > 1:
                self.running_overlaps.append((now, tuple(running)))
            if len(jobmanagers) > 1:
                self.jobmanager_overlaps.append((now, tuple(jobmanagers)))
            self._stop.wait(self.interval)


# The e2e CR's job with the upgrade mode that makes the operator take a savepoint when it suspends the job (what
# tests/karmada/operator.py plays).
SAVEPOINT_JOB = {
    "jarURI": "local:///opt/flink/examples/streaming/StateMachineExample.jar",
    "args": [],
    "parallelism": 2,
    "state": "running",
    "upgradeMode": "savepoint",
}


def fence_files(env: KarmadaEnv, member: str) -> list[str]:
    """The storage fence's records and acknowledgements of `member` in the tier's checkpoint root."""
    directory = env.checkpoint_root / ".failover-relay" / "fences" / member
    return sorted(path.name for path in directory.glob("*.json")) if directory.is_dir() else []
