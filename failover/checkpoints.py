"""Finding the checkpoint a migrated Flink job restarts from, over any fsspec filesystem.

Flink writes a checkpoint into `<checkpoint dir>/<jobId>/chk-<n>/` and writes `chk-<n>/_metadata` last, so a
`chk-<n>` without `_metadata` is in progress or broken and cannot be restored (Flink docs, FLINK-8531/10930; reference
section 6). The newest completed checkpoint is the `chk-<n>` with the highest n that holds `_metadata`.

Where the job's checkpoint directory lives is a layout template over `{root}`, `{namespace}` and `{job_id}`:
`{root}/{namespace}/{job_id}/checkpoints` (the layout Karmada's documentation describes) or Flink's native
`{root}/{job_id}` (with `{root}` = `state.checkpoints.dir`). Savepoint layouts are searched only when no layout holds
a completed checkpoint; there the newest `savepoint-*` directory holding `_metadata` wins.

Safety: a path is only ever built from a configured template, a checked `JobId`, a namespace that is a DNS label and
directory names that match `chk-<digits>` / `savepoint-…` exactly; symbolic links are not followed. So nothing outside
the configured root is read, whatever a label says.

Everything here blocks on storage; the webhook runs it in a thread under a deadline (webhook/mutators.py).
"""

from __future__ import annotations

import re
import string
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any, Mapping, Protocol, Sequence

from failover.jobid import JobId

DEFAULT_LAYOUT = "{root}/{namespace}/{job_id}/checkpoints"
FLINK_NATIVE_LAYOUT = "{root}/{job_id}"
METADATA_FILE = "_metadata"
LAYOUT_FIELDS = frozenset({"root", "namespace", "job_id"})

_CHECKPOINT_DIR = re.compile(r"chk-([0-9]{1,18})\Z")
# Flink names savepoints `savepoint-<first 6 hex of the job id>-<12 random hex>`; accept any such-shaped name.
_SAVEPOINT_DIR = re.compile(r"savepoint-[0-9a-z]+(-[0-9a-z]+)*\Z")
_NAMESPACE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z")


class LayoutError(ValueError):
    """A layout template cannot be used; the message says which and why."""


class StorageError(Exception):
    """The storage failed (permission, network, missing root); the message is safe to show to the user."""


class Outcome(str, Enum):
    """How a lookup ended; also the `outcome` label of the `savepoint_lookups_total` metric."""

    FOUND = "found"
    NOT_FOUND = "not-found"
    TIMEOUT = "timeout"
    STORAGE_ERROR = "storage-error"
    INVALID_JOB_ID = "invalid-job-id"


@dataclass(frozen=True)
class LookupResult:
    outcome: Outcome
    path: str | None = None  # the URL to restore from (FOUND only), in the spelling of the configured root
    source: str = ""  # "checkpoint" or "savepoint"
    reason: str = ""

    @property
    def found(self) -> bool:
        return self.outcome is Outcome.FOUND


@dataclass(frozen=True)
class Layout:
    """A parsed layout template: `{root}` followed by a suffix over `{namespace}` and `{job_id}`."""

    template: str
    suffix: str

    def relative(self, namespace: str, job_id: JobId) -> str:
        if not isinstance(job_id, JobId):  # a bare string never reaches a path, even from our own code
            raise TypeError("layouts take a checked JobId")
        if "{namespace}" in self.suffix and not (isinstance(namespace, str) and _NAMESPACE.match(namespace)):
            raise LayoutError(f"namespace {str(namespace)[:63]!r} is not a DNS label")
        return self.suffix.format(namespace=namespace, job_id=job_id.value)


