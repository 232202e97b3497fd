"""A FlinkDeployment under Karmada, as the tests of this tier drive and observe it.

The test plays the Flink operator in the member clusters: it writes the FlinkDeployment's status through the status
subresource, and Karmada's interpreter (its built-in FlinkDeployment Lua, ``pkg/resourceinterpreter/default/
thirdparty/resourcecustomizations/flink.apache.org/v1beta1/FlinkDeployment/customizations.yaml``) turns that into
health on the binding: ``jobStatus.state`` RUNNING is Healthy, RECONCILING with an error not on its allow-list is
Unhealthy. Everything read here is what Karmada made: the ResourceBinding, the Works in ``karmada-es-<member>``, the
copies in the members. ``run_flink`` goes further: a real Flink job (tests/flink_job.py) started from the copy's own
spec, whose real job id the status then carries.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from failover.core.api import DEFAULT_JOB_ID_LABEL
from tests.flink_job import Probe, RunningJob, operator_configuration
from tests.karmada_env import KARMADA, REPO_ROOT, KarmadaEnv, resource_path

FLINK = "flink.apache.org/v1beta1"
BINDINGS = "work.karmada.io/v1alpha2"
WORKS = "work.karmada.io/v1alpha1"
POLICIES = "policy.karmada.io/v1alpha1"
REBALANCERS = "apps.karmada.io/v1alpha1"
# Karmada's own e2e FlinkDeployment (upgradeMode stateless, as a user's first deployment would be).
E2E_FLINK_CR = Path("test") / "e2e" / "suites" / "base" / "manifest" / "flinkdeployment-cr.yaml"
# Karmada's interpreter reads no meaning into the message; it only must not be on the allow-list (ErrImagePull, ...).
FAILURE_MESSAGE = "JobManager failed: java.lang.OutOfMemoryError: Java heap space"


def restore_path(deployment: dict[str, Any]) -> Path | None:
    """``spec.job.initialSavepointPath`` as a local path; ``file:///x`` and ``/x`` name the same directory."""
    raw = (deployment.get("spec") or {}).get("job", {}).get("initialSavepointPath")
    if not raw:
        return None
    return Path(raw.removeprefix("file://"))


def relay_command(env: KarmadaEnv, command: str, *args: str) -> list[str]:
    """A `failover-relay` command as an operator runs it: the admin kubeconfig and the relay's own config file."""
    return [
        sys.executable,
        "-m",
        "relay.cli",
        command,
        "--kubeconfig",
        str(env.kubeconfig(KARMADA)),
        "--config",
        str(env.relay_config_file),
        *args,
    ]


def status_command(env: KarmadaEnv, *args: str) -> list[str]:
    """`failover-relay status` as an operator runs it."""
    return relay_command(env, "status", *args)


def relay_status(env: KarmadaEnv, *args: str) -> subprocess.CompletedProcess[str]:
    """`status_command` run to its end."""
    return subprocess.run(
        status_command(env, *args),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
    )


def new_job_id() -> str:
    """A Flink JobID: 32 lowercase hex digits."""
    return uuid.uuid4().hex


def stateful_policy(
    name: str,
    namespace: str,
    deployment: str,
    members: tuple[str, ...],
    *,
    toleration_seconds: int = 10,
    purge_mode: str = "Directly",
    **application: Any,
) -> dict[str, Any]:
    """The mission's PropagationPolicy: one cluster out of ``members`` (clusterAffinity, spread maxGroups 1) and a
    stateful application failover keeping ``.jobStatus.jobId`` as ``application.karmada.io/failover-jobid``."""
    failover: dict[str, Any] = {
        "decisionConditions": {"tolerationSeconds": toleration_seconds},
        "purgeMode": purge_mode,
        "statePreservation": {"rules": [{"aliasLabelName": DEFAULT_JOB_ID_LABEL, "jsonPath": "{ .jobStatus.jobId }"}]},
        **application,
    }
    return {
        "apiVersion": POLICIES,
        "kind": "PropagationPolicy",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "propagateDeps": True,
            "resourceSelectors": [{"apiVersion": FLINK, "kind": "FlinkDeployment", "name": deployment}],
            "placement": {
                "clusterAffinity": {"clusterNames": list(members)},
                "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 1, "minGroups": 1}],
            },
            "failover": {"application": failover},
        },
    }


