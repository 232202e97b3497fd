"""Warnings at admission when stateful failover cannot happen, as kubectl prints them on the Karmada control plane, next
to Karmada's own webhook which admits these policies silently."""

from __future__ import annotations

import json

import pytest

from tests.karmada.outages import events_of
from tests.karmada.workloads import FLINK, FlinkJob, stateful_policy
from tests.karmada_env import KARMADA, KarmadaEnv, resource_path

pytestmark = pytest.mark.karmada


def test_kubectl_shows_why_failover_cannot_happen(karmada_env: KarmadaEnv, namespace: str) -> None:
    job_policy = stateful_policy("batch", namespace, "nightly", ("member1",))
    job_policy["spec"]["resourceSelectors"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": "nightly"}]
    del job_policy["spec"]["failover"]["application"]["statePreservation"]
    result = karmada_env.kubectl("apply", "--dry-run=server", "-f", "-", input=json.dumps(job_policy))
    assert "Warning: Job: Karmada has no health interpretation for it (#7843)" in result.stderr
    assert "Warning: spec.placement names only member1: a failover has no other cluster to go to (#5803)" in (
        result.stderr
    )


def test_kubectl_shows_where_flink_restarts_without_state(karmada_env: KarmadaEnv, namespace: str) -> None:
    """At policy admission: the preserved state cannot restore the FlinkDeployment, so a failover restarts it empty."""
    rules = stateful_policy("flink", namespace, "job", ("member1", "member2"))
    application = rules["spec"]["failover"]["application"]
    application["statePreservation"]["rules"] = [
        {"aliasLabelName": "example.com/state", "jsonPath": "{ .jobStatus.state }"}
    ]
    result = karmada_env.kubectl("apply", "--dry-run=server", "-f", "-", input=json.dumps(rules))
    assert (
        "Warning: spec.failover.application.statePreservation: no rule keeps { .jobStatus.jobId }: "
        "FlinkDeployments restart without state"
    ) in result.stderr

    application["statePreservation"]["rules"] = [
        {"aliasLabelName": "example.com/jobid", "jsonPath": "{ .jobStatus.jobId }"}
    ]
    result = karmada_env.kubectl("apply", "--dry-run=server", "-f", "-", input=json.dumps(rules))
    assert (
        "Warning: spec.failover.application.statePreservation.rules[0].aliasLabelName: no restore runs on this "
        "label (docs/restore.md)"
    ) in result.stderr
    assert "created (server dry run)" in result.stdout


def test_the_loop_warns_when_the_flink_deployment_itself_loses_its_state(
    karmada_env: KarmadaEnv, namespace: str
) -> None:
    """On the reconcile side: the policy keeps the job id, but the FlinkDeployment's own configuration deletes its
    checkpoints on cancellation; the relay says so on the binding before any failover."""
    job = FlinkJob(karmada_env, namespace)
    job.create(stateful_policy("flink", namespace, job.name, ("member1", "member2")))
    karmada_env.api(KARMADA).patch(
        resource_path(FLINK, "flinkdeployments", job.name, namespace),
        {
            "spec": {
                "flinkConfiguration": {
                    "execution.checkpointing.externalized-checkpoint-retention": "DELETE_ON_CANCELLATION"
                }
            }
        },
    )

    [event] = karmada_env.wait_until(
        lambda: events_of(karmada_env, namespace, "StatelessRestart"), 60, "the StatelessRestart event"
    )
    assert event["type"] == "Warning"
    assert event["involvedObject"]["kind"] == "ResourceBinding"
    assert event["involvedObject"]["name"] == job.binding_name
    assert event["message"] == (
        f"FlinkDeployment {namespace}/{job.name} restarts without state after a failover: "
        "execution.checkpointing.externalized-checkpoint-retention is DELETE_ON_CANCELLATION: the checkpoints go "
        "with the old copy"
    )
