"""The control plane's side of the storage fence: which fence records a binding needs, and which old Works the
member relay has acknowledged, so `old_copy.decide_fencing` releases them at once instead of after
`fenceAfterSeconds` (docs/design.md, "The storage fence"; the files: failover/fence/fence_files.py).

A record is wanted for exactly the Works the timer fence would release once its time comes: a held Work waiting on a
cluster that is not Ready (failover/fence/waiting.py), with fencing on (and, with `fencing: noExecuteTaint`, a
NoExecute taint). Nothing else ever writes one, so a control-plane outage, which leaves no Directly task and no
cluster marked not Ready behind it, can never suspend a copy: the member side acts on records alone. A Work without a
permanent id (Karmada's Work webhook gives every Work one) gets no record and is fenced by the timer alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from failover.core import binding as b
from failover.core import work as w
from failover.core.loop_settings import DecisionSettings
from failover.core.names import is_dns_label, object_key
from failover.fence.fence_files import FenceAck, FenceRecord, is_fence_id
from failover.fence.waiting import fence_time, held_works

# How often a binding waiting for an acknowledgement reads its cluster's fence directory again: the member relay polls
# as often (`fence.pollSeconds`), so the new copy comes within about two polls of the suspension.
DEFAULT_POLL = timedelta(seconds=2)
# An acknowledgement fences only once the control plane has seen it this long: the old copy was suspended before the
# member wrote it, so its new copy comes at least this long after the suspension, whatever the polls' phase (the
# promise is a margin of at least 2 s between the old copy's suspension and the new copy's creation).
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
    """The fence records this binding needs now (written at `now` if they are not stored yet), by cluster."""
    if not isinstance(binding, dict) or b.is_deleting(binding):
        return ()
    ref = b.object_ref(binding)
    label = f"{ref.kind} {object_key(ref.namespace, ref.name)}"
    records = []
    for held in sorted(held_works(binding, works, clusters), key=lambda held: held.cluster):
        fence_id, copies = w.permanent_id(held.work), w.member_copies(held.work)
        if (
            not held.waits
            or fence_time(held.reach, settings, now) is None
            or not is_dns_label(held.cluster)
            or not is_fence_id(fence_id)
            or not copies
        ):
            continue
        work_name = str(b.metadata(held.work).get("name"))
        records.append(FenceRecord(str(fence_id), held.cluster, work_name, label, copies, now))
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


# A member relay writes its heartbeat at most this often (failover/fence/fence_files.py `Heartbeat`), and is taken as
# gone after three of them missed: a relay restarting or a storage blip does not count.
HEARTBEAT_SECONDS = 30.0
HEARTBEAT_MISSED = 3


def without_relay(clusters: Iterable[str], heartbeats: Mapping[str, Any], now: datetime) -> tuple[str, ...]:
    """The clusters no member relay watches: no heartbeat, or none for three heartbeat periods. Their copies are
    fenced by time only: a partitioned member's copy runs beside the new one from the fence until the partition
    heals."""
    missing = []
    for cluster in sorted(clusters):
        heartbeat = heartbeats.get(cluster)
        period = max(HEARTBEAT_SECONDS, heartbeat.poll_seconds) if heartbeat is not None else HEARTBEAT_SECONDS
        if heartbeat is None or now - heartbeat.seen_at > timedelta(seconds=HEARTBEAT_MISSED * period):
            missing.append(cluster)
    return tuple(missing)


def watched_by_relay(clusters: Iterable[str], heartbeats: Mapping[str, Any], now: datetime) -> frozenset[str]:
    """The clusters a member relay watches now (`without_relay`'s others): where a planned move can hand over."""
    clusters = tuple(clusters)
    return frozenset(clusters) - set(without_relay(clusters, heartbeats, now))


def records_done(
    cluster_records: Mapping[str, tuple[str, str]], released_or_cleaned: Iterable[tuple[str, str]]
) -> tuple[str, ...]:
    """The fence ids whose copies are gone for good (their Work, by (cluster, Work name), was deleted through the
    proxy or its fenced copy cleaned up): their record and acknowledgement can be removed. `cluster_records`: fence
    id → (cluster, Work name) as stored."""
    done = set(released_or_cleaned)
    return tuple(sorted(fence_id for fence_id, key in cluster_records.items() if key in done))
