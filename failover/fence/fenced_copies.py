"""The fenced copies a binding remembers (`FENCED_ANNOTATION`): the member objects of old Works the timer fence
released on a cluster that could not be reached, kept until they are deleted there (failover/fence/old_copy.py).

The annotation is JSON, cluster -> [{apiVersion, kind, namespace, name, work}], read strictly: a malformed entry is
left out, never an error.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from failover.core import binding as b
from failover.core.annotations import read_json_annotation
from failover.core.work import MemberCopy

FENCED_ANNOTATION = "failover-relay.io/fenced-copies"


def fenced_copies(binding: Mapping[str, Any]) -> dict[str, list[MemberCopy]]:
    """FENCED_ANNOTATION by cluster; malformed entries are left out."""
    copies: dict[str, list[MemberCopy]] = {}
    for cluster, entries in read_json_annotation(b.annotations(binding).get(FENCED_ANNOTATION)).items():
        for entry in entries if isinstance(cluster, str) and isinstance(entries, list) else ():
            values = [
                entry.get(key) if isinstance(entry, dict) else None
                for key in ("apiVersion", "kind", "namespace", "name", "work")
            ]
            fields = [value for value in values if isinstance(value, str)]
            if len(fields) == len(values) and all(fields[i] for i in (0, 1, 3, 4)):
                copies.setdefault(cluster, []).append(MemberCopy(cluster, *fields))
    return copies


def fenced_patch(copies: Mapping[str, list[MemberCopy]]) -> dict[str, Any]:
    """The merge patch that sets FENCED_ANNOTATION to `copies` (removes it when none is left)."""
    return {"metadata": {"annotations": {FENCED_ANNOTATION: _encode(copies)}}}


def forget_fenced(binding: Mapping[str, Any], done: Iterable[MemberCopy]) -> Mapping[str, Any] | None:
    """The merge patch that drops `done` from FENCED_ANNOTATION; None when none of them is recorded."""
    current = fenced_copies(binding)
    gone = set(done)
    kept = {cluster: [copy for copy in copies if copy not in gone] for cluster, copies in current.items()}
    if kept == current:
        return None
    return fenced_patch(kept)


def _encode(copies: Mapping[str, list[MemberCopy]]) -> str | None:
    kept = {cluster: [copy.as_record() for copy in entries] for cluster, entries in sorted(copies.items()) if entries}
    return json.dumps(kept, separators=(",", ":"), sort_keys=True) if kept else None
