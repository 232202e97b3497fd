"""Names of the Karmada and Flink APIs failover-relay reads and writes.

The values follow karmada-io/karmada (`pkg/apis/policy/v1alpha1/propagation_types.go`,
`pkg/apis/work/v1alpha2/binding_types.go`, `pkg/apis/work/v1alpha2/well_known_constants.go`) and the Flink
Kubernetes Operator's FlinkDeployment CRD.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, StrEnum


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
CONFIG_GROUP = "config.karmada.io"
FLINK_GROUP = "flink.apache.org"


@dataclass(frozen=True)
class Resource:
    """One API resource: what the webhook rules match, the loop lists and watches, and the objects carry.

    The catalogue below is the only place a group, version, plural or scope is spelled; bumping a Karmada API
    version is a one-line change here.
    """

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def group_kind(self) -> GroupKind:
        return GroupKind(self.group, self.kind)

    @property
    def scope(self) -> str:
        """The `scope` of a webhook rule and of the CRD: Namespaced or Cluster."""
        return "Namespaced" if self.namespaced else "Cluster"

    def path(self, name: str = "", namespace: str = "") -> str:
        """The REST path of the collection, or of the object `name` (in `namespace` for a namespaced kind):
        `/apis/<group>/<version>[/namespaces/<namespace>]/<plural>[/<name>]`."""
        scope = f"/namespaces/{namespace}" if namespace else ""
        return f"/apis/{self.api_version}{scope}/{self.plural}" + (f"/{name}" if name else "")


# The catalogue (group, version, kind, plural, scope), as Karmada v1.19's CRDs serve them.
PROPAGATION_POLICIES = Resource(POLICY_GROUP, "v1alpha1", "PropagationPolicy", "propagationpolicies", True)
CLUSTER_PROPAGATION_POLICIES = Resource(
    POLICY_GROUP, "v1alpha1", "ClusterPropagationPolicy", "clusterpropagationpolicies", False
)
WORKLOAD_REBALANCERS = Resource(APPS_GROUP, "v1alpha1", "WorkloadRebalancer", "workloadrebalancers", False)
RESOURCE_BINDINGS = Resource(WORK_GROUP, "v1alpha2", "ResourceBinding", "resourcebindings", True)
CLUSTER_RESOURCE_BINDINGS = Resource(WORK_GROUP, "v1alpha2", "ClusterResourceBinding", "clusterresourcebindings", False)
WORKS = Resource(WORK_GROUP, "v1alpha1", "Work", "works", True)
CLUSTERS = Resource(CLUSTER_GROUP, "v1alpha1", "Cluster", "clusters", False)
CLUSTER_TAINT_POLICIES = Resource(POLICY_GROUP, "v1alpha1", "ClusterTaintPolicy", "clustertaintpolicies", False)
RESOURCE_INTERPRETER_CUSTOMIZATIONS = Resource(
    CONFIG_GROUP, "v1alpha1", "ResourceInterpreterCustomization", "resourceinterpretercustomizations", False
)
FLINK_DEPLOYMENTS = Resource(FLINK_GROUP, "v1beta1", "FlinkDeployment", "flinkdeployments", True)
FLINK_SESSION_JOBS = Resource(FLINK_GROUP, "v1beta1", "FlinkSessionJob", "flinksessionjobs", True)
# Flink operator 1.14+ (FLINK-37515).
FLINK_BLUE_GREEN_DEPLOYMENTS = Resource(
    FLINK_GROUP, "v1beta1", "FlinkBlueGreenDeployment", "flinkbluegreendeployments", True
)
FLINK_RESOURCES = (FLINK_DEPLOYMENTS, FLINK_SESSION_JOBS, FLINK_BLUE_GREEN_DEPLOYMENTS)
# Karmada's two bindings (namespaced, and cluster-scoped for a cluster-scoped workload) and its two placement policies.
BINDING_RESOURCES = (RESOURCE_BINDINGS, CLUSTER_RESOURCE_BINDINGS)
POLICY_RESOURCES = (PROPAGATION_POLICIES, CLUSTER_PROPAGATION_POLICIES)

RESOURCES = (
    PROPAGATION_POLICIES,
    CLUSTER_PROPAGATION_POLICIES,
    WORKLOAD_REBALANCERS,
    RESOURCE_BINDINGS,
    CLUSTER_RESOURCE_BINDINGS,
    WORKS,
    CLUSTERS,
    *FLINK_RESOURCES,
)
RESOURCES_BY_GROUP_KIND = {resource.group_kind: resource for resource in RESOURCES}
# The catalogue's kinds are unique across its groups; the decisions name objects by kind (`ObjectRef`).
RESOURCES_BY_KIND = {resource.kind: resource for resource in RESOURCES}

PROPAGATION_POLICY = PROPAGATION_POLICIES.group_kind
CLUSTER_PROPAGATION_POLICY = CLUSTER_PROPAGATION_POLICIES.group_kind
WORKLOAD_REBALANCER = WORKLOAD_REBALANCERS.group_kind
RESOURCE_BINDING = RESOURCE_BINDINGS.group_kind
CLUSTER_RESOURCE_BINDING = CLUSTER_RESOURCE_BINDINGS.group_kind
WORK = WORKS.group_kind
CLUSTER = CLUSTERS.group_kind
FLINK_DEPLOYMENT = FLINK_DEPLOYMENTS.group_kind
FLINK_SESSION_JOB = FLINK_SESSION_JOBS.group_kind
FLINK_BLUE_GREEN_DEPLOYMENT = FLINK_BLUE_GREEN_DEPLOYMENTS.group_kind

POLICY_KINDS = frozenset(resource.group_kind for resource in POLICY_RESOURCES)


def group_kind_of(api_version: str, kind: str) -> GroupKind:
    """The group and kind of an object's `apiVersion` and `kind`: `flink.apache.org/v1beta1` is in the group
    `flink.apache.org`, `v1` in the core group ""."""
    return GroupKind(api_version.rpartition("/")[0], kind)


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
    def canonical(self) -> PurgeMode:
        """The v1.15+ name with the same meaning (Immediately is Directly, Graciously is Gracefully)."""
        return _CANONICAL.get(self, self)

    @property
    def legacy(self) -> PurgeMode:
        """The v1.12-v1.14 name with the same meaning (Never has no other spelling)."""
        return _LEGACY.get(self.canonical, self.canonical)

    @property
    def is_directly(self) -> bool:
        return self.canonical is PurgeMode.DIRECTLY

    @property
    def is_gracefully(self) -> bool:
        return self.canonical is PurgeMode.GRACEFULLY


class PurgeModeSpelling(StrEnum):
    """Which names eviction tasks and policy defaults are written with."""

    NEW = "new"  # Directly/Gracefully/Never: Karmada v1.15+, the only spelling the v1.19 CRD accepts
    LEGACY = "legacy"  # Immediately/Graciously/Never: what the v1.12-v1.14 CRDs accept


_CANONICAL = {PurgeMode.IMMEDIATELY: PurgeMode.DIRECTLY, PurgeMode.GRACIOUSLY: PurgeMode.GRACEFULLY}
_LEGACY = {PurgeMode.DIRECTLY: PurgeMode.IMMEDIATELY, PurgeMode.GRACEFULLY: PurgeMode.GRACIOUSLY}

PURGE_MODE_NAMES = tuple(mode.value for mode in PurgeMode)
# Cluster failover (failover.cluster, v1.15+) has no Never: the taint manager always removes the copy.
CLUSTER_PURGE_MODES = frozenset({PurgeMode.DIRECTLY, PurgeMode.GRACEFULLY, PurgeMode.IMMEDIATELY, PurgeMode.GRACIOUSLY})

# Defaults Karmada applies (CRD defaults and pkg/util/helper/policy.go SetDefaultGracePeriodSeconds).
DEFAULT_TOLERATION_SECONDS = 300
DEFAULT_PURGE_MODE = PurgeMode.GRACEFULLY
DEFAULT_GRACE_PERIOD_SECONDS = 600


# Labels and annotations.
class FailurePolicy(StrEnum):
    """A webhook's `failurePolicy` (admissionregistration.k8s.io/v1)."""

    FAIL = "Fail"
    IGNORE = "Ignore"


