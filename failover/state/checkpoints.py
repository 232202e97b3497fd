"""The storage side of a restore: completed checkpoints and savepoints of a Flink job, over any fsspec filesystem.

Flink writes a checkpoint into `<checkpoint dir>/<jobId>/chk-<n>/` (no `<jobId>` level with `create-subdir: false`)
and writes `chk-<n>/_metadata` last, so a `chk-<n>` without `_metadata` is in progress or broken and cannot be
restored (Flink docs, FLINK-8531/10930). A savepoint is `<savepoint dir>/savepoint-<6 hex of the job id>-<12 hex>/`,
also complete once its `_metadata` is written. The time `_metadata` was written is the state's completion time:
it is what `failover/state/restore.py` compares to choose the newest restorable state.

Where a job's checkpoints live below a directory is a layout template over `{root}`, `{namespace}` and `{job_id}`:
Flink's native `{root}/{job_id}` (the default) or `{root}/{namespace}/{job_id}/checkpoints` (the layout Karmada's
documentation illustrates).

Safety: a path is only ever built from a configured template, a checked `JobId`, a namespace that is a DNS label and
directory names that match `chk-<digits>` / `savepoint-<hex>-<hex>` exactly. On a local filesystem every directory
is resolved before it is listed or read: a symbolic link anywhere below the root (namespace, job, `checkpoints`,
`chk-<n>`, `_metadata`) makes it not count, so nothing outside the root is read, whatever a label or a link says.

Everything here blocks on storage; the webhook runs it in a thread under a deadline (webhook/mutators.py).
"""

from __future__ import annotations

import errno
import os
import re
import string
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any, NamedTuple, Protocol

from failover.core.names import is_dns_label
from failover.state.jobid import JobId

KARMADA_EXAMPLE_LAYOUT = "{root}/{namespace}/{job_id}/checkpoints"
FLINK_NATIVE_LAYOUT = "{root}/{job_id}"
DEFAULT_LAYOUT = FLINK_NATIVE_LAYOUT
METADATA_FILE = "_metadata"
LAYOUT_FIELDS = frozenset({"root", "namespace", "job_id"})

_CHECKPOINT_DIR = re.compile(r"chk-([0-9]{1,18})\Z")
# The part after `savepoint-<6 hex>-`: 12 hex digits (Flink `AbstractID` bytes, `StringUtils.byteToHexString`).
_SAVEPOINT_SUFFIX = re.compile(r"[0-9a-f]{12}\Z")


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
    REFUSED_DIRECTORY = "refused-directory"


class Candidate(NamedTuple):
    """A restorable state a lookup compared (the newest of each place it searched)."""

    path: str
    kind: str  # "checkpoint", "savepoint" or "upgrade-savepoint-path"
    written: float  # when its _metadata was written (seconds since the epoch): what the comparison goes by
    job_id: str


@dataclass(frozen=True)
class LookupResult:
    outcome: Outcome
    path: str | None = None  # the URL to restore from (FOUND only), in the spelling of the configured root
    source: str = ""  # "checkpoint", "savepoint", "upgrade-savepoint-path" or "previous-admission"
    reason: str = ""
    job_id: str = ""  # the job whose state it is ("" when not known: a carried or a start path)
    fallback: str = ""  # "" when the preserved job id had the state; else which fallback found it
    # Every state compared, so that `failover-relay inject` can say why `path` won; not part of the result's identity.
    candidates: tuple[Candidate, ...] = field(default=(), compare=False)

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
        if "{namespace}" in self.suffix and not is_dns_label(namespace):
            raise LayoutError(f"namespace {str(namespace)[:63]!r} is not a DNS label")
        return self.suffix.format(namespace=namespace, job_id=job_id.value)


