"""Warnings at admission when stateful failover cannot happen (issue 12 point 9), as kubectl prints them on the
Karmada control plane, next to Karmada's own webhook which admits these policies silently."""

from __future__ import annotations

import json

import pytest

from tests.karmada.workloads import stateful_policy
from tests.karmada_env import KarmadaEnv

pytestmark = pytest.mark.karmada


def test_kubectl_shows_why_failover_cannot_happen(karmada_env: KarmadaEnv, namespace: str) -> None:
    job_policy = stateful_policy("batch", namespace, "nightly", ("member1",))
    job_policy["spec"]["resourceSelectors"] = [{"apiVersion": "batch/v1", "kind": "Job", "name": "nightly"}]
    del job_policy["spec"]["failover"]["application"]["statePreservation"]
    result = karmada_env.kubectl("apply", "--dry-run=server", "-f", "-", input=json.dumps(job_policy))
    assert "Warning: Job: Karmada has no health interpretation for it (#7843)" in result.stderr
    assert "Warning: spec.placement names only member1: a failover has no other cluster to go to (#5803)" in (
        result.stderr)
