"""Objects the end-to-end tests send to the apiserver, small readers of kubectl's answers, and a PUT as Karmada's
controllers write."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kubernetes import client

from controllers.access.kube import CustomObjects
from failover.core.api import CLUSTERS, DEFAULT_JOB_ID_LABEL
from tests.envtest import ControlPlane

# The namespace of manifests/deploy/namespace.yaml.
RELAY_NAMESPACE = "failover-relay"
VALIDATE_POLICIES = "policies.validate.failover-relay.io"
VALIDATE_REBALANCERS = "rebalancers.validate.failover-relay.io"
MUTATE_POLICIES = "policies.mutate.failover-relay.io"
# A Flink JobID: 32 lowercase hex digits.
JOB_ID = "00000000000000000000000000000001"
# The job id the loop tests report in a binding's aggregatedStatus, as Karmada's status collector reflects it.
REPORTED_JOB_ID = "a1b2c3d4e5f60718293a4b5c6d7e8f90"


def good_policy(name: str, namespace: str, **application: Any) -> dict[str, Any]:
    """A PropagationPolicy with application failover that every rule admits, without the defaulted fields."""
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "propagateDeps": True,
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}],
            "placement": {"clusterAffinity": {"clusterNames": ["member1", "member2"]}},
            "failover": {"application": {"decisionConditions": {}, **application}},
        },
    }


def flink_policy(name: str, namespace: str, **application: Any) -> dict[str, Any]:
    """The Flink example of Karmada's application failover documentation (single-cluster placement)."""
    policy = good_policy(
        name,
        namespace,
        **{
            "purgeMode": "Directly",
            "statePreservation": {
                "rules": [{"aliasLabelName": DEFAULT_JOB_ID_LABEL, "jsonPath": "{ .jobStatus.jobId }"}]
            },
            **application,
        },
    )
    policy["spec"]["resourceSelectors"] = [
        {"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment", "name": "basic-example"}
    ]
    policy["spec"]["placement"]["spreadConstraints"] = [{"spreadByField": "cluster", "maxGroups": 1, "minGroups": 1}]
    return policy


def rebalancer(name: str, *workloads: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps.karmada.io/v1alpha1",
        "kind": "WorkloadRebalancer",
        "metadata": {"name": name},
        "spec": {"workloads": list(workloads), **spec},
    }


def deployment_ref(name: str, namespace: str) -> dict[str, str]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "name": name, "namespace": namespace}


def flink_deployment(name: str, namespace: str, labels: dict[str, str] | None = None, **job: Any) -> dict[str, Any]:
    return {
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkDeployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": {
            "image": "flink:1.20",
            "flinkVersion": "v1_20",
            "serviceAccount": "flink",
            "jobManager": {"resource": {"memory": "2048m", "cpu": 1}},
            "taskManager": {"resource": {"memory": "2048m", "cpu": 1}},
            "job": {
                "jarURI": "local:///opt/flink/examples/streaming/StateMachineExample.jar",
                "parallelism": 2,
                "upgradeMode": "stateless",
                **job,
            },
        },
    }


def flink_binding(name: str, namespace: str, toleration: int) -> dict[str, Any]:
    """The binding of FlinkDeployment `job` on member1: application failover after `toleration` s of Unhealthy,
    Directly, with the job id preserved."""
    return {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "propagateDeps": True,
            "resource": {
                "apiVersion": "flink.apache.org/v1beta1",
                "kind": "FlinkDeployment",
                "name": "job",
                "namespace": namespace,
            },
            "clusters": [{"name": "member1", "replicas": 1}],
            "failover": {
                "application": {
                    "decisionConditions": {"tolerationSeconds": toleration},
                    "purgeMode": "Directly",
                    "statePreservation": {
                        "rules": [
                            {
                                "aliasLabelName": "application.karmada.io/failover-jobid",
                                "jsonPath": "{ .jobStatus.jobId }",
                            }
                        ]
                    },
                }
            },
        },
    }


def denial(result: subprocess.CompletedProcess[str], webhook: str) -> str:
    """The message after kubectl's 'admission webhook "<webhook>" denied the request: ', failing if absent."""
    marker = f'admission webhook "{webhook}" denied the request: '
    assert result.returncode != 0, f"expected a denial by {webhook}, kubectl succeeded: {result.stdout}"
    assert marker in result.stderr, f"expected a denial by {webhook}, got: {result.stderr}"
    return result.stderr.split(marker, 1)[1].strip()