def parse_layout(template: Any, *, savepoints: bool = False) -> Layout:
    """Check a layout template: it starts with `{root}`, names `{job_id}`, uses no other field and no `..`.

    A savepoint layout (`savepoints`) need not name `{job_id}`: Flink writes every job's savepoints side by side as
    `savepoint-<6 hex of the job id>-<12 hex>` with no job-id level (`AbstractFsCheckpointStorageAccess
    .initializeLocationForSavepoint`), so `{root}/savepoints` is where the operator's default configuration puts them
    and the job's own are told apart by the name's prefix (`newest_savepoint`)."""
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
    if "job_id" not in names and not savepoints:
        raise LayoutError(f"layout {template!r} must contain {{job_id}}")
    suffix = template[len("{root}") :]
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
    # The root with every symbolic link resolved, on a filesystem that has links (local); None elsewhere.
    real_root: str | None = None

    def contains(self, path: str) -> bool:
        """Whether `path` (below `fs_root`) stays inside the root once links are resolved: it does when resolving
        changes nothing below the root, i.e. no component under the root is a link."""
        if self.real_root is None:
            return True
        if not path.startswith(self.fs_root):
            return False
        return os.path.realpath(path) == os.path.normpath(self.real_root + path[len(self.fs_root) :])


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
    fs_root = fs_root if fs_root != "/" else ""
    local = "file" in (fs.protocol if isinstance(fs.protocol, (tuple, list)) else (fs.protocol,))
    real_root = os.path.realpath(fs_root or "/").rstrip("/") if local else None
    return CheckpointStore(fs=fs, fs_root=fs_root, url_root=url_root, real_root=real_root)


def newest_checkpoint(store: CheckpointStore, directory: str, per_job: bool = True) -> tuple[str, float] | None:
    """The newest completed `chk-<n>` in `directory` (a filesystem path) and when its `_metadata` was written.

    In a job's own directory the numbers order the checkpoints; in a directory shared by the runs of a workload
    (`create-subdir: false`) each new job id counts from 1 again, so there the time of `_metadata` decides.
    """
    completed = _completed_checkpoints(store, directory)
    if completed is not None:
        if not completed:
            return None
        # In a job's own directory the highest number wins, in a shared one the newest _metadata.
        _, at, chosen = max(completed, key=lambda found: found[:2] if per_job else (found[1], found[2]))
        return chosen, at
    numbered = []
    for name in _entry_names(store, directory):
        match = _CHECKPOINT_DIR.match(name)
        if match:
            numbered.append((int(match.group(1)), name))
    if per_job:
        for _, name in sorted(numbered, reverse=True):
            written = _metadata_time(store, f"{directory}/{name}")
            if written is not None:
                return name, written
        return None
    newest: tuple[float, str] | None = None
    for _, name in numbered:
        written = _metadata_time(store, f"{directory}/{name}")
        if written is not None and (newest is None or (written, name) > newest):
            newest = (written, name)
    return (newest[1], newest[0]) if newest else None


def _completed_checkpoints(store: CheckpointStore, directory: str) -> list[tuple[int, float, str]] | None:
    """On an object store: (number, time of _metadata, name) of every completed `chk-<n>` in `directory`, from one
    listing of the keys starting with `chk-` (`_completed_by_prefix`). Asking for each candidate's `_metadata` costs a
    HEAD, and on s3fs a missing one (the checkpoint in progress, usually the newest) a further LIST (its `info`
    checks for a directory of that name): four requests for one job where one does. None when the store
    is a local one or cannot list this way."""
    if store.real_root is not None or not store.contains(directory):
        return None
    completed = _completed_by_prefix(store, directory, "chk-")
    if completed is None:
        return None
    return [
        (int(match.group(1)), written, name)
        for name, written in completed.items()
        if (match := _CHECKPOINT_DIR.match(name))
    ]


def newest_savepoint(store: CheckpointStore, directory: str, job_id: JobId) -> tuple[str, float] | None:
    """The job's own savepoint in `directory` whose `_metadata` was written last, and when.

    Flink names a savepoint directory `savepoint-<first 6 hex of the job id>-<12 random hex>`
    (`AbstractFsCheckpointStorageAccess.initializeLocationForSavepoint`); savepoints of every job share the directory,
    so only names with this job's prefix count. Names carry no order: the time of `_metadata` decides.
    """
    prefix = f"savepoint-{job_id.value[:6]}-"
    completed = _completed_by_prefix(store, directory, prefix) if store.real_root is None else None
    newest: tuple[float, str] | None = None
    written: float | None
    if completed is not None:
        for name, written in completed.items():
            if _SAVEPOINT_SUFFIX.match(name[len(prefix) :]) and (newest is None or (written, name) > newest):
                newest = (written, name)
        return (newest[1], newest[0]) if newest else None
    for name in _entry_names(store, directory):
        if not (name.startswith(prefix) and _SAVEPOINT_SUFFIX.match(name[len(prefix) :])):
            continue
        written = _metadata_time(store, f"{directory}/{name}")
        if written is not None and (newest is None or (written, name) > newest):
            newest = (written, name)
    return (newest[1], newest[0]) if newest else None


