"""The storage fence's files: the record the control plane writes to the checkpoint storage before it releases an old
copy, and the acknowledgement a member relay writes back once that copy is suspended.

A partitioned member still reaches the checkpoint storage, so the storage is the witness both sides share
(docs/design.md, "The storage fence"). Below the checkpoint root, per member cluster:

    .failover-relay/fences/<cluster>/<fence id>.json      the fence record (control plane)
    .failover-relay/fences/<cluster>/<fence id>.ack.json  its acknowledgement (member relay)
    .failover-relay/relays/<cluster>.json                 the member relay's heartbeat: it watches that cluster

The fence id is the old Work's `work.karmada.io/permanent-id` (a UUID Karmada's Work webhook gives every Work,
`pkg/webhook/work/mutating.go`), which the execution controller also stamps on each object the Work applies
(`pkg/util/work.go` `SetLabelsAndAnnotationsForWorkload`). So one Work has at most one record, a restarted relay
writes the same name again, and a copy the workload is back on (a new Work, a new permanent id) never matches an old
record. Records are read strictly: a file whose name, size or content is not exactly one of these is ignored (the
caller logs it once), so a hostile writer to the storage can name neither a path outside the root nor another
cluster's copy.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from failover.core.annotations import format_time, parse_time
from failover.core.names import is_dns_label, is_dns_subdomain
from failover.core.work import MemberCopy

FENCES_DIR = ".failover-relay/fences"
RELAYS_DIR = ".failover-relay/relays"
RECORD_SUFFIX = ".json"
ACK_SUFFIX = ".ack.json"
FORMAT_VERSION = 1
# A record names a handful of objects: a few hundred bytes. Anything much larger is not ours.
MAX_RECORD_BYTES = 16 * 1024
MAX_COPIES = 16
SUSPENDED = "suspended"  # an acknowledged copy's state: the Flink operator reported it stopped (member_relay.py)
ABSENT = "absent"  # an acknowledged copy's state: no copy of the fenced Work on the member
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


class RecordRefused(ValueError):
    """A file under the fences directory that is not a record of ours; the message says why, in one line."""


@dataclass(frozen=True)
class FenceRecord:
    """The control plane's word that the copies of `work` on `cluster` are being replaced elsewhere."""

    fence_id: str  # the old Work's permanent id
    cluster: str
    work: str  # the Work's name; its namespace is karmada-es-<cluster>
    binding: str  # "<kind> <namespace/name>", for people reading the storage
    copies: tuple[MemberCopy, ...]  # each of `cluster` and `work`
    written_at: datetime


@dataclass(frozen=True)
class AckedCopy:
    copy: MemberCopy
    state: str  # SUSPENDED or ABSENT
    uid: str = ""


@dataclass(frozen=True)
class FenceAck:
    """The member relay's word that no copy named by the record runs on its cluster any more."""

    fence_id: str
    cluster: str
    copies: tuple[AckedCopy, ...]
    acknowledged_at: datetime
    savepoint: str | None = None  # where the suspension's savepoint went, when the operator reported one

    def copy_states(self) -> list[str]:
        """Each acknowledged copy as the logs name it: `namespace/name:state`."""
        return [f"{acked.copy.namespace}/{acked.copy.name}:{acked.state}" for acked in self.copies]


def is_fence_id(value: Any) -> bool:
    return isinstance(value, str) and bool(_UUID.match(value))


def cluster_dir(cluster: str) -> str:
    """The cluster's directory below the checkpoint root; only a DNS label names one."""
    if not is_dns_label(cluster):
        raise RecordRefused(f"cluster name {cluster!r} is not a DNS label")
    return f"{FENCES_DIR}/{cluster}"


def record_name(fence_id: str) -> str:
    return f"{fence_id}{RECORD_SUFFIX}"


def ack_name(fence_id: str) -> str:
    return f"{fence_id}{ACK_SUFFIX}"


