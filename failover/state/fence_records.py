"""The storage fence's records: what the control plane writes to the checkpoint storage before it releases an old copy,
what a member relay writes back once that copy is suspended, and the member side's decisions on them.

A partitioned member still reaches the checkpoint storage, so the storage is the witness both sides share
(docs/design.md, "The storage fence"). Below the checkpoint root, per member cluster:

    .failover-relay/fences/<cluster>/<fence id>.json      the fence record (control plane)
    .failover-relay/fences/<cluster>/<fence id>.ack.json  its acknowledgement (member relay)

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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from failover.core.annotations import format_time, parse_time
from failover.core.api import EXECUTION_NAMESPACE_PREFIX
from failover.core.names import is_dns_label, is_dns_subdomain

FENCES_DIR = ".failover-relay/fences"
RECORD_SUFFIX = ".json"
ACK_SUFFIX = ".ack.json"
FORMAT_VERSION = 1
# A record names a handful of objects: a few hundred bytes. Anything much larger is not ours.
MAX_RECORD_BYTES = 16 * 1024
MAX_COPIES = 16
PERMANENT_ID_LABEL = "work.karmada.io/permanent-id"  # pkg/apis/work/v1alpha2/well_known_constants.go
WORK_NAME_ANNOTATION = "work.karmada.io/name"
WORK_NAMESPACE_ANNOTATION = "work.karmada.io/namespace"
SUSPENDED = "suspended"  # spec.job.state: the Flink operator stops the job, with a savepoint where upgradeMode allows
OPERATOR_SUSPENDED = "SUSPENDED"  # status.lifecycleState once the operator has stopped it (operator 1.16 CRD)
# The Flink operator resources whose spec.job.state suspends a job (operator 1.16 CRDs).
SUSPENDABLE = frozenset({("flink.apache.org", "FlinkDeployment"), ("flink.apache.org", "FlinkSessionJob")})
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


class RecordRefused(ValueError):
    """A file under the fences directory that is not a record of ours; the message says why, in one line."""


@dataclass(frozen=True)
class CopyRef:
    """One object the fenced Work applied on its member cluster."""

    api_version: str
    kind: str
    namespace: str
    name: str

    def as_record(self) -> dict[str, str]:
        return {"apiVersion": self.api_version, "kind": self.kind, "namespace": self.namespace, "name": self.name}

    @property
    def suspendable(self) -> bool:
        return (self.api_version.partition("/")[0], self.kind) in SUSPENDABLE


@dataclass(frozen=True)
class FenceRecord:
    """The control plane's word that the copies of `work` on `cluster` are being replaced elsewhere."""

    fence_id: str  # the old Work's permanent id
    cluster: str
    work: str  # the Work's name; its namespace is karmada-es-<cluster>
    binding: str  # "<kind> <namespace/name>", for people reading the storage
    copies: tuple[CopyRef, ...]
    written_at: datetime


@dataclass(frozen=True)
class AckedCopy:
    copy: CopyRef
    state: str  # "suspended" (the operator reported it stopped) or "absent" (no copy of the fenced Work there)
    uid: str = ""


@dataclass(frozen=True)
class FenceAck:
    """The member relay's word that no copy named by the record runs on its cluster any more."""

    fence_id: str
    cluster: str
    copies: tuple[AckedCopy, ...]
    acknowledged_at: datetime
    savepoint: str | None = None  # where the suspension's savepoint went, when the operator reported one


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
            "copies": [copy.as_record() for copy in record.copies],
            "writtenAt": format_time(record.written_at),
        }
    )


