"""The members' restore guard (`manifests admission-policies --member`) against real Karmada: a migrated copy that
reaches a member without a restore path is parked, as Karmada reports it and the relay reads it, until the loss is
accepted.

The copy gets no path the way it does when the savepoint webhook is not called: the job has no checkpoint, and the
relay's Work mutation fails open (docs/quickstart.md's configuration), so the Work Karmada renders for the new cluster
carries the job id and no path. Without the guard the member would start the job from nothing; with it, the member's
apiserver refuses the copy, Karmada's execution controller reports the Work not applied with the guard's message, and
the relay's empty-start watch records the copy as parked. Accepting the loss on the template lets the copy start.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from failover.core.api import DEFAULT_JOB_ID_LABEL
from failover.state.empty_start import PARKED_MARKER, START_WITHOUT_STATE_ANNOTATION, STARTED_WITHOUT_STATE_ANNOTATION
from tests.admission_answers import answer
from tests.e2e.objects import flink_deployment
from tests.karmada.workloads import FLINK, FlinkJob, restore_path
from tests.karmada_env import KARMADA, KarmadaEnv
from tests.karmada_env.layout import REPO_ROOT
from tests.kube_api import resource_path

pytestmark = pytest.mark.karmada

TOLERATION_SECONDS = 10
FAILOVER_TIMEOUT_SECONDS = TOLERATION_SECONDS + 50


def _guard() -> str:
    rendered = subprocess.run(
        [sys.executable, "-m", "relay.cli", "manifests", "admission-policies", "--member"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO_ROOT,
    )
    return rendered.stdout


def _parked(job: FlinkJob, member: str) -> str | None:
    """The relay's record of the copy in ``member``, when it says parked."""
    annotations = ((job.binding() or {}).get("metadata") or {}).get("annotations") or {}
    record = json.loads(annotations.get(STARTED_WITHOUT_STATE_ANNOTATION, "{}")).get(member) or {}
    return record.get("reason") if record.get("outcome") == "parked" else None


def _not_applied(job: FlinkJob, member: str) -> str | None:
    """Karmada's word on the copy in ``member`` (the binding's aggregated status), when it could not apply it."""
    for item in ((job.binding() or {}).get("status") or {}).get("aggregatedStatus") or []:
        # `applied` is omitted when false (binding_types.go, `json:"applied,omitempty"`).
        if item.get("clusterName") == member and not item.get("applied") and item.get("appliedMessage"):
            return str(item.get("appliedMessage"))
    return None


def _wait_for_the_guard(env: KarmadaEnv, member: str, namespace: str, probe: dict[str, object]) -> None:
    """Karmada has propagated the namespace, and the member's apiserver runs the guard."""
    api = env.api(member)
    env.wait_until(lambda: api.get(resource_path("v1", "namespaces", namespace)), 30, f"{namespace} on {member}")
    env.wait_until(lambda: answer(api, probe).status == "denied", 30, f"the guard on {member}")


def test_a_copy_without_a_restore_path_is_parked_until_its_loss_is_accepted(
    karmada_env: KarmadaEnv, namespace: str
) -> None:
    env = karmada_env
    guard = _guard()
    probe = flink_deployment("guard-probe", namespace, labels={DEFAULT_JOB_ID_LABEL: "0" * 32})
    for member in env.members:
        env.kubectl("apply", "-f", "-", input=guard, cluster=member)
    try:
        for member in env.members:
            _wait_for_the_guard(env, member, namespace, probe)
        job = FlinkJob(env, namespace)
        first, job_id = job.start_stateful(TOLERATION_SECONDS)

        job.report_unhealthy(first, job_id)  # no checkpoint was ever written: nothing to restore from
        env.wait_until(lambda: [m for m in job.placed_on() if m != first], FAILOVER_TIMEOUT_SECONDS, "a new cluster")
        [second] = [m for m in job.placed_on() if m != first]
        work = env.wait_until(lambda: job.work(second), 30, f"the Work for {second}")
        [manifest] = work["spec"]["workload"]["manifests"]
        assert manifest["metadata"]["labels"][DEFAULT_JOB_ID_LABEL] == job_id
        assert restore_path(manifest) is None, "the Work carries no path: the lookup found no state"

        refused = env.wait_until(lambda: _not_applied(job, second), 60, f"Karmada reporting {second} not applied")
        assert PARKED_MARKER in refused and "restore-guard.failover-relay.io" in refused, refused
        reason = env.wait_until(lambda: _parked(job, second), 60, "the relay recording the copy as parked")
        assert reason.startswith(PARKED_MARKER), reason
        assert job.copy_in(second) is None, "the member must not run the copy"

        env.api(KARMADA).patch(
            resource_path(FLINK, "flinkdeployments", job.name, namespace),
            {"metadata": {"annotations": {START_WITHOUT_STATE_ANNOTATION: job_id}}},
        )
        env.wait_until(lambda: job.copy_in(second), 60, f"the copy started in {second} once its loss is accepted")
        env.wait_until(lambda: _parked(job, second) is None, 60, "the parked record resolved")
    finally:
        for member in env.members:
            env.kubectl("delete", "-f", "-", input=guard, cluster=member, check=False)
