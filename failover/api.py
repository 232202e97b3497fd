"""Names of the Karmada and Flink APIs failover-relay reads and writes.

The values follow karmada-io/karmada (`pkg/apis/policy/v1alpha1/propagation_types.go`,
`pkg/apis/work/v1alpha2/binding_types.go`, `pkg/apis/work/v1alpha2/well_known_constants.go`) and the Flink
Kubernetes Operator's FlinkDeployment CRD.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


@dataclass(frozen=True)
class GroupKind:
    group: str
    kind: str

    def __str__(self) -> str:
        return f"{self.kind}.{self.group}" if self.group else self.kind


POLICY_GROUP = "policy.karmada.io"
WORK_GROUP = "work.karmada.io"
APPS_GROUP = "apps.karmada.io"
CLUSTER_GROUP = "cluster.karmada.io"
FLINK_GROUP = "flink.apache.org"

PROPAGATION_POLICY = GroupKind(POLICY_GROUP, "PropagationPolicy")
CLUSTER_PROPAGATION_POLICY = GroupKind(POLICY_GROUP, "ClusterPropagationPolicy")
WORKLOAD_REBALANCER = GroupKind(APPS_GROUP, "WorkloadRebalancer")
RESOURCE_BINDING = GroupKind(WORK_GROUP, "ResourceBinding")
CLUSTER_RESOURCE_BINDING = GroupKind(WORK_GROUP, "ClusterResourceBinding")
WORK = GroupKind(WORK_GROUP, "Work")
CLUSTER = GroupKind(CLUSTER_GROUP, "Cluster")
FLINK_DEPLOYMENT = GroupKind(FLINK_GROUP, "FlinkDeployment")

POLICY_KINDS = frozenset({PROPAGATION_POLICY, CLUSTER_PROPAGATION_POLICY})


class PurgeMode(str, Enum):
    """How the copy left on the failed cluster is removed (`spec.failover.*.purgeMode`)."""

    DIRECTLY = "Directly"
    GRACEFULLY = "Gracefully"
    NEVER = "Never"
    # v1.12-v1.14 spellings, aliases until v1.18, removed from the CRD enum in v1.19 (commit 2aeae1eea).
    IMMEDIATELY = "Immediately"
    GRACIOUSLY = "Graciously"

    @property
    def is_legacy(self) -> bool:
        return self in (PurgeMode.IMMEDIATELY, PurgeMode.GRACIOUSLY)

    @property
    def canonical(self) -> "PurgeMode":
        """The v1.15+ name with the same meaning (Immediately is Directly, Graciously is Gracefully)."""
        return _CANONICAL.get(self, self)

    @property
    def legacy(self) -> "PurgeMode":
        """The v1.12-v1.14 name with the same meaning (Never has no other spelling)."""
        return _LEGACY.get(self.canonical, self.canonical)

    @property
    def is_directly(self) -> bool:
        return self.canonical is PurgeMode.DIRECTLY

    @property
    def is_gracefully(self) -> bool:
        return self.canonical is PurgeMode.GRACEFULLY


_CANONICAL = {PurgeMode.IMMEDIATELY: PurgeMode.DIRECTLY, PurgeMode.GRACIOUSLY: PurgeMode.GRACEFULLY}
_LEGACY = {PurgeMode.DIRECTLY: PurgeMode.IMMEDIATELY, PurgeMode.GRACEFULLY: PurgeMode.GRACIOUSLY}

PURGE_MODE_NAMES = tuple(mode.value for mode in PurgeMode)
# Cluster failover (failover.cluster, v1.15+) has no Never: the taint manager always removes the copy.
CLUSTER_PURGE_MODES = frozenset(
    {PurgeMode.DIRECTLY, PurgeMode.GRACEFULLY, PurgeMode.IMMEDIATELY, PurgeMode.GRACIOUSLY}
)

# Defaults Karmada applies (CRD defaults and pkg/util/helper/policy.go SetDefaultGracePeriodSeconds).
DEFAULT_TOLERATION_SECONDS = 300
DEFAULT_PURGE_MODE = PurgeMode.GRACEFULLY
DEFAULT_GRACE_PERIOD_SECONDS = 600

# Labels and annotations.
DEFAULT_JOB_ID_LABEL = "application.karmada.io/failover-jobid"
RESOURCE_BINDING_NAMESPACE_ANNOTATION = "resourcebinding.karmada.io/namespace"
RESOURCE_BINDING_NAME_ANNOTATION = "resourcebinding.karmada.io/name"
CLUSTER_RESOURCE_BINDING_NAME_ANNOTATION = "clusterresourcebinding.karmada.io/name"
EXECUTION_NAMESPACE_PREFIX = "karmada-es-"

# Eviction task reasons and producers (pkg/apis/work/v1alpha2/well_known_constants.go).
REASON_APPLICATION_FAILURE = "ApplicationFailure"
REASON_TAINT_UNTOLERATED = "TaintUntolerated"
PRODUCER_RB_APPLICATION_FAILOVER = "resource-binding-application-failover-controller"
PRODUCER_CRB_APPLICATION_FAILOVER = "cluster-resource-binding-application-failover-controller"

# Annotations Karmada puts on bindings naming the policy that made them (policy.karmada.io/v1alpha1 constants).
PROPAGATION_POLICY_NAME_ANNOTATION = "propagationpolicy.karmada.io/name"
PROPAGATION_POLICY_NAMESPACE_ANNOTATION = "propagationpolicy.karmada.io/namespace"
CLUSTER_PROPAGATION_POLICY_NAME_ANNOTATION = "clusterpropagationpolicy.karmada.io/name"

# WorkloadRebalancer (apps.karmada.io/v1alpha1) results and the only failure reason Karmada writes.
REBALANCE_SUCCESSFUL = "Successful"
REBALANCE_FAILED = "Failed"
REBALANCE_REFERENCED_BINDING_NOT_FOUND = "ReferencedBindingNotFound"