def _completed_by_prefix(store: CheckpointStore, directory: str, prefix: str) -> dict[str, float] | None:
    """On an object store: `{name: time of _metadata}` for the directories under `directory` named `prefix…`, from
    one listing of the keys starting with that prefix (s3fs and gcsfs filter on the server), instead of listing every
    job's savepoints and asking for each `_metadata`; a shared savepoint directory grows with every job. None when
    the store cannot list this way (then the caller lists the directory)."""
    find = getattr(store.fs, "find", None)
    if find is None:
        return None
    try:
        found = find(directory, prefix=prefix, detail=True)
    except (FileNotFoundError, NotADirectoryError):
        return {}
    except TypeError:  # a find without prefix or detail
        return None
    except Exception as error:  # noqa: BLE001  fsspec backends raise anything; each failure becomes a StorageError
        raise StorageError(_describe(error, directory)) from None
    completed: dict[str, float] = {}
    base = directory.rstrip("/") + "/"
    for path, info in found.items() if isinstance(found, dict) else ():
        relative = str(path)[len(base) :] if str(path).startswith(base) else ""
        name, _, rest = relative.partition("/")
        if rest != METADATA_FILE or not name.startswith(prefix) or info.get("type", "file") != "file":
            continue
        written = info.get("mtime", info.get("LastModified"))
        completed[name] = (
            written.timestamp()
            if isinstance(written, datetime)
            else float(written)
            if isinstance(written, (int, float))
            else 0.0
        )
    return completed


def restorable_time(store: CheckpointStore, path: str) -> float | None:
    """When the state at `path` (a checkpoint or savepoint directory, or its `_metadata`) completed; None when it is
    not a complete state inside the root."""
    if path.rstrip("/").endswith("/" + METADATA_FILE):
        path = path.rstrip("/")[: -len(METADATA_FILE) - 1]
    return _metadata_time(store, path)


def root_exists(store: CheckpointStore) -> bool:
    return _exists(store.fs, store.fs_root or "/")


def _entry_names(store: CheckpointStore, directory: str) -> list[str]:
    """Names in `directory`; none when it does not exist or leads out of the root.

    Names only: with details, a local listing stats every entry (100 checkpoints: 100 stats, 6x the cost of the
    lookup); the few candidates are checked one by one instead, newest first.
    """
    if not store.contains(directory):
        return []
    try:
        entries = store.fs.ls(directory, detail=False)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except Exception as error:  # noqa: BLE001  fsspec backends raise anything: permissions, network, throttling
        raise StorageError(_describe(error, directory)) from None
    names = []
    for entry in entries:
        path = entry.get("name", "") if isinstance(entry, dict) else entry
        name = str(path).rstrip("/").rpartition("/")[2]
        if name:
            names.append(name)
    return names


def _metadata_time(store: CheckpointStore, checkpoint: str) -> float | None:
    """When `_metadata` in `checkpoint` was written (0.0 when the store does not say); None when it is not there.

    A `_metadata` reached through a symbolic link anywhere below the root does not count: it could lead out of it.
    """
    metadata = f"{checkpoint}/{METADATA_FILE}"
    info = _info(store.fs, metadata)
    if info is None or info.get("type") != "file" or info.get("islink") or not store.contains(metadata):
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
    except OSError as error:
        if error.errno == errno.ELOOP:  # a symbolic-link loop is one unusable entry, not a failed storage
            return None
        raise StorageError(_describe(error, path)) from None
    except Exception as error:  # noqa: BLE001  fsspec backends raise anything; each failure becomes a StorageError
        raise StorageError(_describe(error, path)) from None


def _exists(fs: FileSystem, path: str) -> bool:
    try:
        fs.info(path)
    except FileNotFoundError:
        return False
    except Exception as error:  # noqa: BLE001  fsspec backends raise anything; each failure becomes a StorageError
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
