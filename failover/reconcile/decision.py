"""What every reconcile decision shares: its settings, the events it asks for, merge patches and API timestamps.

A decision is a plain function of (objects as the Kubernetes API returns them, `DecisionSettings`, `now`) that
returns a frozen result: a JSON merge patch (RFC 7386) to write, the events to record and when to look again. The
controllers apply the patch, record the events and requeue; they decide nothing themselves.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final, Literal

from failover.core.api import PurgeMode
from failover.core.names import ObjectRef

# Final, so that mypy reads them as the Literal types `Event.type` takes.
NORMAL: Final = "Normal"
WARNING: Final = "Warning"

# Kubernetes truncates event messages at 1024 bytes; eviction task messages have the same limit in the CRD.
MAX_MESSAGE_LENGTH = 1024


@dataclass(frozen=True)
class BindingPatch:
    """A merge patch for one (Cluster)ResourceBinding, written by a decision about another object."""

    binding: ObjectRef
    patch: Mapping[str, Any]


@dataclass(frozen=True)
class Event:
    """A Kubernetes Event to record. `regarding` None means the object the decision was made for."""

    type: Literal["Normal", "Warning"]
    reason: str
    message: str
    regarding: ObjectRef | None = None


@dataclass(frozen=True)
class DecisionSettings:
    """Knobs of the reconcile decisions; the defaults are Karmada's where Karmada has one."""

    # Spelling of purgeMode in written eviction tasks: "new" (Directly/Gracefully/Never, v1.15+; the only one the
    # v1.19 CRD accepts) or "legacy" (Immediately/Graciously/Never, what the v1.12-v1.14 CRD accepts).
    purge_mode_spelling: Literal["new", "legacy"] = "new"
    # Karmada's --graceful-eviction-timeout default: a task without gracePeriodSeconds ends after this.
    graceful_eviction_timeout: timedelta = timedelta(minutes=10)
    # How long past tolerationSeconds an eviction waits for a statePreservation JSONPath that finds nothing.
    # Karmada waits forever (the eviction itself is blocked: `buildTaskOptions`). One minute covers a status
    # collection round (the work status controller re-syncs within seconds) while bounding the extra downtime.
    state_wait: timedelta = timedelta(minutes=1)
    # Failback is opt-in: globally here, or per policy with the FAILBACK_ANNOTATION.
    failback_enabled: bool = False
    # A recovered cluster must stay Ready and free of NoExecute taints this long before workloads move back;
    # 5 minutes is Karmada's default toleration, so a cluster that flaps within it is not trusted yet.
    failback_settle: timedelta = timedelta(minutes=5)
    # ttlSecondsAfterFinished of the WorkloadRebalancer a failback creates (None keeps it for inspection).
    failback_rebalancer_ttl_seconds: int | None = 3600
    # Failback evictions under way at once, over every workload: each one restarts a job, and a recovered cluster
    # should not take every workload back in the same second.
    failback_max_in_flight: int = 5
    # No ping-pong (failover/reconcile/failover_budget.py, Karmada #4480, #6233): at most failover_budget application
    # failovers of one workload per window; each failover in the window doubles the least time to the next, from
    # failover_backoff (0: none).
    failover_budget: int = 3
    failover_budget_window: timedelta = timedelta(hours=1)
    failover_backoff: timedelta = timedelta(0)
    # A copy a move created is not counted Unhealthy this long while it has not come up (0: none). Sized from what a
    # Flink restore takes, an estimate: the JobManager up within the Flink operator's own patience for a new
    # deployment (`kubernetes.operator.deployment.readiness.timeout`, 1 min by default), then the state read back
    # from the object store (100 GiB at 500 MiB/s is 3.4 min). Five minutes is also Karmada's default
    # tolerationSeconds (failover.core.api.DEFAULT_TOLERATION_SECONDS), what Karmada gives any copy before it counts
    # as failed.
    restore_grace: timedelta = timedelta(minutes=5)
    # Fencing (failover/reconcile/fencing.py): the old Work of a Directly eviction from a cluster that has not been
    # Ready this long is released so the workload starts elsewhere; None never fences. Karmada marks a cluster NotReady
    # after --cluster-failure-threshold (30 s); one more minute keeps a brief network blip from duplicating the job, and
    # with the taint manager's eviction it brings a dead cluster's workload back within two minutes
    # (docs/operations.md).
    fence_after: timedelta | None = timedelta(seconds=60)
    # Fence only a cluster that also carries a NoExecute taint (a ClusterTaintPolicy or an operator put it there).
    fence_needs_no_execute_taint: bool = False
    # A Work still being deleted this long on a Ready cluster is stuck in the execution controller's backoff; a
    # healthy deletion takes well under a second.
    stuck_deletion_after: timedelta = timedelta(seconds=5)
    # How often the old copy on a cluster that is not Ready is tried through Karmada's cluster proxy (one cheap
    # request per cluster: a member that does not answer is remembered that long).
    probe_interval: timedelta = timedelta(seconds=5)
    # When a referenced binding could not be read (other than NotFound), look at the rebalancer again after this.
    rebalancer_retry: timedelta = timedelta(seconds=10)

    def spell(self, mode: PurgeMode) -> str:
        """`mode` in the spelling eviction tasks are written with."""
        return mode.legacy.value if self.purge_mode_spelling == "legacy" else mode.canonical.value


def earliest(*delays: timedelta | None) -> timedelta | None:
    """The shortest of the given requeue delays (None ignored), never negative."""
    present = [delay for delay in delays if delay is not None]
    return max(min(present), timedelta(0)) if present else None


def clip_message(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE_LENGTH else text[: MAX_MESSAGE_LENGTH - 1] + "…"