# Rules fail closed; the savepoint and Work mutators (storage and binding reads) fail open unless the operator says
# otherwise: an unreachable storage must not block the failover itself.
DEFAULT_SAVEPOINT_FAILURE_POLICY = FailurePolicy.IGNORE

DEFAULT_JOB_ID_LABEL = "application.karmada.io/failover-jobid"
# The placement a binding was scheduled with, JSON (pkg/util/constants.go PolicyPlacementAnnotation): the taint
# manager reads the cluster tolerations here, not in spec.placement.
APPLIED_PLACEMENT_ANNOTATION = "policy.karmada.io/applied-placement"
RESOURCE_BINDING_NAMESPACE_ANNOTATION = "resourcebinding.karmada.io/namespace"
RESOURCE_BINDING_NAME_ANNOTATION = "resourcebinding.karmada.io/name"
CLUSTER_RESOURCE_BINDING_NAME_ANNOTATION = "clusterresourcebinding.karmada.io/name"
EXECUTION_NAMESPACE_PREFIX = "karmada-es-"

# Eviction task reasons and producers (pkg/apis/work/v1alpha2/well_known_constants.go).
REASON_APPLICATION_FAILURE = "ApplicationFailure"
REASON_TAINT_UNTOLERATED = "TaintUntolerated"
PRODUCER_RB_APPLICATION_FAILOVER = "resource-binding-application-failover-controller"
PRODUCER_CRB_APPLICATION_FAILOVER = "cluster-resource-binding-application-failover-controller"
PRODUCER_TAINT_MANAGER = "TaintManager"  # EvictionProducerTaintManager