def parse_layout(template: Any) -> Layout:
    """Check a layout template: it starts with `{root}`, names `{job_id}`, uses no other field and no `..`."""
    if not isinstance(template, str) or not template:
        raise LayoutError("a layout must be a non-empty string such as " + DEFAULT_LAYOUT)
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as error:
        raise LayoutError(f"layout {template!r}: {error}") from None
    names = [name for _, name, _, _ in parsed if name is not None]
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if name not in LAYOUT_FIELDS:
            raise LayoutError(f"layout {template!r}: unknown field {{{name}}}; use {{root}}, {{namespace}}, {{job_id}}")
        if spec or conversion:
            raise LayoutError(f"layout {template!r}: fields take no format spec or conversion")
    if not template.startswith("{root}") or names.count("root") != 1:
        raise LayoutError(f"layout {template!r} must start with {{root}} and name it once")
    if "job_id" not in names:
        raise LayoutError(f"layout {template!r} must contain {{job_id}}")
    suffix = template[len("{root}"):]
    if suffix and not suffix.startswith("/"):
        raise LayoutError(f"layout {template!r}: put a '/' after {{root}}")
    if any(part in (".", "..") for part in suffix.split("/")):
        raise LayoutError(f"layout {template!r} must not contain '.' or '..' segments")
    return Layout(template=template, suffix=suffix.rstrip("/"))


class FileSystem(Protocol):
    """The part of `fsspec.AbstractFileSystem` the lookup uses."""

    def ls(self, path: str, detail: bool = ..., **kwargs: Any) -> list[Any]: ...

    def info(self, path: str, **kwargs: Any) -> dict[str, Any]: ...


@dataclass(frozen=True)
class CheckpointStore:
    """A filesystem and the configured root, both as the filesystem names it and as the user spelled it."""

    fs: FileSystem
    fs_root: str  # e.g. "bucket/checkpoints" for s3://bucket/checkpoints
    url_root: str  # what results are built from: "s3://bucket/checkpoints", "/mnt/checkpoints", "file:///…"


def open_store(url: str, storage_options: Mapping[str, Any] | None = None) -> CheckpointStore:
    """Open the fsspec filesystem for `url` (a local path, `file://`, `s3://`, any fsspec URL). Does no I/O."""
    from fsspec.core import url_to_fs

    if not isinstance(url, str) or not url.strip():
        raise LayoutError("the checkpoint root must be a path or URL")
    # Listings must not be cached: a checkpoint that completes after one admission must be seen by the next.
    options = {"use_listings_cache": False, **(storage_options or {})}
    try:
        fs, fs_root = url_to_fs(url, **options)
    except (ValueError, ImportError) as error:
        raise LayoutError(f"cannot open checkpoint root {url!r}: {error}") from None
    fs_root = fs_root.rstrip("/") or fs_root
    has_scheme = "://" in url
    # A relative local path is made absolute (Flink resolves the restore path on another machine).
    url_root = url.rstrip("/") if has_scheme or url.startswith("/") else fs_root
    return CheckpointStore(fs=fs, fs_root=fs_root if fs_root != "/" else "", url_root=url_root)


def find_restore_point(store: CheckpointStore, layouts: Sequence[Layout], savepoint_layouts: Sequence[Layout],
                       namespace: str, job_id: JobId) -> LookupResult:
    """The newest completed checkpoint of the job under the first layout that has one, else the newest savepoint."""
    try:
        relatives = [layout.relative(namespace, job_id) for layout in layouts]
        savepoint_relatives = [layout.relative(namespace, job_id) for layout in savepoint_layouts]
    except LayoutError as error:
        return LookupResult(Outcome.NOT_FOUND, reason=str(error))
    try:
        for relative in relatives:
            name = _newest_checkpoint(store.fs, store.fs_root + relative)
            if name:
                return LookupResult(Outcome.FOUND, f"{store.url_root}{relative}/{name}", "checkpoint")
        for relative in savepoint_relatives:
            name = _newest_savepoint(store.fs, store.fs_root + relative)
            if name:
                return LookupResult(Outcome.FOUND, f"{store.url_root}{relative}/{name}", "savepoint")
        if not _exists(store.fs, store.fs_root or "/"):
            raise StorageError(f"checkpoint root does not exist: {store.url_root}")
    except StorageError as error:
        return LookupResult(Outcome.STORAGE_ERROR, reason=str(error))
    searched = f"{store.url_root}{relatives[0]}" if relatives else store.url_root
    return LookupResult(Outcome.NOT_FOUND, reason=f"no completed checkpoint in {searched}")