def warnings_of(result: subprocess.CompletedProcess[str]) -> list[str]:
    """The admission warnings kubectl printed (one 'Warning: ...' line each)."""
    return [line.removeprefix("Warning: ") for line in result.stderr.splitlines() if line.startswith("Warning: ")]


def apply(plane: ControlPlane, obj: dict[str, Any], *flags: str) -> subprocess.CompletedProcess[str]:
    """`kubectl apply -f -` of one object; the result is returned whatever kubectl's exit code."""
    return plane.kubectl("apply", *flags, "-f", "-", input=json.dumps(obj), check=False)


def get(plane: ControlPlane, resource: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
    """The stored object, or None when the apiserver has none by that name."""
    scope = ("-n", namespace) if namespace else ()
    result = plane.kubectl("get", resource, name, *scope, "-o", "json", "--ignore-not-found")
    return json.loads(result.stdout) if result.stdout.strip() else None


def applied_names(stdout: str) -> set[str]:
    """The objects a `kubectl apply -o name` named, as kind/name with the group dropped (`prometheusrule.monitoring.
    coreos.com/failover-relay` -> `prometheusrule/failover-relay`)."""
    return {re.sub(r"^([a-z]+)\.[^/]*/", r"\1/", line) for line in stdout.split()}


def ready_condition(ready: bool, since: datetime) -> dict[str, Any]:
    return {
        "type": "Ready",
        "status": "True" if ready else "False",
        "reason": "Test",
        "message": "set by the test",
        "lastTransitionTime": since.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def make_cluster(api: client.ApiClient, name: str, ready: bool, since: datetime) -> None:
    """A Push Cluster with its Ready condition, and its execution namespace."""
    clusters = CustomObjects(api, CLUSTERS)
    clusters.create(
        {
            "apiVersion": "cluster.karmada.io/v1alpha1",
            "kind": "Cluster",
            "metadata": {"name": name},
            "spec": {"syncMode": "Push"},
        }
    )
    clusters.patch_status(name, {"status": {"conditions": [ready_condition(ready, since)]}})
    client.CoreV1Api(api).create_namespace({"metadata": {"name": f"karmada-es-{name}"}})


def replace_object(objects: Any, obj: Mapping[str, Any], *, status: bool = False) -> dict[str, Any]:
    """PUT ``obj`` (or its status subresource) through a `controllers.access.kube.CustomObjects`: what Karmada's own
    controllers do when they rewrite a binding or reflect member status; the relay itself only patches."""
    r, api, name = objects.resource, objects.api, obj["metadata"]["name"]
    if r.namespaced:
        namespace = obj["metadata"]["namespace"]
        if status:
            return api.replace_namespaced_custom_object_status(r.group, r.version, namespace, r.plural, name, obj)
        return api.replace_namespaced_custom_object(r.group, r.version, namespace, r.plural, name, obj)
    if status:
        return api.replace_cluster_custom_object_status(r.group, r.version, r.plural, name, obj)
    return api.replace_cluster_custom_object(r.group, r.version, r.plural, name, obj)


def report_health(bindings: CustomObjects, key: str, health: str) -> None:
    """Write the binding's status as Karmada's status collector would: its one copy on member1 is `health`, its job
    FAILING."""
    binding = bindings.get(key)
    binding["status"] = {
        "schedulerObservedGeneration": binding["metadata"]["generation"],
        "aggregatedStatus": [
            {
                "clusterName": "member1",
                "applied": True,
                "health": health,
                "status": {"jobStatus": {"jobId": REPORTED_JOB_ID, "state": "FAILING"}},
            }
        ],
    }
    replace_object(bindings, binding, status=True)


def task_writers(binding: Mapping[str, Any]) -> set[str]:
    """The field managers of spec.gracefulEvictionTasks, as the apiserver recorded them: who wrote the task that
    stands (the relay is `controllers.access.kube.FIELD_MANAGER`, Karmada's taint manager
    karmada-controller-manager)."""
    return {
        entry.get("manager", "")
        for entry in (binding.get("metadata") or {}).get("managedFields") or []
        if "f:gracefulEvictionTasks" in str(entry.get("fieldsV1"))
    }