def parse_file_name(name: str) -> tuple[str, bool]:
    """(fence id, is an acknowledgement) for a file name in a cluster's directory; RecordRefused for anything else."""
    if name.endswith(ACK_SUFFIX):
        fence_id, ack = name[: -len(ACK_SUFFIX)], True
    elif name.endswith(RECORD_SUFFIX):
        fence_id, ack = name[: -len(RECORD_SUFFIX)], False
    else:
        raise RecordRefused("not a fence record or acknowledgement name")
    if not is_fence_id(fence_id):
        raise RecordRefused("the name is not <permanent id>.json or <permanent id>.ack.json")
    return fence_id, ack


def encode_record(record: FenceRecord) -> bytes:
    return _encode(
        {
            "version": FORMAT_VERSION,
            "fenceId": record.fence_id,
            "cluster": record.cluster,
            "work": record.work,
            "binding": record.binding,
            "copies": [copy.object_fields() for copy in record.copies],
            "writtenAt": format_time(record.written_at),
        }
    )


@dataclass(frozen=True)
class Heartbeat:
    """A member relay's word that it watches `cluster`'s records, every `poll_seconds`, as of `seen_at`."""

    cluster: str
    seen_at: datetime
    poll_seconds: float


def heartbeat_name(cluster: str) -> str:
    """The heartbeat's path below the checkpoint root; only a DNS label names one."""
    if not is_dns_label(cluster):
        raise RecordRefused(f"cluster name {cluster!r} is not a DNS label")
    return f"{RELAYS_DIR}/{cluster}{RECORD_SUFFIX}"


def encode_heartbeat(heartbeat: Heartbeat) -> bytes:
    return _encode(
        {
            "version": FORMAT_VERSION,
            "cluster": heartbeat.cluster,
            "seenAt": format_time(heartbeat.seen_at),
            "pollSeconds": heartbeat.poll_seconds,
        }
    )


def parse_heartbeat(data: bytes, cluster: str) -> Heartbeat:
    """The heartbeat stored as `relays/<cluster>.json`; it must name the cluster of its path."""
    document = _json_object(data, ("version", "cluster", "seenAt", "pollSeconds"))
    if document["version"] != FORMAT_VERSION or document["cluster"] != cluster:
        raise RecordRefused("version or cluster differs from the file's path")
    seen_at, poll = parse_time(document["seenAt"]), document["pollSeconds"]
    if seen_at is None or isinstance(poll, bool) or not isinstance(poll, int | float) or not 0 < poll <= 3600:
        raise RecordRefused("seenAt must be an RFC 3339 time and pollSeconds a number of seconds")
    return Heartbeat(cluster, seen_at, float(poll))


def encode_ack(ack: FenceAck) -> bytes:
    return _encode(
        {
            "version": FORMAT_VERSION,
            "fenceId": ack.fence_id,
            "cluster": ack.cluster,
            "copies": [{**acked.copy.object_fields(), "state": acked.state, "uid": acked.uid} for acked in ack.copies],
            "acknowledgedAt": format_time(ack.acknowledged_at),
            "savepoint": ack.savepoint,
        }
    )


def parse_record(data: bytes, cluster: str, fence_id: str) -> FenceRecord:
    """The record stored as `<cluster>/<fence_id>.json`; it must say the same cluster and id as its path."""
    document = _document(
        data, cluster, fence_id, ("version", "fenceId", "cluster", "work", "binding", "copies", "writtenAt")
    )
    work, binding = document["work"], document["binding"]
    if not is_dns_subdomain(work):
        raise RecordRefused("work is not a Kubernetes name")
    if not isinstance(binding, str) or len(binding) > 512:
        raise RecordRefused("binding must be a short string")
    written_at = parse_time(document["writtenAt"])
    if written_at is None:
        raise RecordRefused("writtenAt is not an RFC 3339 time")
    return FenceRecord(fence_id, cluster, work, binding, _copies(document["copies"], cluster, work), written_at)


