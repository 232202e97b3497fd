"""The storage fence's records in the checkpoint storage: list, read, write and remove them over the checkpoint root's
fsspec filesystem (the formats: failover/fence/fence_files.py; every decision: failover/fence/). Blocking; callers run
it on a thread. Imports no Kubernetes client: the member relay's fence watcher and the control plane share it.

Whatever is found under a cluster's directory that is not exactly a record or an acknowledgement of ours (a foreign
file, a half-written one, a link out of the root) is skipped with one `fence_file_ignored` line per file and reason,
never an error: anyone who can write to the storage could have put it there.
"""

from __future__ import annotations

import asyncio
import contextlib
import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, cast

import structlog

from failover.fence.fence_files import (
    ACK_SUFFIX,
    MAX_RECORD_BYTES,
    RECORD_SUFFIX,
    RELAYS_DIR,
    FenceAck,
    FenceRecord,
    Heartbeat,
    RecordRefused,
    ack_name,
    cluster_dir,
    encode_ack,
    encode_heartbeat,
    encode_record,
    heartbeat_name,
    parse_ack,
    parse_file_name,
    parse_heartbeat,
    parse_record,
    record_name,
)
from failover.state.checkpoints import CheckpointStore

log = structlog.get_logger("failover_relay.fence_store")

T = TypeVar("T")


class FenceStorageError(Exception):
    """A call to the checkpoint storage failed, whatever the fsspec backend raised; `fields` name it in a log line."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.fields = {"error": type(error).__name__, "detail": str(error)[:200]}


async def on_storage(function: Callable[..., T], *args: Any) -> T:
    """`function(*args)` (a `FenceStore` call) on a thread. fsspec backends raise anything (OSError, botocore's,
    aiohttp's, their own), and for each caller any failure means the same: the storage cannot be used now, so it
    comes out as FenceStorageError."""
    try:
        return await asyncio.to_thread(function, *args)
    except Exception as error:
        raise FenceStorageError(error) from error


@dataclass
class ClusterFences:
    """What one cluster's directory holds, by fence id."""

    records: dict[str, FenceRecord] = field(default_factory=dict)
    acks: dict[str, FenceAck] = field(default_factory=dict)
    # Record files present (parsed or not): a record that cannot be parsed is still never written over.
    present: set[str] = field(default_factory=set)


class _FileSystem(Protocol):
    """The part of `fsspec.AbstractFileSystem` the fence records use."""

    def ls(self, path: str, detail: bool = ..., **kwargs: Any) -> list[Any]: ...
    def open(self, path: str, mode: str = ...) -> Any: ...
    def exists(self, path: str) -> bool: ...
    def makedirs(self, path: str, exist_ok: bool = ...) -> None: ...
    def pipe_file(self, path: str, value: bytes) -> None: ...
    def rm_file(self, path: str) -> None: ...


class FenceStore:
    def __init__(self, store: CheckpointStore) -> None:
        self.store = store
        self.fs = cast(_FileSystem, store.fs)
        self._ignored: set[tuple[str, str]] = set()

    def _dir(self, cluster: str) -> str:
        return posixpath.join(self.store.fs_root, cluster_dir(cluster)) if self.store.fs_root else cluster_dir(cluster)

    def read(self, cluster: str) -> ClusterFences:
        """Every record and acknowledgement of `cluster`; an absent directory is an empty one. Storage errors
        propagate (OSError and whatever the fsspec backend raises): the caller decides what a failed read means."""
        directory = self._dir(cluster)
        found = ClusterFences()
        try:
            names = self.fs.ls(directory, detail=False)
        except FileNotFoundError:
            return found
        files = [posixpath.basename(str(path).rstrip("/")) for path in names]
        # Records first: an acknowledgement names its copies as its record does, without repeating their Work.
        for name in sorted(files, key=lambda name: name.endswith(ACK_SUFFIX)):
            try:
                fence_id, is_ack = parse_file_name(name)
                if not is_ack:
                    found.present.add(fence_id)
                data = self._read_bounded(posixpath.join(directory, name))
                if is_ack:
                    record = found.records.get(fence_id)
                    found.acks[fence_id] = parse_ack(data, cluster, fence_id, record.work if record else "")
                else:
                    found.records[fence_id] = parse_record(data, cluster, fence_id)
            except RecordRefused as refused:
                self._ignore(cluster, name, str(refused))
            except FileNotFoundError:
                continue  # removed between the listing and the read
        return found

    def _read_bounded(self, path: str) -> bytes:
        if not self.store.contains(path):
            raise RecordRefused("a link out of the checkpoint root")
        with self.fs.open(path, "rb") as file:
            data: bytes = file.read(MAX_RECORD_BYTES + 1)
        return data

    def _ignore(self, cluster: str, name: str, reason: str) -> None:
        if (f"{cluster}/{name}", reason) not in self._ignored:
            self._ignored.add((f"{cluster}/{name}", reason))
            log.warning("fence_file_ignored", member_cluster=cluster, file=name[:100], reason=reason)

    def write_record(self, record: FenceRecord) -> bool:
        """Write the record unless one with its id is there already; True when written."""
        path = posixpath.join(self._dir(record.cluster), record_name(record.fence_id))
        if self.fs.exists(path):
            return False
        self.fs.makedirs(self._dir(record.cluster), exist_ok=True)
        self.fs.pipe_file(path, encode_record(record))
        return True

    def write_ack(self, ack: FenceAck) -> bool:
        """Write the acknowledgement unless one is there already; True when written."""
        path = posixpath.join(self._dir(ack.cluster), ack_name(ack.fence_id))
        if self.fs.exists(path):
            return False
        self.fs.makedirs(self._dir(ack.cluster), exist_ok=True)
        self.fs.pipe_file(path, encode_ack(ack))
        return True

    def write_heartbeat(self, heartbeat: Heartbeat) -> None:
        """Write (over) the member relay's heartbeat for its cluster."""
        path = self._root_path(heartbeat_name(heartbeat.cluster))
        self.fs.makedirs(posixpath.dirname(path), exist_ok=True)
        self.fs.pipe_file(path, encode_heartbeat(heartbeat))

    def read_heartbeats(self) -> dict[str, Heartbeat]:
        """Every member relay's heartbeat, by cluster; a file that is not one is skipped (logged once)."""
        directory = self._root_path(RELAYS_DIR)
        try:
            names = self.fs.ls(directory, detail=False)
        except FileNotFoundError:
            return {}
        found = {}
        for path in names:
            name = posixpath.basename(str(path).rstrip("/"))
            cluster = name.removesuffix(RECORD_SUFFIX)
            try:
                if not name.endswith(RECORD_SUFFIX):
                    raise RecordRefused("not a heartbeat name")
                heartbeat_name(cluster)  # a DNS label
                found[cluster] = parse_heartbeat(self._read_bounded(posixpath.join(directory, name)), cluster)
            except RecordRefused as refused:
                self._ignore("relays", name, str(refused))
            except FileNotFoundError:
                continue
        return found

    def _root_path(self, relative: str) -> str:
        return posixpath.join(self.store.fs_root, relative) if self.store.fs_root else relative

    def remove(self, cluster: str, fence_id: str) -> None:
        """Remove a record and its acknowledgement (the acknowledgement first: a record without one is still a
        fence, never the other way round)."""
        for name in (ack_name(fence_id), record_name(fence_id)):
            with contextlib.suppress(FileNotFoundError):
                self.fs.rm_file(posixpath.join(self._dir(cluster), name))