# Ours: the reason of a failback eviction task, and the policy annotation that opts a workload in to failback
# (docs/design.md, "Failback").
REASON_FAILBACK = "Failback"
PRODUCER_FAILBACK = "failover-relay-failback"
FAILBACK_ANNOTATION = "failover-relay.io/failback"
# A drain (docs/design.md, "Planned moves"): the Cluster taint `failover-relay drain` writes (NoSchedule, as
# `karmadactl cordon` writes cluster.karmada.io/unschedulable: nothing new is placed there), and its eviction tasks.
DRAIN_TAINT_KEY = "failover-relay.io/drain"
REASON_DRAIN = "Drain"
PRODUCER_DRAIN = "failover-relay-drain"
# A WorkloadRebalancer's move of a single-cluster stateful workload, handed over by savepoint.
REASON_REBALANCE = "Rebalance"
PRODUCER_REBALANCE = "failover-relay-rebalance"
# `failover-relay drill`: one workload moved on purpose to the cluster the scheduler picks, and back.
REASON_DRILL = "Drill"
PRODUCER_DRILL = "failover-relay-drill"
PLANNED_MOVE_REASONS = (REASON_FAILBACK, REASON_DRAIN, REASON_REBALANCE, REASON_DRILL)
PLANNED_MOVE_PRODUCERS = (PRODUCER_FAILBACK, PRODUCER_DRAIN, PRODUCER_REBALANCE, PRODUCER_DRILL)

# Annotations Karmada puts on bindings naming the policy that made them (policy.karmada.io/v1alpha1 constants).
PROPAGATION_POLICY_NAME_ANNOTATION = "propagationpolicy.karmada.io/name"
PROPAGATION_POLICY_NAMESPACE_ANNOTATION = "propagationpolicy.karmada.io/namespace"
CLUSTER_PROPAGATION_POLICY_NAME_ANNOTATION = "clusterpropagationpolicy.karmada.io/name"

# WorkloadRebalancer (apps.karmada.io/v1alpha1) results and the only failure reason Karmada writes.
REBALANCE_SUCCESSFUL = "Successful"
REBALANCE_FAILED = "Failed"
REBALANCE_REFERENCED_BINDING_NOT_FOUND = "ReferencedBindingNotFound"
