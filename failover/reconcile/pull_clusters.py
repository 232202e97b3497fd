"""The old copy on a Pull-mode member cluster (`karmada-agent`): handed to the agent instead of the cluster proxy.

A Pull cluster's apiserver is reached by its agent, not by the control plane: the agent creates the Cluster with
`spec.syncMode: Pull` and the API endpoint it is told (`cmd/agent/app/agent.go` `generateClusterInControllerPlane`),
typically one the control plane cannot reach, so Karmada's cluster proxy answers 500 there and a delete through it
never succeeds. The agent's own execution controller (`pkg/controllers/execution/execution_controller.go`, run in the
agent) deletes a member object when its Work is deleted, once the agent sees its cluster Ready (`handleWorkDelete`),
and only then removes the Work's finalizer; a Work that is gone leaves the object behind for good (the work status
controller ignores objects whose Work no longer exists, `pkg/controllers/status/work_status_controller.go`
`syncWorkStatus`; karmada#5406).

So a fenced Work on a Pull cluster is not released by removing its finalizer: it keeps the finalizer and its
deletion, and loses the binding's permanent-id label, the only thing by which Karmada's binding controller counts it
as the binding's orphan Work (`pkg/controllers/binding/binding_controller.go` `checkDirectPurgeOrphanWorks` ->
`pkg/util/helper/binding.go` `FindWorksInClusters`, an index on that label). The binding controller then creates
the new copy; the Work, still terminating in `karmada-es-<cluster>`, is what the returning agent acts on first: it
deletes the stale copy and removes the finalizer. The relay finds the Work by its binding annotations, which stay.
Nothing here needs the member, the proxy or a new component there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from failover.core import binding as b

PULL = "Pull"  # pkg/apis/cluster/v1alpha1/types.go ClusterSyncMode
# pkg/apis/work/v1alpha2/well_known_constants.go: the labels `FindWorksInClusters` finds a binding's Works by.
BINDING_ID_LABELS = (
    "resourcebinding.karmada.io/permanent-id",
    "clusterresourcebinding.karmada.io/permanent-id",
)


def is_pull(cluster: Mapping[str, Any] | None) -> bool:
    """The Cluster is in Pull mode (its agent applies its Works; the control plane does not reach it)."""
    return b.spec(cluster).get("syncMode") == PULL


def binding_id_labels(work: Mapping[str, Any]) -> tuple[str, ...]:
    """The binding permanent-id labels the Work carries: what handing it to the agent removes."""
    labels = b.metadata(work).get("labels")
    return tuple(label for label in BINDING_ID_LABELS if isinstance(labels, dict) and label in labels)


def handed_to_agent(work: Mapping[str, Any], execution_finalizer: str) -> bool:
    """The Work is being deleted, still held by the execution controller's finalizer, and no longer counted as the
    binding's: it waits for the cluster's agent to delete its copy."""
    meta = b.metadata(work)
    finalizers = meta.get("finalizers")
    return (
        meta.get("deletionTimestamp") is not None
        and isinstance(finalizers, list)
        and execution_finalizer in finalizers
        and not binding_id_labels(work)
    )