def encode_ack(ack: FenceAck) -> bytes:
    return _encode(
        {
            "version": FORMAT_VERSION,
            "fenceId": ack.fence_id,
            "cluster": ack.cluster,
            "copies": [{**acked.copy.as_record(), "state": acked.state, "uid": acked.uid} for acked in ack.copies],
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
    return FenceRecord(fence_id, cluster, work, binding, _copies(document["copies"]), written_at)


def parse_ack(data: bytes, cluster: str, fence_id: str) -> FenceAck:
    """The acknowledgement stored as `<cluster>/<fence_id>.ack.json`."""
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
        if state not in (SUSPENDED, "absent") or not isinstance(uid, str) or len(uid) > 64:
            raise RecordRefused("an acknowledged copy's state must be suspended or absent, its uid a short string")
        acked.append(AckedCopy(_copy({k: entry[k] for k in ("apiVersion", "kind", "namespace", "name")}), state, uid))
    return FenceAck(fence_id, cluster, tuple(acked), acked_at, savepoint)


def _encode(document: Mapping[str, Any]) -> bytes:
    return json.dumps(document, separators=(",", ":"), sort_keys=True).encode()


def _document(data: bytes, cluster: str, fence_id: str, keys: tuple[str, ...]) -> dict[str, Any]:
    if len(data) > MAX_RECORD_BYTES:
        raise RecordRefused(f"larger than {MAX_RECORD_BYTES} bytes")
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise RecordRefused("not UTF-8 JSON") from None
    if not isinstance(document, dict) or set(document) != set(keys):
        raise RecordRefused(f"must be an object with exactly {', '.join(keys)}")
    if document["version"] != FORMAT_VERSION:
        raise RecordRefused(f"version must be {FORMAT_VERSION}")
    if document["fenceId"] != fence_id or document["cluster"] != cluster:
        raise RecordRefused("fenceId or cluster differs from the file's path")
    return document


def _copies(raw: Any) -> tuple[CopyRef, ...]:
    if not isinstance(raw, list) or not raw or len(raw) > MAX_COPIES:
        raise RecordRefused(f"copies must be a list of 1 to {MAX_COPIES}")
    return tuple(_copy(entry) for entry in raw)


def _copy(entry: Any) -> CopyRef:
    if not isinstance(entry, dict) or set(entry) != {"apiVersion", "kind", "namespace", "name"}:
        raise RecordRefused("a copy must be an object with exactly apiVersion, kind, namespace, name")
    api_version, kind, namespace, name = (entry[k] for k in ("apiVersion", "kind", "namespace", "name"))
    if not all(isinstance(v, str) and 0 < len(v) <= 253 for v in (api_version, kind)):
        raise RecordRefused("a copy's apiVersion and kind must be short strings")
    if not is_dns_subdomain(name) or not (namespace == "" or is_dns_label(namespace)):
        raise RecordRefused("a copy's name or namespace is not a Kubernetes name")
    return CopyRef(api_version, kind, namespace, name)


# The member side: which copies a record names, what the member relay does about them, what its webhook keeps.


def names_copy(record: FenceRecord, member_object: Mapping[str, Any]) -> bool:
    """`member_object` is a copy the fenced Work put on this cluster: one of the record's objects, applied by that
    very Work (its permanent id and name, stamped by the execution controller). A copy the workload is back on
    carries a new Work's permanent id and is never named."""
    metadata = member_object.get("metadata") if isinstance(member_object, Mapping) else None
    if not isinstance(metadata, Mapping):
        return False
    api_version = member_object.get("apiVersion")
    ref = CopyRef(
        str(api_version),
        str(member_object.get("kind")),
        str(metadata.get("namespace") or ""),
        str(metadata.get("name")),
    )
    labels, notes = metadata.get("labels"), metadata.get("annotations")
    labels = labels if isinstance(labels, Mapping) else {}
    notes = notes if isinstance(notes, Mapping) else {}
    return (
        ref in record.copies
        and labels.get(PERMANENT_ID_LABEL) == record.fence_id
        and notes.get(WORK_NAME_ANNOTATION) == record.work
        and notes.get(WORK_NAMESPACE_ANNOTATION) == f"{EXECUTION_NAMESPACE_PREFIX}{record.cluster}"
    )


def job_state(member_object: Mapping[str, Any]) -> str | None:
    spec = member_object.get("spec")
    job = spec.get("job") if isinstance(spec, Mapping) else None
    if not isinstance(job, Mapping):
        return None
    state = job.get("state")
    return state if isinstance(state, str) else "running"  # the operator's default


def operator_suspended(member_object: Mapping[str, Any]) -> bool:
    """The Flink operator reports the job stopped by the suspension (`status.lifecycleState` SUSPENDED)."""
    status = member_object.get("status")
    return isinstance(status, Mapping) and status.get("lifecycleState") == OPERATOR_SUSPENDED


def suspension_savepoint(member_object: Mapping[str, Any]) -> str | None:
    """Where the operator put the savepoint the suspension took: `jobStatus.upgradeSavepointPath`, else the last
    savepoint's location (operator 1.16 CRD fields)."""
    status = member_object.get("status")
    job = status.get("jobStatus") if isinstance(status, Mapping) else None
    if not isinstance(job, Mapping):
        return None
    path = job.get("upgradeSavepointPath")
    if isinstance(path, str) and path:
        return path
    info = job.get("savepointInfo")
    last = info.get("lastSavepoint") if isinstance(info, Mapping) else None
    location = last.get("location") if isinstance(last, Mapping) else None
    return location if isinstance(location, str) and location else None


@dataclass(frozen=True)
class MemberFenceDecision:
    """What a member relay does about one record: suspend these copies, or write this acknowledgement, or wait for
    the operator (neither)."""

    suspend: tuple[CopyRef, ...] = ()
    acknowledge: FenceAck | None = None
    waiting_for_operator: tuple[CopyRef, ...] = ()


def decide_member_fence(
    record: FenceRecord,
    copies: Mapping[CopyRef, Mapping[str, Any] | None],
    acknowledged: bool,
    now: datetime,
) -> MemberFenceDecision:
    """One record against the member's objects (`copies`: each of the record's copies as read from the member, None
    when absent). Acknowledged once: with an acknowledgement stored, no second one is written, but a named copy found
    running again (drift correction while the webhook was not called) is suspended again. A copy not named by the
    record (another Work's) is not touched and counts as absent. A record naming an object no suspension can stop
    (not a Flink job) is never acknowledged: the timer fences it."""
    if acknowledged:
        again = tuple(
            ref
            for ref in record.copies
            if ref.suspendable
            and (obj := copies.get(ref)) is not None
            and names_copy(record, obj)
            and job_state(obj) not in (None, SUSPENDED)
        )
        return MemberFenceDecision(suspend=again)
    suspend, waiting, acked = [], [], []
    savepoint = None
    for ref in record.copies:
        obj = copies.get(ref)
        if not ref.suspendable:
            waiting.append(ref)
            continue
        if obj is None or not names_copy(record, obj):
            acked.append(AckedCopy(ref, "absent"))
            continue
        uid = str((obj.get("metadata") or {}).get("uid") or "")
        if job_state(obj) is None:
            waiting.append(ref)  # nothing here can stop it: the control plane's timer decides
        elif job_state(obj) != SUSPENDED:
            suspend.append(ref)
        elif not operator_suspended(obj):
            waiting.append(ref)
        else:
            acked.append(AckedCopy(ref, SUSPENDED, uid[:64]))
            savepoint = savepoint or suspension_savepoint(obj)
    if suspend or waiting:
        return MemberFenceDecision(suspend=tuple(suspend), waiting_for_operator=tuple(waiting))
    return MemberFenceDecision(acknowledge=FenceAck(record.fence_id, record.cluster, tuple(acked), now, savepoint))


def suspension_patch(member_object: Mapping[str, Any], records: Iterable[FenceRecord]) -> list[dict[str, Any]]:
    """The JSONPatch the member's `/mutate` applies so a fenced copy stays suspended through Karmada's drift
    correction (the execution controller re-applies the Work's manifest once the member is reachable, karmada#7552;
    in Pull mode the agent does): `spec.job.state: suspended` on a copy a record names, nothing on any other."""
    state = job_state(member_object)
    if state is None or state == SUSPENDED or not any(names_copy(record, member_object) for record in records):
        return []
    spec_job = member_object["spec"]["job"]
    return [{"op": "replace" if "state" in spec_job else "add", "path": "/spec/job/state", "value": SUSPENDED}]
