"""PropagationPolicies the tests send: the Flink example of Karmada's application failover documentation."""

from __future__ import annotations

from typing import Any


def flink_policy(**application: Any) -> dict[str, Any]:
    """The Flink example of Karmada's application failover documentation."""
    app: dict[str, Any] = {
        "decisionConditions": {"tolerationSeconds": 60},
        "purgeMode": "Directly",
        "statePreservation": {
            "rules": [{"aliasLabelName": "application.karmada.io/failover-jobid", "jsonPath": "{ .jobStatus.jobId }"}]
        },
    }
    app.update(application)
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": "flink-pp", "namespace": "default"},
        "spec": {
            "propagateDeps": True,
            "resourceSelectors": [
                {"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment", "name": "basic-example"}
            ],
            "failover": {"application": app},
            "placement": {
                "clusterAffinity": {"clusterNames": ["member1", "member2"]},
                "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 1, "minGroups": 1}],
            },
        },
    }
