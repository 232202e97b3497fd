"""Policy admission through kubectl on karmada-apiserver, with Karmada's webhook configurations and failover-relay's
both registered (../shared/reference/real-karmada.md, scenario b): each refuses what it owns, neither breaks the
other's mutations, and a valid stateful policy goes through both."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from tests.karmada.workloads import FLINK, REBALANCERS, stateful_policy
from tests.karmada_env import KarmadaEnv

pytestmark = pytest.mark.karmada

RELAY_POLICIES = "policies.validate.failover-relay.io"
RELAY_REBALANCERS = "rebalancers.validate.failover-relay.io"
KARMADA_PERMANENT_ID = "propagationpolicy.karmada.io/permanent-id"


def create(env: KarmadaEnv, obj: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    return env.kubectl("create", "-f", "-", input=json.dumps(obj), check=False)


def test_both_webhook_sets_are_registered(karmada_env: KarmadaEnv) -> None:
    mutating = json.loads(karmada_env.kubectl("get", "mutatingwebhookconfigurations", "-o", "json").stdout)
    validating = json.loads(karmada_env.kubectl("get", "validatingwebhookconfigurations", "-o", "json").stdout)

    assert {"failover-relay", "mutating-config"} <= {c["metadata"]["name"] for c in mutating["items"]}
    assert {"failover-relay", "validating-config"} <= {c["metadata"]["name"] for c in validating["items"]}


def test_relay_refuses_state_preservation_that_karmada_would_never_inject(
    karmada_env: KarmadaEnv, namespace: str
) -> None:
    policy = stateful_policy("graceful", namespace, "job", karmada_env.members, purge_mode="Gracefully")

    result = create(karmada_env, policy)

    assert result.returncode != 0
    assert f'admission webhook "{RELAY_POLICIES}" denied the request' in result.stderr
    assert "needs purgeMode Directly" in result.stderr


def test_failover_without_propagate_deps_is_refused(karmada_env: KarmadaEnv, namespace: str) -> None:
    policy = stateful_policy("no-deps", namespace, "job", karmada_env.members)
    policy["spec"]["propagateDeps"] = False

    result = create(karmada_env, policy)

    # Karmada's own webhook refuses it too (`ValidatePropagationSpec`, since v1.7): both deny, and the apiserver
    # reports whichever denial answers first, so only the field is checked.
    assert result.returncode != 0
    assert "propagateDeps" in result.stderr


def test_valid_stateful_policy_passes_both_and_karmada_still_mutates_it(
    karmada_env: KarmadaEnv, namespace: str
) -> None:
    policy = stateful_policy("valid", namespace, "job", karmada_env.members)
    del policy["spec"]["failover"]["application"]["decisionConditions"]

    result = create(karmada_env, policy)

    assert result.returncode == 0, result.stderr
    stored = json.loads(karmada_env.kubectl("get", "propagationpolicy", "valid", "-n", namespace, "-o", "json").stdout)
    assert KARMADA_PERMANENT_ID in stored["metadata"]["labels"]
    application = stored["spec"]["failover"]["application"]
    assert application["decisionConditions"] == {"tolerationSeconds": 300}
    assert application["purgeMode"] == "Directly"


def test_karmada_still_refuses_what_it_owns(karmada_env: KarmadaEnv, namespace: str) -> None:
    policy = stateful_policy("spread", namespace, "job", karmada_env.members)
    policy["spec"]["placement"]["spreadConstraints"] = [{"spreadByField": "cluster", "maxGroups": 1, "minGroups": 2}]

    result = create(karmada_env, policy)

    assert result.returncode != 0
    assert 'admission webhook "propagationpolicy.karmada.io"' in result.stderr
    assert "maxGroups lower than minGroups is not allowed" in result.stderr


def test_relay_refuses_a_rebalancer_listing_a_workload_twice(karmada_env: KarmadaEnv, namespace: str) -> None:
    workload = {"apiVersion": FLINK, "kind": "FlinkDeployment", "name": "job", "namespace": namespace}
    rebalancer = {
        "apiVersion": REBALANCERS,
        "kind": "WorkloadRebalancer",
        "metadata": {"name": f"{namespace}-dup"},
        "spec": {"workloads": [workload, dict(workload)]},
    }

    result = create(karmada_env, rebalancer)

    assert result.returncode != 0
    assert f'admission webhook "{RELAY_REBALANCERS}" denied the request' in result.stderr
