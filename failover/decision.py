"""What every reconcile decision shares: its settings, the events it asks for, merge patches and API timestamps.

A decision is a plain function of (objects as the Kubernetes API returns them, `DecisionSettings`, `now`) that
returns a frozen result: a JSON merge patch (RFC 7386) to write, the events to record and when to look again. The
controllers apply the patch, record the events and requeue; they decide nothing themselves.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Literal, Mapping

from failover.api import PurgeMode
from failover.names import object_key

NORMAL = "Normal"
WARNING = "Warning"

# Kubernetes truncates event messages at 1024 bytes; eviction task messages have the same limit in the CRD.
MAX_MESSAGE_LENGTH = 1024


@dataclass(frozen=True)
class ObjectRef:
    """Which object an event is about or a patch is for. `namespace` is "" for cluster-scoped objects."""

    kind: str
    name: str
    namespace: str = ""

    def __str__(self) -> str:
        return f"{self.kind} {object_key(self.namespace, self.name)}"


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
    # No ping-pong (failover/failover_budget.py, Karmada #4480, #6233): at most failover_budget application
    # failovers of one workload per window; each failover in the window doubles the least time to the next, from
    # failover_backoff (0: none); an Unhealthy report within restore_grace of the last move does not start the timer
    # (0: none; tolerationSeconds already waits, raise it for jobs that restore large state).
    failover_budget: int = 3
    failover_budget_window: timedelta = timedelta(hours=1)
    failover_backoff: timedelta = timedelta(0)
    restore_grace: timedelta = timedelta(0)
    # Fencing (failover/fencing.py): the old Work of a Directly eviction from a cluster that has not been Ready this
    # long is released so the workload starts elsewhere; None never fences. Karmada marks a cluster NotReady after
    # --cluster-failure-threshold (30 s); one more minute keeps a brief network blip from duplicating the job, and with
    # the taint manager's eviction it brings a dead cluster's workload back within two minutes (docs/operations.md).
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


def format_time(moment: datetime) -> str:
    """RFC 3339 in UTC with second precision, as metav1.Time serializes."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: Any) -> datetime | None:
    """An API timestamp as an aware datetime; None for anything absent or malformed."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def read_json_annotation(raw: Any) -> dict[Any, Any]:
    """The JSON object one of our annotations holds, or {} when it is absent or is not a JSON object (never raises:
    the annotation is ours, but anyone can edit it)."""
    try:
        data = json.loads(raw) if isinstance(raw, str) else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def read_time_annotation(raw: Any) -> dict[str, datetime]:
    """A `{cluster: RFC 3339 time}` annotation as written by `write_time_annotation`; entries that do not read are
    dropped and unreadable content gives {}."""
    times = {}
    for cluster, value in read_json_annotation(raw).items():
        moment = parse_time(value)
        if isinstance(cluster, str) and moment is not None:
            times[cluster] = moment
    return times


def write_time_annotation(times: Mapping[str, datetime]) -> str | None:
    """The annotation value for `times`, sorted and compact; None (delete the annotation) when it is empty."""
    if not times:
        return None
    return json.dumps({cluster: format_time(moment) for cluster, moment in sorted(times.items())},
                      separators=(",", ":"))


def earliest(*delays: timedelta | None) -> timedelta | None:
    """The shortest of the given requeue delays (None ignored), never negative."""
    present = [delay for delay in delays if delay is not None]
    return max(min(present), timedelta(0)) if present else None


def clip_message(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE_LENGTH else text[: MAX_MESSAGE_LENGTH - 1] + "…"
