"""Where a failover lands: the resource requests Karmada puts on a FlinkDeployment's binding, which its scheduler
weighs clusters by (issue 27 item 7; karmada-io/karmada#6518).

Karmada v1.19's built-in FlinkDeployment interpreter reads only ``spec.{jobManager,taskManager}.resource``; the Flink
operator 1.16 moved them to ``resources`` (FLINK-33548). The test shows what v1.19 makes of both shapes, then applies
``manifests/karmada/flinkdeployment-interpreter.yaml`` as docs/operations.md says ("Where a failover lands") and shows
that a new-style CR's binding carries its requests, an old-style one gets what the built-in script gave it, and
Karmada's own health interpretation and status reflection still hold. The customization is removed afterwards, so the
rest of the tier sees Karmada as installed.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from tests.karmada.workloads import FLINK, FlinkJob, new_job_id, stateful_policy
from tests.karmada_env import KARMADA, REPO_ROOT, KarmadaEnv, resource_path

pytestmark = pytest.mark.karmada

INTERPRETER_FILE = REPO_ROOT / "manifests" / "karmada" / "flinkdeployment-interpreter.yaml"
# Flink operator 1.16+: a Kubernetes ResourceRequirements per component. The taskManager has no memory request, so
# its limit stands for it (as Kubernetes defaults it).
NEW_STYLE: dict[str, Any] = {
    "jobManager": {"replicas": 1, "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
    "taskManager": {"resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "2", "memory": "4Gi"}}},
}
# One requirement per replica in spec.replicaRequirements: the larger of the two components' per resource.
NEW_STYLE_REQUESTS = {"cpu": "2", "memory": "4Gi"}


def requirements(job: FlinkJob) -> dict[str, Any] | None:
    """The binding's ``spec.replicas`` and ``spec.replicaRequirements`` (what Karmada's detector interpreted), once
    the binding exists."""
    spec = (job.binding() or {}).get("spec") or {}
    if "replicas" not in spec:
        return None
    return {"replicas": spec["replicas"], **(spec.get("replicaRequirements") or {})}


def create(env: KarmadaEnv, namespace: str, name: str, spec: dict[str, Any] | None = None) -> FlinkJob:
    job = FlinkJob(env, namespace, name)
    job.create(stateful_policy(name, namespace, name, env.members), spec)
    return job


def test_requests_of_both_resource_shapes_reach_the_binding_and_health_stays_karmadas(
    karmada_env: KarmadaEnv, namespace: str
) -> None:
    env = karmada_env
    karmada = env.api(KARMADA)

    # Karmada v1.19 as installed: the old shape's requests reach the binding, the new shape's do not.
    new = create(env, namespace, "new-style", NEW_STYLE)
    builtin_old = create(env, namespace, "builtin-old-style")
    builtin = env.wait_until(lambda: requirements(builtin_old), 30, "the old-style binding interpreted")
    before = env.wait_until(lambda: requirements(new), 30, "the new-style binding interpreted")
    assert builtin["resourceRequest"] == {"cpu": "100m", "memory": "100m"}, builtin
    assert not before.get("resourceRequest"), before
    assert before["replicas"] == builtin["replicas"] == 2  # one JobManager, parallelism 2 / 2 slots

    env.kubectl("apply", "-f", str(INTERPRETER_FILE))
    try:
        # The detector interprets a template again on its next change; Karmada loads the customization on its own
        # time, so touch the template until its binding shows the requests.
        touches = itertools.count()

        def interpreted() -> dict[str, Any] | None:
            path = resource_path(FLINK, "flinkdeployments", new.name, namespace)
            karmada.patch(path, {"metadata": {"annotations": {"test/touch": str(next(touches))}}})
            found = requirements(new)
            return found if found and found.get("resourceRequest") == NEW_STYLE_REQUESTS else None

        after = env.wait_until(interpreted, 60, "the new-style binding with its requests")
        assert after == {**before, "resourceRequest": NEW_STYLE_REQUESTS}, after

        old = create(env, namespace, "old-style")
        assert env.wait_until(lambda: requirements(old), 30, "the old-style binding interpreted") == builtin

        # Health, status reflection and aggregation are still Karmada's built-in interpretation.
        member, job_id = new.wait_placed(), new_job_id()
        new.run_healthy(member, job_id)
        [item] = (new.binding() or {})["status"]["aggregatedStatus"]
        assert item["status"]["jobStatus"] == {"state": "RUNNING", "jobId": job_id}, item
        env.wait_until(
            lambda: (
                ((karmada.get(resource_path(FLINK, "flinkdeployments", new.name, namespace)) or {}).get("status") or {})
                .get("jobStatus", {})
                .get("jobId")
                == job_id
            ),
            30,
            "the template's status aggregated from its copy",
        )
    finally:
        env.kubectl("delete", "--ignore-not-found", "-f", str(INTERPRETER_FILE))