def parse_ack(data: bytes, cluster: str, fence_id: str, work: str = "") -> FenceAck:
    """The acknowledgement stored as `<cluster>/<fence_id>.ack.json`; `work`: the Work its record names (the
    acknowledgement does not repeat it), "" when that record is not known."""
    document = _document(
        data, cluster, fence_id, ("version", "fenceId", "cluster", "copies", "acknowledgedAt", "savepoint")
    )
    acked_at = parse_time(document["acknowledgedAt"])
    if acked_at is None:
        raise RecordRefused("acknowledgedAt is not an RFC 3339 time")
    savepoint = document["savepoint"]
    if savepoint is not None and (not isinstance(savepoint, str) or not savepoint or len(savepoint) > 1024):
        raise RecordRefused("savepoint must be null or a path")
    raw = document["copies"]
    if not isinstance(raw, list) or len(raw) > MAX_COPIES:
        raise RecordRefused(f"copies must be a list of at most {MAX_COPIES}")
    acked = []
    for entry in raw:
        if not isinstance(entry, dict) or set(entry) != {"apiVersion", "kind", "namespace", "name", "state", "uid"}:
            raise RecordRefused(
                "an acknowledged copy has other fields than apiVersion, kind, namespace, name, state, uid"
            )
        state, uid = entry["state"], entry["uid"]
        if state not in (SUSPENDED, ABSENT) or not isinstance(uid, str) or len(uid) > 64:
            raise RecordRefused("an acknowledged copy's state must be suspended or absent, its uid a short string")
        identity = {k: entry[k] for k in ("apiVersion", "kind", "namespace", "name")}
        acked.append(AckedCopy(_copy(identity, cluster, work), state, uid))
    return FenceAck(fence_id, cluster, tuple(acked), acked_at, savepoint)


def _encode(document: Mapping[str, Any]) -> bytes:
    return json.dumps(document, separators=(",", ":"), sort_keys=True).encode()


def _json_object(data: bytes, keys: tuple[str, ...]) -> dict[str, Any]:
    """A stored file as a JSON object with exactly `keys`, read within MAX_RECORD_BYTES."""
    if len(data) > MAX_RECORD_BYTES:
        raise RecordRefused(f"larger than {MAX_RECORD_BYTES} bytes")
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise RecordRefused("not UTF-8 JSON") from None
    if not isinstance(document, dict) or set(document) != set(keys):
        raise RecordRefused(f"must be an object with exactly {', '.join(keys)}")
    return document


def _document(data: bytes, cluster: str, fence_id: str, keys: tuple[str, ...]) -> dict[str, Any]:
    document = _json_object(data, keys)
    if document["version"] != FORMAT_VERSION:
        raise RecordRefused(f"version must be {FORMAT_VERSION}")
    if document["fenceId"] != fence_id or document["cluster"] != cluster:
        raise RecordRefused("fenceId or cluster differs from the file's path")
    return document


def _copies(raw: Any, cluster: str, work: str) -> tuple[MemberCopy, ...]:
    if not isinstance(raw, list) or not raw or len(raw) > MAX_COPIES:
        raise RecordRefused(f"copies must be a list of 1 to {MAX_COPIES}")
    return tuple(_copy(entry, cluster, work) for entry in raw)


def _copy(entry: Any, cluster: str, work: str) -> MemberCopy:
    if not isinstance(entry, dict) or set(entry) != {"apiVersion", "kind", "namespace", "name"}:
        raise RecordRefused("a copy must be an object with exactly apiVersion, kind, namespace, name")
    api_version, kind, namespace, name = (entry[k] for k in ("apiVersion", "kind", "namespace", "name"))
    if not all(isinstance(v, str) and 0 < len(v) <= 253 for v in (api_version, kind)):
        raise RecordRefused("a copy's apiVersion and kind must be short strings")
    if not is_dns_subdomain(name) or not (namespace == "" or is_dns_label(namespace)):
        raise RecordRefused("a copy's name or namespace is not a Kubernetes name")
    return MemberCopy(cluster, api_version, kind, namespace, name, work)
