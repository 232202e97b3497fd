"""The control plane's side of the storage fence: which fence records a binding needs, and which old Works the
member relay has acknowledged, so `fencing.decide_fencing` releases them at once instead of after
`fenceAfterSeconds` (docs/design.md, "The storage fence"; the record format: failover/state/fence_records.py).

A record is wanted for exactly the Works `decide_fencing` would fence once its timer runs out: a Work of a Directly
task's cluster that Karmada is deleting, still held by the execution controller's finalizer, on a cluster that is
not Ready (and, with `fence_needs_no_execute_taint`, NoExecute-tainted), with fencing on. Nothing else ever writes
one, so a control-plane outage, which leaves no Directly task and no cluster marked not Ready behind it, can never
suspend a copy (issue 25 item 3): the member side acts on records alone. A Work without a permanent id (Karmada's
Work webhook gives every Work one) gets no record and is fenced by the timer alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from failover.core import binding as b
from failover.core.api import PurgeMode
from failover.core.names import is_dns_label, object_key
from failover.reconcile.decision import DecisionSettings
from failover.reconcile.fencing import (
    EXECUTION_FINALIZER,
    cluster_reachability,
    member_copies,
    work_cluster,
)
from failover.state.fence_records import PERMANENT_ID_LABEL, CopyRef, FenceAck, FenceRecord, is_fence_id

# How often a binding waiting for an acknowledgement reads its cluster's fence directory again: the member relay polls
# as often (`fence.pollSeconds`), so the new copy comes within about two polls of the suspension.
DEFAULT_POLL = timedelta(seconds=2)
# An acknowledgement fences only once the control plane has seen it this long: the old copy was suspended before the
# member wrote it, so its new copy comes at least this long after the suspension, whatever the polls' phase (issue 25:
# a margin of at least 2 s between the old copy's suspension and the new copy's creation).
ACK_MARGIN = timedelta(seconds=2)


@dataclass(frozen=True)
class StoredFence:
    """What the storage holds for one fence id: whether the record is there, and its valid acknowledgement."""

    record: bool
    ack: FenceAck | None = None


@dataclass(frozen=True)
class StorageFenceDecision:
    """`write`: records to write (each only if still absent); `acknowledged`: (cluster, Work name) pairs that
    `decide_fencing` may fence now; `waiting`: records written and not yet acknowledged (with when they were
    written, for `status`); `requeue_after`: when to read the storage again."""

    write: tuple[FenceRecord, ...] = ()
    acknowledged: frozenset[tuple[str, str]] = frozenset()
    acks: tuple[FenceAck, ...] = ()
    waiting: tuple[FenceRecord, ...] = ()
    requeue_after: timedelta | None = None


def wanted_records(
    binding: Mapping[str, Any],
    works: Iterable[Mapping[str, Any]],
    clusters: Mapping[str, Mapping[str, Any]],
    settings: DecisionSettings,
    now: datetime,
) -> tuple[FenceRecord, ...]:
    """The fence records this binding needs now (written at `now` if they are not stored yet)."""
    if not isinstance(binding, dict) or b.is_deleting(binding) or settings.fence_after is None:
        return ()
    ref = b.object_ref(binding)
    label = f"{ref.kind} {object_key(ref.namespace, ref.name)}"
    records = []
    for cluster in sorted({task["fromCluster"] for task in b.eviction_tasks(binding) if _directly(task)}):
        ready, _, tainted = cluster_reachability(clusters.get(cluster))
        if ready or not is_dns_label(cluster) or (settings.fence_needs_no_execute_taint and not tainted):
            continue
        for work in works:
            meta = b.metadata(work)
            finalizers = meta.get("finalizers")
            labels = meta.get("labels")
            permanent_id = labels.get(PERMANENT_ID_LABEL) if isinstance(labels, dict) else None
            if (
                work_cluster(work) != cluster
                or not meta.get("deletionTimestamp")
                or not isinstance(finalizers, list)
                or EXECUTION_FINALIZER not in finalizers
                or not is_fence_id(permanent_id)
            ):
                continue
            copies = tuple(CopyRef(c.api_version, c.kind, c.namespace, c.name) for c in member_copies(work))
            if copies:
                records.append(FenceRecord(str(permanent_id), cluster, str(meta.get("name")), label, copies, now))
    return tuple(records)


def decide_storage_fence(
    wanted: Iterable[FenceRecord],
    stored: Mapping[tuple[str, str], StoredFence],
    poll: timedelta = DEFAULT_POLL,
    *,
    seen: Mapping[tuple[str, str], datetime] | None = None,
    now: datetime | None = None,
    margin: timedelta = ACK_MARGIN,
) -> StorageFenceDecision:
    """`wanted` (from `wanted_records`) against what the storage holds, by (cluster, fence id). A record is written
    once: one stored already is never rewritten (a restarted relay finds it). An acknowledgement counts only for a
    record that is wanted now, i.e. a Work still held on a not-Ready cluster, and only `margin` after this relay
    first saw it (`seen`, by (cluster, fence id); without `seen` and `now` at once)."""
    write, acknowledged, acks, waiting = [], set(), [], []
    delays: list[timedelta] = []
    for record in wanted:
        key = (record.cluster, record.fence_id)
        held = stored.get(key, StoredFence(False))
        first = (seen or {}).get(key)
        if held.ack is not None and (first is None or now is None or now - first >= margin):
            acknowledged.add((record.cluster, record.work))
            acks.append(held.ack)
        elif held.ack is not None and first is not None and now is not None:
            delays.append(margin - (now - first))
        elif held.record:
            waiting.append(record)
        else:
            write.append(record)
    return StorageFenceDecision(
        write=tuple(write),
        acknowledged=frozenset(acknowledged),
        acks=tuple(acks),
        waiting=tuple(waiting),
        requeue_after=min([*delays, *([poll] if write or waiting else [])], default=None),
    )


def records_done(
    cluster_records: Mapping[str, tuple[str, str]], released_or_cleaned: Iterable[tuple[str, str]]
) -> tuple[str, ...]:
    """The fence ids whose copies are gone for good (their Work, by (cluster, Work name), was deleted through the
    proxy or its fenced copy cleaned up): their record and acknowledgement can be removed. `cluster_records`: fence
    id → (cluster, Work name) as stored."""
    done = set(released_or_cleaned)
    return tuple(sorted(fence_id for fence_id, key in cluster_records.items() if key in done))


def _directly(task: Mapping[str, Any]) -> bool:
    try:
        return PurgeMode(task.get("purgeMode")).is_directly
    except ValueError:
        return False
