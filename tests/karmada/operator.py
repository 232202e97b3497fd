"""The Flink operator 1.16 as it really behaves, played for one FlinkDeployment's copies in the tier's members, which
run no operator, no kube-controller-manager and no kubelet.

What it plays, every 0.2 s in each member:

- **Deploy.** A copy that is to run gets the objects operator 1.16 makes (tests/flink_jobmanager.py): its JobManager
  Deployment, owned by the copy, and a pod of it reported Running (the kubelet's part); and
  `status.reconciliationStatus.lastReconciledSpec`, the spec it deployed, which Karmada's FlinkDeployment interpreter
  reflects. The job's own status (RUNNING, its id) stays the test's to report, with or without a real job behind it.
- **Savepoint suspend, FLINK-41262.** A copy whose `spec.job.state` turns `suspended` (upgradeMode savepoint) gets a
  savepoint in Flink's layout in the job's savepoint dir and the status operator 1.16 writes (`lifecycleState:
  SUSPENDED`, `jobStatus.state: FINISHED`, `jobStatus.upgradeSavepointPath`), and its JobManager Deployment is left
  up, as 1.16 leaves it for `kubernetes.operator.jm-deployment.shutdown-ttl` (a day) without HA. When the pod
  restarts (`restart_after` seconds later), its entrypoint submits the job again from its initial state while the
  resource still says SUSPENDED: the pod is replaced by a Running one and the resubmission noted.
- **Garbage collection.** A deleted JobManager Deployment takes its pods with it, and a deleted copy its Deployment
  and pods (kube-controller-manager's garbage collector, by owner).

What it does not play: the job itself (tests/karmada/records.py stands a real Flink job behind a copy where the
records matter; given that job, the savepoint suspend stops it with a real savepoint), HA, and the operator's own
retries.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from tests.flink_job import RunningJob
from tests.flink_jobmanager import jobmanager_deployment, jobmanager_pod, jobmanager_pods_path
from tests.karmada.outages import Background
from tests.karmada.workloads import FLINK, FlinkJob
from tests.karmada_env import resource_path

RUNNING, SUSPENDED = "running", "suspended"
OPERATOR_SUSPENDED = "SUSPENDED"
# How long after a savepoint suspend the JobManager pod the operator left up restarts and resubmits the job. Short,
# so a fence that acknowledged while the JobManager was still up shows it within the test.
JOBMANAGER_RESTART_SECONDS = 3.0


def job_state(copy: dict[str, Any]) -> str:
    return ((copy.get("spec") or {}).get("job") or {}).get("state") or RUNNING


def lifecycle_state(copy: dict[str, Any]) -> str | None:
    return (copy.get("status") or {}).get("lifecycleState")


def pod_path(job: FlinkJob, pod: str) -> str:
    return resource_path("v1", "pods", pod, job.namespace)


class FlinkOperator(Background):
    """Operator 1.16 for `job`'s copies in `members` (see the module's docstring). `savepoint(member)` is where the
    suspension of the copy in `member` put its savepoint; `stopping_at`, `suspended_at`, `jobmanagers_gone` and
    `resubmitted` record, by member, when the operator began the suspension's savepoint, when it reported the
    suspension, when the copy's last JobManager pod went, and when a JobManager left up resubmitted the job
    (monotonic). `flink`: the real job behind the copy in a member, by member, which a savepoint suspend stops with a
    real savepoint."""

    def __init__(
        self,
        job: FlinkJob,
        members: Iterable[str],
        restart_after: float = JOBMANAGER_RESTART_SECONDS,
        interval: float = 0.2,
        flink: Mapping[str, RunningJob] | None = None,
    ) -> None:
        self.job, self.members, self.restart_after, self.interval = job, tuple(members), restart_after, interval
        # The real Flink job behind the copy in a member, where there is one (FlinkJob.run_flink): a savepoint suspend
        # stops it with a savepoint, and the status reports Flink's path.
        self.flink = flink if flink is not None else {}
        # Members where the suspension's savepoint fails: the operator keeps the job running and says so in the
        # status's error, and never reports SUSPENDED (it retries), as operator 1.16 does when the savepoint fails.
        self.refuse_savepoint: set[str] = set()
        self.savepoint_failed_at: dict[str, float] = {}
        self.stopping_at: dict[str, float] = {}
        self.suspended_at: dict[str, float] = {}
        self.jobmanagers_gone: dict[str, float] = {}
        self.resubmitted: dict[str, float] = {}
        self._savepoints: dict[str, Path] = {}
        self._suffix = 0
        super().__init__()

    def savepoint(self, member: str) -> Path:
        return self._savepoints[member]

    def _run(self) -> None:
        while not self._stop.is_set():
            for member in self.members:
                try:
                    self._reconcile(member)
                except Exception:  # noqa: BLE001  a member that is down or coming back: the next round
                    continue
            self._stop.wait(self.interval)

    def _reconcile(self, member: str) -> None:
        api = self.job.env.api(member)
        copy = self.job.copy_in(member)
        deployment = api.get(resource_path("apps/v1", "deployments", self.job.name, self.job.namespace))
        pods = api.list(jobmanager_pods_path(self.job.name, self.job.namespace))
        if copy is None:  # the garbage collector: the copy's Deployment and pods go with it
            if deployment is not None:
                api.delete(resource_path("apps/v1", "deployments", self.job.name, self.job.namespace))
            self._collect(member, pods)
            return
        if deployment is not None and not self._owned(deployment, copy):
            # An earlier copy's, whose owner is gone: the garbage collector's to delete.
            api.delete(resource_path("apps/v1", "deployments", self.job.name, self.job.namespace))
            self._collect(member, pods)
            return
        to_run = job_state(copy) != SUSPENDED and lifecycle_state(copy) != OPERATOR_SUSPENDED
        if deployment is None:
            if to_run:
                self._deploy(member, copy)
            else:  # the garbage collector: a deleted Deployment's pods go with it
                self._collect(member, pods)
        elif not to_run and lifecycle_state(copy) != OPERATOR_SUSPENDED and member in self.refuse_savepoint:
            self._savepoint_failed(member, copy)
        elif not to_run and lifecycle_state(copy) != OPERATOR_SUSPENDED:
            self._suspend_with_savepoint(member)
        elif not to_run and member not in self.resubmitted:
            if time.monotonic() - self.suspended_at.get(member, time.monotonic()) >= self.restart_after:
                # The JobManager left up restarts; its entrypoint submits the job again from its initial state.
                self._collect(member, pods)
                self._start_pod(member)
                self.resubmitted[member] = time.monotonic()

    def _collect(self, member: str, pods: list[dict[str, Any]]) -> None:
        if not pods:
            return
        for pod in pods:
            self.job.env.api(member).delete(pod_path(self.job, pod["metadata"]["name"]))
        self.jobmanagers_gone[member] = time.monotonic()

    def _owned(self, deployment: dict[str, Any], copy: dict[str, Any]) -> bool:
        uid = copy["metadata"].get("uid")
        return any(owner.get("uid") == uid for owner in deployment["metadata"].get("ownerReferences") or [])

    def _deploy(self, member: str, copy: dict[str, Any]) -> None:
        """What the operator does for a copy to run: the JobManager Deployment and its pod, and the spec deployed."""
        api = self.job.env.api(member)
        api.create(
            resource_path("apps/v1", "deployments", namespace=self.job.namespace),
            jobmanager_deployment(self.job.name, copy["metadata"]["uid"]),
        )
        self._start_pod(member)
        deployed = {
            "spec": copy["spec"],
            "resource_metadata": {"apiVersion": copy["apiVersion"], "firstDeployment": True},
        }
        api.patch(
            resource_path(FLINK, "flinkdeployments", self.job.name, self.job.namespace, "status"),
            {"status": {"reconciliationStatus": {"state": "DEPLOYED", "lastReconciledSpec": json.dumps(deployed)}}},
        )

    def _start_pod(self, member: str) -> None:
        api = self.job.env.api(member)
        self._suffix += 1
        pod = api.create(
            resource_path("v1", "pods", namespace=self.job.namespace),
            jobmanager_pod(self.job.name, f"p{self._suffix:04d}"),
        )
        api.patch(pod_path(self.job, pod["metadata"]["name"]) + "/status", {"status": {"phase": "Running"}})

    def _savepoint_failed(self, member: str, copy: dict[str, Any]) -> None:
        """The suspension's savepoint failed: the job runs on, the status says why, once per copy."""
        if (copy.get("status") or {}).get("error"):
            return
        self.savepoint_failed_at[member] = time.monotonic()
        self.job.env.api(member).patch(
            resource_path(FLINK, "flinkdeployments", self.job.name, self.job.namespace, "status"),
            {"status": {"error": "Savepoint failed: the checkpoint coordinator declined it (task not ready)"}},
        )

    def _suspend_with_savepoint(self, member: str) -> None:
        """Stop the job with a savepoint and report it as operator 1.16 does, leaving the JobManager up."""
        self.stopping_at[member] = time.monotonic()
        job_id = (((self.job.copy_in(member) or {}).get("status") or {}).get("jobStatus") or {}).get("jobId")
        if self.flink:  # real jobs behind the copies: this member's must be running, or the test lost track of it
            running = self.flink[member]
            assert running.process.poll() is None, f"the real job of the copy on {member} is not running"
            savepoint = Path(urlparse(running.stop_with_savepoint()).path)
        else:
            savepoint = self.job.state_dir / "savepoints" / f"savepoint-{str(job_id)[:6]}-{os.urandom(6).hex()}"
            savepoint.mkdir(parents=True)
            (savepoint / "_metadata").write_bytes(b"flink savepoint metadata")
        self._savepoints[member] = savepoint
        self.job.env.api(member).patch(
            resource_path(FLINK, "flinkdeployments", self.job.name, self.job.namespace, "status"),
            {
                "status": {
                    "lifecycleState": OPERATOR_SUSPENDED,
                    "jobManagerDeploymentStatus": "READY",  # left up: FLINK-41262
                    "jobStatus": {
                        "state": "FINISHED",
                        **({"jobId": job_id} if job_id else {}),
                        "upgradeSavepointPath": f"file://{savepoint}",
                    },
                }
            },
        )
        self.suspended_at[member] = time.monotonic()
