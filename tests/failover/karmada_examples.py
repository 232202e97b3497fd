"""Karmada's documented failover objects, as published, and builders for variations of them.

The YAML is copied from the application failover user guide (website `docs/userguide/failover/application-failover.md`),
the v1.12 release notes and the rebalancing guide. Where the documentation abbreviates (`#...`), the YAML keeps the
abbreviation: the rules must judge the object exactly as a user would paste it.
"""

from __future__ import annotations

import copy
from typing import Any

import yaml

# Application failover guide, "Configure Decision Conditions".
DOC_DECISION_CONDITIONS = """
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: test-propagation
spec:
  #...
  failover:
    application:
      decisionConditions:
        tolerationSeconds: 300
      #...
"""

# Application failover guide, "Configure PurgeMode" (first variant).
DOC_PURGE_GRACIOUSLY = """
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: test-propagation
spec:
  #...
  failover:
    application:
      decisionConditions:
        tolerationSeconds: 300
      gracePeriodSeconds: 600
      purgeMode: Graciously
      #...
"""

# Application failover guide, "Configure PurgeMode" (second variant).
DOC_PURGE_NEVER = """
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: test-propagation
spec:
  #...
  failover:
    application:
      decisionConditions:
        tolerationSeconds: 300
      purgeMode: Never
      #...
"""

# Application failover guide, "Example".
DOC_NGINX_EXAMPLE = """
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: nginx-propagation
spec:
  failover:
    application:
      decisionConditions:
        tolerationSeconds: 120
      purgeMode: Never
  propagateDeps: true      # application failover is set, propagateDeps must be true
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: nginx
  placement:
    clusterAffinity:
      clusterNames:
        - member1
        - member2
        - member3
    spreadConstraints:
      - maxGroups: 1
        minGroups: 1
        spreadByField: cluster
"""

# Application failover guide, "Application State Preservation" (note: no propagateDeps, legacy purge mode, jobID).
DOC_FLINK_STATE_PRESERVATION = """
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: foo
spec:
  resourceSelectors:
    - apiVersion: flink.apache.org/v1beta1
      kind: FlinkDeployment
      name: foo
  failover:
    application:
      decisionConditions:
        tolerationSeconds: 60
      purgeMode: Immediately
      statePreservation:
        rules:
          - aliasLabelName: application.karmada.io/failover-jobid
            jsonPath: "{ .jobStatus.jobID }"
  placement:
    clusterAffinity:
      clusterNames:
        - member1
        - member2
        - member3
    spreadConstraints:
      - maxGroups: 1
        minGroups: 1
        spreadByField: cluster
"""

# v1.12 release notes, stateful application failover (spec abbreviated with `# ...`).
RELEASE_NOTES_FLINK = """
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: foo
spec:
  # ...
  failover:
    application:
      decisionConditions:
        tolerationSeconds: 60
      purgeMode: Immediately
      statePreservation:
        rules:
          - aliasLabelName: application.karmada.io/failover-jobid
            jsonPath: "{ .jobStatus.jobID }"
"""

# v1.12 release notes, preserveResourcesOnDeletion (no failover at all).
RELEASE_NOTES_NGINX_PP = """
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: nginx-pp
spec:
  conflictResolution: Overwrite
  preserveResourcesOnDeletion: true # 资源模板删除后，成员集群资源依然保留
  placement:
    clusterAffinity:
      clusterNames:
        - member1
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: nginx
    - apiVersion: v1
      kind: Service
      name: nginx-svc
"""

# The documented Flink policy as it has to be written to work: propagateDeps, Directly, the operator's `jobId`.
FLINK_WORKING = """
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: foo
  namespace: streaming
spec:
  propagateDeps: true
  resourceSelectors:
    - apiVersion: flink.apache.org/v1beta1
      kind: FlinkDeployment
      name: foo
  failover:
    application:
      decisionConditions:
        tolerationSeconds: 60
      purgeMode: Directly
      statePreservation:
        rules:
          - aliasLabelName: application.karmada.io/failover-jobid
            jsonPath: "{ .jobStatus.jobId }"
    cluster:
      purgeMode: Directly
      statePreservation:
        rules:
          - aliasLabelName: application.karmada.io/cluster-failover-jobid
            jsonPath: "{ .jobStatus.jobId }"
  placement:
    clusterAffinity:
      clusterNames:
        - member1
        - member2
        - member3
    spreadConstraints:
      - maxGroups: 1
        minGroups: 1
        spreadByField: cluster
"""

# Rebalancing guide, automatic cleanup example.
DOC_REBALANCER_TTL = """
apiVersion: apps.karmada.io/v1alpha1
kind: WorkloadRebalancer
metadata:
  name: demo
spec:
  ttlSecondsAfterFinished: 60
  workloads:
    - apiVersion: apps/v1
      kind: Deployment
      name: demo-deploy
      namespace: default
"""

# Rebalancing guide, batch example, with the field name the guide misspells (`workloadList`) corrected.
DOC_REBALANCER_BATCH = """
apiVersion: apps.karmada.io/v1alpha1
kind: WorkloadRebalancer
metadata:
  name: rebatch-deployments
spec:
  workloads:
    - apiVersion: apps/v1
      kind: Deployment
      name: nginx-deployment
      namespace: default
    - apiVersion: apps/v1
      kind: Deployment
      name: redis-deployment
      namespace: default
    - apiVersion: apps/v1
      kind: StatefulSet
      name: mysql-statefulset
      namespace: db
"""

# Rebalancing guide, batch example exactly as printed: `workloadList` is not a WorkloadRebalancer field.
DOC_REBALANCER_BATCH_AS_PRINTED = """
apiVersion: apps.karmada.io/v1alpha1
kind: WorkloadRebalancer
metadata:
  name: rebatch-deployments
spec:
  workloadList:
    - apiVersion: apps/v1
      kind: Deployment
      name: nginx-deployment
      namespace: default
"""

# Flink Kubernetes Operator status as Karmada reflects it into aggregatedStatus (no `status.` prefix).
FLINK_REFLECTED_STATUS = """
jobManagerDeploymentStatus: READY
lifecycleState: STABLE
jobStatus:
  jobName: foo
  jobId: 5b3c8a1f0e2d4c6b8a9f7e6d5c4b3a21
  state: RUNNING
  checkpointInfo:
    lastCheckpoint:
      timeStamp: 1730000000000
      triggerType: PERIODIC
      formatType: FULL
  savepointInfo:
    lastSavepoint:
      location: s3://checkpoints/streaming/foo/savepoint-5b3c8a-1
taskManager:
  replicas: 2
"""


def load(text: str) -> dict[str, Any]:
    """A fresh copy of a documented object, safe to modify."""
    return yaml.safe_load(text)


def working_flink_policy(kind: str = "PropagationPolicy") -> dict[str, Any]:
    policy = load(FLINK_WORKING)
    policy["kind"] = kind
    if kind == "ClusterPropagationPolicy":
        del policy["metadata"]["namespace"]
    return policy


def with_changes(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """A copy of `base` with dotted paths set (`spec.failover.application.purgeMode`); the value DELETE removes one.

    List indexes are written as numbers in the path (`spec.failover.application.statePreservation.rules.0.jsonPath`).
    """
    result = copy.deepcopy(base)
    for dotted, value in changes.items():
        *parents, last = dotted.split(".")
        node: Any = result
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
        if isinstance(node, list):
            node[int(last)] = value
        elif value is DELETE:
            node.pop(last, None)
        else:
            node[last] = value
    return result


DELETE = object()
