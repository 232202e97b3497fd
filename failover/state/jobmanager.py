"""A FlinkDeployment's JobManager as its cluster's apiserver shows it: whether one runs, or can come back.

The Flink operator's word that a job stopped (`lifecycleState` SUSPENDED, `jobStatus.state` FINISHED or FAILED) is a
claim, not proof: after a savepoint suspend without HA, operator 1.16 leaves the JobManager up for
`kubernetes.operator.jm-deployment.shutdown-ttl` (a day by default), and if its pod restarts, the entrypoint submits
the job again from its initial state while the resource still says SUSPENDED (FLINK-41262, fix PR
apache/flink-kubernetes-operator#1237, open); with HA, a job already FAILED can be recovered with the same job id when
leadership changes right after (FLINK-39704). So a copy is stopped only when no JobManager of it runs and none can come
back: its JobManager Deployment is gone (or wants no replica) and none of its pods is still running.

The operator deploys an application cluster through Flink's native Kubernetes integration: the JobManager Deployment
is named after the cluster id, which is the FlinkDeployment's name, owned by the FlinkDeployment
(`kubernetes.jobmanager.owner.reference`, set by the operator's `FlinkConfigBuilder`), and its pods carry the labels
`app: <name>`, `component: jobmanager`, `type: flink-native-kubernetes` (Flink's `KubernetesUtils`
`getJobManagerSelectors`). A FlinkSessionJob has no JobManager of its own: it runs in its session cluster's, which
other jobs share.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from failover.core import binding as b

ENDED_PHASES = frozenset({"Succeeded", "Failed"})


def jobmanager_selector(name: str) -> str:
    """The label selector of a FlinkDeployment's JobManager pods."""
    return f"app={name},component=jobmanager,type=flink-native-kubernetes"


@dataclass(frozen=True)
class JobManager:
    """One FlinkDeployment copy's JobManager: its Deployment as read (None when there is none, or it is not the
    copy's), and the pods its selector finds."""

    deployment: Mapping[str, Any] | None
    pods: Sequence[Mapping[str, Any]] = ()

    @property
    def wanted(self) -> bool:
        """The Deployment wants a JobManager: it exists, is not being deleted, and asks for a replica (1 when
        unset, as Kubernetes defaults it)."""
        if self.deployment is None or b.is_deleting(self.deployment):
            return False
        replicas = b.spec(self.deployment).get("replicas", 1)
        return not isinstance(replicas, int) or replicas != 0

    @property
    def running_pods(self) -> tuple[str, ...]:
        """The names of its pods that have not ended (Pending, Running, Unknown; terminating ones still run)."""
        return tuple(
            str(b.metadata(pod).get("name")) for pod in self.pods if b.status(pod).get("phase") not in ENDED_PHASES
        )

    @property
    def runs(self) -> bool:
        """A JobManager of the copy runs, or can come back."""
        return self.wanted or bool(self.running_pods)


def owned_by(obj: Mapping[str, Any] | None, owner: Mapping[str, Any]) -> bool:
    """`obj` names `owner` (by uid) among its ownerReferences: the Deployment the operator made for that copy, not one
    someone else named alike."""
    uid = b.metadata(owner).get("uid")
    references = b.metadata(obj).get("ownerReferences")
    return bool(uid) and any(
        isinstance(reference, dict) and reference.get("uid") == uid
        for reference in (references if isinstance(references, list) else ())
    )
