"""Allowed roots: which directory a workload may name for its state, and where that is on the filesystem.

A FlinkDeployment's `flinkConfiguration` is written by the workload's owner, so a checkpoint directory read from it
is untrusted text: it is used only when it lies at or below one of the configured roots (`savepoint.checkpointRoot`),
compared segment by segment after refusing everything that could make a string comparison lie: relative paths, `.`
and `..` segments, empty segments, percent-encoding, queries and fragments, backslashes, control characters,
credentials in the authority (they would be copied into every injected path, audit annotation and log line) and
schemes no root uses. Flink's S3 filesystems are named `s3`, `s3a` and `s3p` (flink-s3-fs-hadoop / -presto) for the
same buckets, so they are one family here; the path handed back keeps the workload's spelling, which its own Flink
can read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from failover.state.checkpoints import CheckpointStore

MAX_URL_LENGTH = 1024  # far above any real bucket path; keeps hostile values out of messages and annotations
_SCHEME = re.compile(r"([a-z][a-z0-9+.-]*)://(.*)\Z", re.DOTALL)
_FORBIDDEN = re.compile(r"[\x00-\x20\x7f\\?#%]")
_SCHEME_FAMILIES = {"s3a": "s3", "s3p": "s3", "s3n": "s3", "gcs": "gs", "file": "", "local": ""}


class DirectoryRefused(ValueError):
    """A state directory named by a workload is not usable; the message says why (safe to show)."""


@dataclass(frozen=True)
class ParsedUrl:
    family: str  # "" for local paths
    authority: str  # bucket or host; "" for local paths
    segments: tuple[str, ...]


@dataclass(frozen=True)
class StateLocation:
    """A directory inside an allowed root: the root's store, the path below it and the URL to hand to Flink."""

    store: CheckpointStore
    relative: str  # "" or "/a/b", appended to `store.fs_root`
    url: str  # the directory as the workload spelled it, without a trailing '/'

    @property
    def fs_path(self) -> str:
        return self.store.fs_root + self.relative


def parse_state_url(url: Any) -> ParsedUrl:
    """Split a state directory URL into scheme family, authority and path segments; raises `DirectoryRefused`."""
    if not isinstance(url, str) or not url.strip():
        raise DirectoryRefused("the state directory must be a non-empty path or URL")
    shown = url if len(url) <= 80 else url[:79] + "…"
    if len(url) > MAX_URL_LENGTH:
        raise DirectoryRefused(f"state directory longer than {MAX_URL_LENGTH} characters: {shown!r}")
    if _FORBIDDEN.search(url):
        raise DirectoryRefused(f"state directory holds whitespace, '\\', '?', '#' or '%': {shown!r}")
    match = _SCHEME.match(url)
    if match:
        scheme, rest = match.groups()
        authority, _, path = rest.partition("/")
        if "@" in authority:
            raise DirectoryRefused(
                f"state directory carries credentials (give them to the storage, not the URL): {_hide_userinfo(url)!r}"
            )
        family = _SCHEME_FAMILIES.get(scheme, scheme)
        if family == "" and authority not in ("", "localhost"):
            raise DirectoryRefused(f"state directory is a file URL that names a host: {shown!r}")
        if family and not authority:
            raise DirectoryRefused(f"state directory names no bucket or host: {shown!r}")
        authority = "" if family == "" else authority
    elif url.startswith("file:/"):  # Flink's own spelling of a local path, file:/mnt/...
        family, authority, path = "", "", url[len("file:") :]
    elif url.startswith("/"):
        family, authority, path = "", "", url
    else:
        raise DirectoryRefused(
            f"state directory is relative or has an unknown scheme (give an absolute path or a "
            f"URL such as s3://bucket/checkpoints): {shown!r}"
        )
    segments = tuple(path.strip("/").split("/")) if path.strip("/") else ()
    if any(segment in ("", ".", "..") for segment in segments):
        raise DirectoryRefused(f"state directory has an empty, '.' or '..' segment: {shown!r}")
    return ParsedUrl(family, authority, segments)


def locate(url: Any, roots: Sequence[CheckpointStore]) -> StateLocation:
    """Where `url` is inside the allowed `roots`; raises `DirectoryRefused` naming the reason."""
    parsed = parse_state_url(url)
    shown = url if len(url) <= 80 else url[:79] + "…"
    families = set()
    for root in roots:
        base = parse_state_url(root.url_root)
        families.add(base.family or "file")
        if (base.family, base.authority) != (parsed.family, parsed.authority):
            continue
        if parsed.segments[: len(base.segments)] != base.segments:
            continue
        below = parsed.segments[len(base.segments) :]
        return StateLocation(root, "".join("/" + segment for segment in below), url.rstrip("/"))
    if (parsed.family or "file") not in families:
        raise DirectoryRefused(
            f"state directory's scheme is not that of any allowed root ({', '.join(sorted(families))}): {shown!r}"
        )
    raise DirectoryRefused(
        f"state directory outside the allowed roots ({', '.join(root.url_root for root in roots)}): {shown!r}"
    )


def _hide_userinfo(url: str) -> str:
    scheme, _, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    return f"{scheme}://***@{authority.rpartition('@')[2]}{slash}{path}"[:80]
