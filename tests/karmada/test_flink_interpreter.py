"""Where a failover lands: the resource requests Karmada puts on a FlinkDeployment's binding, which its scheduler
weighs clusters by (karmada-io/karmada#6518).

Karmada v1.19's built-in FlinkDeployment interpreter reads only ``spec.{jobManager,taskManager}.resource``, and reads
its ``memory``, a Flink memory size, as a Kubernetes quantity; the Flink operator 1.16 moved the requests to
``resources`` (FLINK-33548). The test shows what v1.19 makes of both shapes ("100m", 100 MiB to Flink, as 0.1 byte;
"2g" not at all), then applies ``manifests/karmada/flinkdeployment-interpreter.yaml`` as docs/operations.md says
("Where a failover lands") and shows that a new-style CR's binding carries its requests, an old-style one the memory
the Flink operator requests for its pods (a memory size the operator refuses left out), and that Karmada's own health
interpretation and status reflection still hold. The customization is removed afterwards, so the rest of the tier
sees Karmada as installed.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from tests.karmada.outages import events_of
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
# The old shape with Flink's memory units: 2 GiB and 3072 MiB, which Flink asks of Kubernetes as 2048Mi and 3072Mi.
FLINK_SIZES: dict[str, Any] = {
    "jobManager": {"replicas": 1, "resource": {"cpu": 0.5, "memory": "2g"}},
    "taskManager": {"resource": {"cpu": 1, "memory": "3072m"}},
}
# "1.5Gi" fails the operator's parse (a fractional byte count after its Kubernetes fallback): the operator refuses the
# deployment, so that component's memory is left out, not the binding.
REFUSED_SIZE: dict[str, Any] = {
    "jobManager": {"replicas": 1, "resource": {"cpu": 0.5, "memory": "1.5Gi"}},
    "taskManager": {"resource": {"cpu": 1, "memory": "512mb"}},
}


def requirements(job: FlinkJob) -> dict[str, Any] | None:
    """The binding's ``spec.replicas`` and ``spec.replicaRequirements`` (what Karmada's detector interpreted), once
    the binding exists."""
    spec = (job.binding() or {}).get("spec") or {}
    if "replicas" not in spec:
        return None
    return {"replicas": spec["replicas"], **(spec.get("replicaRequirements") or {})}


def create(env: KarmadaEnv, namespace: str, name: str, spec: dict[str, Any] | None = None) -> FlinkJob:
    job = FlinkJob(env, namespace, name)
    job.create(stateful_policy(name, namespace, name, env.members), spec=spec)
    return job


def test_requests_of_both_resource_shapes_reach_the_binding_and_health_stays_karmadas(
    karmada_env: KarmadaEnv, namespace: str
) -> None:
    env = karmada_env
    karmada = env.api(KARMADA)

    # Karmada v1.19 as installed: the old shape's requests reach the binding, memory misread (Karmada's e2e CR asks
    # for "100m", 100 MiB to Flink, read as 0.1 byte), a Flink unit Kubernetes lacks fails the whole interpretation,
    # and the new shape's requests do not reach it.
    new = create(env, namespace, "new-style", NEW_STYLE)
    builtin_old = create(env, namespace, "builtin-old-style")
    sizes = create(env, namespace, "flink-sizes", FLINK_SIZES)
    builtin = env.wait_until(lambda: requirements(builtin_old), 30, "the old-style binding interpreted")
    before = env.wait_until(lambda: requirements(new), 30, "the new-style binding interpreted")
    assert builtin["resourceRequest"] == {"cpu": "100m", "memory": "100m"}, builtin
    assert not before.get("resourceRequest"), before
    assert before["replicas"] == builtin["replicas"] == 2  # one JobManager, parallelism 2 / 2 slots
    failed = env.wait_until(
        lambda: [
            e for e in events_of(env, namespace, "GetReplicasFailed") if e["involvedObject"]["name"] == "flink-sizes"
        ],
        30,
        "Karmada's GetReplicasFailed on the CR with Flink's units",
    )
    assert "cannot parse '2g'" in failed[0]["message"], failed
    assert sizes.binding() is None

    env.kubectl("apply", "-f", str(INTERPRETER_FILE))
    try:
        # The detector interprets a template again on its next change; Karmada loads the customization on its own
        # time, so touch a template until its binding shows what the customization makes of it.
        touches = itertools.count()

        def interpreted(job: FlinkJob, resource_request: dict[str, str]) -> dict[str, Any] | None:
            path = resource_path(FLINK, "flinkdeployments", job.name, namespace)
            karmada.patch(path, {"metadata": {"annotations": {"test/touch": str(next(touches))}}})
            found = requirements(job)
            return found if found and found.get("resourceRequest") == resource_request else None

        after = env.wait_until(lambda: interpreted(new, NEW_STYLE_REQUESTS), 60, "the new-style binding's requests")
        assert after == {**before, "resourceRequest": NEW_STYLE_REQUESTS}, after

        # The old shape's memory as the operator requests it for the pods: the larger component's, in MiB.
        sized = env.wait_until(lambda: interpreted(sizes, {"cpu": "1", "memory": "3Gi"}), 30, "Flink's units read")
        assert sized["replicas"] == 2, sized
        old = create(env, namespace, "old-style")
        converted = {**builtin, "resourceRequest": {"cpu": "100m", "memory": "100Mi"}}
        assert env.wait_until(lambda: requirements(old), 30, "the old-style binding interpreted") == converted
        refused = create(env, namespace, "refused-size", REFUSED_SIZE)
        found = env.wait_until(lambda: requirements(refused), 30, "the binding with a refused memory size")
        assert found["resourceRequest"] == {"cpu": "1", "memory": "512Mi"}, found

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