@dataclass
class FlinkJob:
    """One FlinkDeployment template in karmada-apiserver, its binding, Works and member copies."""

    env: KarmadaEnv
    namespace: str
    name: str = "job"

    @property
    def state_dir(self) -> Path:
        """The workload's state.checkpoints.dir, inside the relay's checkpointRoot."""
        return self.env.checkpoint_root / self.namespace

    @property
    def binding_name(self) -> str:
        # Karmada's names.GenerateBindingName: <name>-<lowercase kind>.
        return f"{self.name}-flinkdeployment"

    def create(
        self,
        policy: dict[str, Any],
        *,
        spec: dict[str, Any] | None = None,
        flink_configuration: dict[str, str] | None = None,
    ) -> None:
        """Create the policy, then the FlinkDeployment (Karmada's e2e CR, with ``spec``'s fields in place of its
        own and ``flink_configuration`` added to its own) it selects."""
        karmada = self.env.api(KARMADA)
        karmada.create(resource_path(POLICIES, "propagationpolicies", namespace=self.namespace), policy)
        deployment = yaml.safe_load((self.env.tree.source / E2E_FLINK_CR).read_text())
        deployment["metadata"] = {"name": self.name, "namespace": self.namespace}
        deployment["spec"].update(spec or {})
        # A stateful job names where Flink keeps checkpoints and savepoints (what a restore from a path needs); the
        # relay reads them from here and searches Flink's own layout below them.
        deployment["spec"].setdefault("flinkConfiguration", {}).update(
            {
                "state.checkpoints.dir": f"file://{self.state_dir}",
                "state.savepoints.dir": f"file://{self.state_dir}/savepoints",
                **(flink_configuration or {}),
            }
        )
        karmada.create(resource_path(FLINK, "flinkdeployments", namespace=self.namespace), deployment)

    # -- what Karmada made ----------------------------------------------------------------------------------------

    def binding(self) -> dict[str, Any] | None:
        return self.env.api(KARMADA).get(resource_path(BINDINGS, "resourcebindings", self.binding_name, self.namespace))

    def placed_on(self) -> list[str]:
        """``spec.clusters`` of the binding (what the scheduler chose)."""
        binding = self.binding() or {}
        return [target["name"] for target in (binding.get("spec") or {}).get("clusters") or []]

    def eviction_tasks(self) -> list[dict[str, Any]]:
        return list(((self.binding() or {}).get("spec") or {}).get("gracefulEvictionTasks") or [])

    def health(self, member: str) -> str | None:
        """``status.aggregatedStatus[member].health`` of the binding (Karmada's interpretation of the copy)."""
        for item in ((self.binding() or {}).get("status") or {}).get("aggregatedStatus") or []:
            if item.get("clusterName") == member:
                return item.get("health")
        return None

    def work(self, member: str) -> dict[str, Any] | None:
        """The Work for this workload in ``karmada-es-<member>`` (found by Karmada's binding labels)."""
        works = self.env.api(KARMADA).list(resource_path(WORKS, "works", namespace=f"karmada-es-{member}"))
        for work in works:
            for manifest in (work.get("spec") or {}).get("workload", {}).get("manifests") or []:
                metadata = manifest.get("metadata") or {}
                if (
                    manifest.get("kind") == "FlinkDeployment"
                    and metadata.get("name") == self.name
                    and metadata.get("namespace") == self.namespace
                ):
                    return work
        return None

    def copy_in(self, member: str) -> dict[str, Any] | None:
        """The FlinkDeployment in that member cluster, or None."""
        return self.env.api(member).get(resource_path(FLINK, "flinkdeployments", self.name, self.namespace))

    # -- playing the Flink operator in a member -------------------------------------------------------------------

    def report(
        self, member: str, state: str, job_id: str | None, error: str | None = None, lifecycle: str | None = None
    ) -> None:
        """Write the copy's status in ``member`` as the Flink operator would (status subresource); the lifecycle
        state follows the job's unless given."""
        status: dict[str, Any] = {
            "jobStatus": {"state": state, **({"jobId": job_id} if job_id else {})},
            "lifecycleState": lifecycle or ("STABLE" if state == "RUNNING" else "DEPLOYED"),
            "jobManagerDeploymentStatus": "READY" if state == "RUNNING" else "DEPLOYING",
            "error": error,
        }
        self.env.api(member).patch(
            resource_path(FLINK, "flinkdeployments", self.name, self.namespace, "status"), {"status": status}
        )

    def report_healthy(self, member: str, job_id: str) -> None:
        self.report(member, "RUNNING", job_id)

    def report_unhealthy(self, member: str, job_id: str | None) -> None:
        self.report(member, "RECONCILING", job_id, FAILURE_MESSAGE)

    def run_flink(self, member: str, probe: Probe, run_dir: Path, keys: int, rate: int) -> RunningJob:
        """What the operator does with the copy in ``member``: a job (a MiniCluster of the probe) started from the
        copy's own spec, its ``flinkConfiguration`` and the ``initialSavepointPath`` the relay injected; once Flink
        says RUNNING, the real job id and state reported into the copy's status, and Karmada's Healthy awaited."""
        spec = (self.copy_in(member) or {})["spec"]
        config = operator_configuration(
            spec.get("flinkConfiguration") or {}, {}, new_job_id(), spec["job"].get("initialSavepointPath")
        )
        job = probe.start(config, run_dir, run_dir / "expected", keys, rate)
        try:
            job.wait_event("running", 120)
            self.run_healthy(member, job.job_id)
        except BaseException:
            job.kill()
            raise
        return job

    def write_checkpoints(self, job_id: str, completed: tuple[int, ...], incomplete: tuple[int, ...] = ()) -> Path:
        """Flink's layout under the workload's checkpoint dir: ``<dir>/<job id>/chk-N/_metadata`` for a completed
        checkpoint, an empty ``chk-N/`` for one in progress. Returns the job's directory."""
        directory = self.state_dir / job_id
        for number in completed:
            (directory / f"chk-{number}").mkdir(parents=True, exist_ok=True)
            (directory / f"chk-{number}" / "_metadata").write_bytes(b"flink checkpoint metadata")
        for number in incomplete:
            (directory / f"chk-{number}").mkdir(parents=True, exist_ok=True)
        return directory

    # -- waiting ----------------------------------------------------------------------------------------------------

    def restored_outside(self, *excluded: str) -> tuple[str, dict[str, Any]] | None:
        """The single target outside ``excluded`` and its copy there, once that copy carries a restore path."""
        targets = self.placed_on()
        if len(targets) != 1 or targets[0] in excluded:
            return None
        copy = self.copy_in(targets[0])
        return (targets[0], copy) if copy and restore_path(copy) else None

    def wait_restored_outside(self, *excluded: str, timeout: float) -> tuple[str, dict[str, Any]]:
        """Wait for ``restored_outside(*excluded)``; return the member and its copy."""
        return self.env.wait_until(
            lambda: self.restored_outside(*excluded),
            timeout,
            f"a copy with initialSavepointPath outside {', '.join(excluded)}",
        )

    def wait_placed(self, timeout: float = 60) -> str:
        """Wait until the scheduler placed the workload and its copy exists there; return that member."""
        member = self.env.wait_until(
            lambda: (self.placed_on() or [None])[0], timeout, f"{self.namespace}/{self.binding_name} scheduled"
        )
        self.env.wait_until(lambda: self.copy_in(member), timeout, f"{self.name} created in {member}")
        return member

    def wait_health(self, member: str, health: str, timeout: float = 60) -> None:
        self.env.wait_until(
            lambda: self.health(member) == health,
            timeout,
            f"{self.binding_name} {health} on {member} in status.aggregatedStatus",
        )

    def run_healthy(self, member: str, job_id: str) -> None:
        """Report the copy in ``member`` running and wait until Karmada reflects it (with the job id)."""
        self.report_healthy(member, job_id)
        self.wait_health(member, "Healthy")

    def start_stateful(self, toleration_seconds: int) -> tuple[str, str]:
        """Create the workload under a stateful policy over every member, wait for its placement and report a new job
        running there; return the member and the job id."""
        self.create(
            stateful_policy("flink", self.namespace, self.name, self.env.members, toleration_seconds=toleration_seconds)
        )
        member, job_id = self.wait_placed(), new_job_id()
        self.run_healthy(member, job_id)
        return member, job_id

    def delete(self) -> None:
        """Remove the template, its policy and binding (no kube-controller-manager garbage-collects the binding);
        Karmada then deletes the Works and the member copies."""
        karmada = self.env.api(KARMADA)
        karmada.delete(resource_path(FLINK, "flinkdeployments", self.name, self.namespace))
        karmada.delete(resource_path(BINDINGS, "resourcebindings", self.binding_name, self.namespace))
