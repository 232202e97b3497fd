"""The binding's own records, the last good state (`failover.state.last_state`) and the failover history
(`failover.state.history`), written in the same write as the change they record.

An eviction used to be two writes: the eviction task, then, on the binding that write returned, the history move the
new task calls for. Each is a round trip to the apiserver, and a new leader facing a hundred tolerations that ran
out under the old one pays them a hundred times over a few workers (docs/benchmarks.md, "Reconcile loop at scale").
`with_records` computes the records on the binding as the decision's patch will leave it and adds them to that
patch: one write, which lands whole or not at all, so a leader that stops between the decision and the write leaves
neither the task nor its move, and the next leader decides both again, once. The history move is keyed by the task's
`creationTimestamp` (written in the same patch), so deciding again on the written binding asks for nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from failover.state.history import HISTORY_ANNOTATION, decide_history
from failover.state.last_state import decide_last_state


def decide_records(
    binding: Mapping[str, Any], works: Iterable[Mapping[str, Any]], now: datetime
) -> dict[str, Any] | None:
    """The annotation patch of the last good state and the failover history together (None when neither moves).
    `works` are the binding's Works (the history reads the new copy's restore path from them)."""
    if not isinstance(binding, dict):
        return None
    last_state = decide_last_state(binding, now)
    recorded = merged(binding, last_state) if last_state else binding
    return annotation_patch(last_state, decide_history(recorded, works, now))


def with_records(
    binding: Mapping[str, Any], patch: Mapping[str, Any] | None, works: Iterable[Mapping[str, Any]], now: datetime
) -> dict[str, Any] | None:
    """`patch` (a merge patch decided on `binding`, or None) with the records `binding` needs once `patch` is
    applied: what `decide_records` would ask for on the binding that writing `patch` returns."""
    after = merged(binding, patch) if patch else binding
    records = decide_records(after, works, now)
    if not records:
        return dict(patch) if patch else None
    if not patch:
        return records
    metadata = dict(patch.get("metadata") or {})
    metadata["annotations"] = {**(metadata.get("annotations") or {}), **records["metadata"]["annotations"]}
    return {**patch, "metadata": metadata}


def annotation_patch(*patches: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Patches that set only annotations, as one (a None value, which deletes an annotation, is kept); the later
    patch wins on a key both set."""
    annotations = {key: value for patch in patches if patch for key, value in patch["metadata"]["annotations"].items()}
    return {"metadata": {"annotations": annotations}} if annotations else None


def merged(obj: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """`obj` with the JSON merge patch `patch` applied (RFC 7386, as the apiserver applies it): objects merge member
    by member, null removes a member, anything else (lists included) replaces the value."""
    result = dict(obj)
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, Mapping):
            current = result.get(key)
            result[key] = merged(current if isinstance(current, Mapping) else {}, value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def has_history(patch: Mapping[str, Any] | None) -> bool:
    """Whether `patch` writes the failover history (for the `history_recorded` log line)."""
    annotations = ((patch or {}).get("metadata") or {}).get("annotations")
    return isinstance(annotations, Mapping) and HISTORY_ANNOTATION in annotations