def _newest_checkpoint(fs: FileSystem, directory: str) -> str | None:
    numbered = []
    for name in _entry_names(fs, directory):
        match = _CHECKPOINT_DIR.match(name)
        if match:
            numbered.append((int(match.group(1)), name))
    for _, name in sorted(numbered, reverse=True):
        if _metadata_time(fs, f"{directory}/{name}") is not None:
            return name
    return None


def _newest_savepoint(fs: FileSystem, directory: str) -> str | None:
    """Savepoint names carry no sequence number: the one whose `_metadata` was written last wins."""
    newest: tuple[float, str] | None = None
    for name in _entry_names(fs, directory):
        if not _SAVEPOINT_DIR.match(name):
            continue
        written = _metadata_time(fs, f"{directory}/{name}")
        if written is not None and (newest is None or (written, name) > newest):
            newest = (written, name)
    return newest[1] if newest else None


def _entry_names(fs: FileSystem, directory: str) -> list[str]:
    """Names in `directory`; none when it does not exist.

    Names only: with details, a local listing stats every entry (100 checkpoints: 100 stats, 6x the cost of the
    lookup); the few candidates are checked one by one instead, newest first.
    """
    try:
        entries = fs.ls(directory, detail=False)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except Exception as error:  # any backend failure: permissions, network, throttling
        raise StorageError(_describe(error, directory)) from None
    names = []
    for entry in entries:
        path = entry.get("name", "") if isinstance(entry, dict) else entry
        name = str(path).rstrip("/").rpartition("/")[2]
        if name:
            names.append(name)
    return names


def _metadata_time(fs: FileSystem, checkpoint: str) -> float | None:
    """When `_metadata` in `checkpoint` was written (0.0 when the store does not say); None when it is not there.

    A checkpoint directory or `_metadata` that is a symbolic link does not count: it could lead out of the root.
    """
    info = _info(fs, f"{checkpoint}/{METADATA_FILE}")
    if info is None or info.get("type") != "file" or info.get("islink"):
        return None
    if "islink" in info:  # a filesystem with links (local): the directory itself must not be one either
        directory = _info(fs, checkpoint)
        if directory is None or directory.get("islink") or directory.get("type") != "directory":
            return None
    written = info.get("mtime", info.get("LastModified"))
    if isinstance(written, datetime):
        return written.timestamp()
    return float(written) if isinstance(written, (int, float)) else 0.0


def _info(fs: FileSystem, path: str) -> dict[str, Any] | None:
    try:
        return fs.info(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except Exception as error:
        raise StorageError(_describe(error, path)) from None


def _exists(fs: FileSystem, path: str) -> bool:
    try:
        fs.info(path)
    except FileNotFoundError:
        return False
    except Exception as error:
        raise StorageError(_describe(error, path)) from None
    return True


def _describe(error: BaseException, path: str) -> str:
    lines = str(error).splitlines()
    detail = getattr(error, "strerror", None) or (lines[0] if lines else "")
    return f"storage error: {type(error).__name__}: {str(detail)[:80]} ({path})"


class LookupCache:
    """Recent lookup results by key, for `ttl` seconds, at most `max_entries` of them (oldest dropped first).

    Only definite answers are kept (found, not found); a timeout or a storage error is retried on the next
    admission. `now` is passed in (monotonic seconds) so tests need no clock.
    """

    def __init__(self, ttl: float, max_entries: int = 4096) -> None:
        self.ttl = ttl
        self.max_entries = max_entries
        self._entries: OrderedDict[Any, tuple[float, LookupResult]] = OrderedDict()

    def get(self, key: Any, now: float) -> LookupResult | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        stored_at, result = entry
        if now - stored_at >= self.ttl:
            del self._entries[key]
            return None
        return result

    def put(self, key: Any, result: LookupResult, now: float) -> None:
        if self.ttl <= 0 or result.outcome not in (Outcome.FOUND, Outcome.NOT_FOUND):
            return
        self._entries.pop(key, None)
        self._entries[key] = (now, result)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
