"""Writes whose precondition is the fields their decision read, not the whole object's resourceVersion.

A merge patch carrying `metadata.resourceVersion` fails with 409 whenever anything in the binding changed since it
was read: in a storm Karmada writes each binding several times (the taint manager's task with an `Update` of the
whole object, the scheduler's new targets, the status controllers' aggregated status), so most of those 409s were
about fields the decision never looked at (karmada#7483 measured a 99.7 % conflict-retry rate between the taint
manager and graceful eviction). `guarded_patch` turns a decision's merge patch into a JSON patch (RFC 6902) that
first `test`s every field the decision read and every field it writes at the value the decision saw, then makes
the change with `add`/`remove` on the written fields only. It fails (422) only when one of those fields moved;
applied twice, the second fails its tests and the decision, made again on the new object, asks for nothing.

The kube-apiserver applies JSON patches with evanphx/json-patch v4 (`k8s.io/apiserver/pkg/endpoints/handlers/
patch.go`), whose `test` of a missing member with the value null succeeds when the member's parent exists; so a
field that was absent is tested as null at its first missing step. Which fields each decision reads is said here,
next to the decision's inputs (`READS_*`, `fill_reads`, `eviction_reads`);
tests/failover/reconcile/test_preconditions.py checks that a decision does not change when any other field does.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from failover.core import binding as b
from failover.core.api import APPLIED_PLACEMENT_ANNOTATION
from failover.core.jsonpath import JSONPathSyntaxError, parse_template
from failover.fence.fenced_copies import FENCED_ANNOTATION
from failover.reconcile.graceful_eviction import EVICTED_FROM_ANNOTATION
from failover.state.last_state import CLUSTER, LAST_STATE_ANNOTATION, preservation_rules

Path = tuple[str | int, ...]
Operation = dict[str, Any]

_ABSENT = object()

DELETION = ("metadata", "deletionTimestamp")
TASKS = ("spec", "gracefulEvictionTasks")
TARGETS = ("spec", "clusters")
# What `decide_fencing` reads of the binding (failover/fence/old_copy.py): whether it is deleting, its tasks, its
# record of fenced copies and its targets.
READS_FENCING: tuple[Path, ...] = (DELETION, TASKS, ("metadata", "annotations", FENCED_ANNOTATION), TARGETS)


def eviction_reads(binding: Mapping[str, Any]) -> tuple[Path, ...]:
    """What `decide_graceful_eviction` read (failover/reconcile/graceful_eviction.py): whether the binding is
    deleting, its tasks, whether it is scheduled for its generation, its targets, the record of finished evictions,
    and of each target's entry in `status.aggregatedStatus` (tested where it stands) its name and health; a target
    without an entry must still have none."""
    reads: list[Path] = [
        DELETION,
        TASKS,
        ("metadata", "generation"),
        ("status", "schedulerObservedGeneration"),
        TARGETS,
        ("metadata", "annotations", EVICTED_FROM_ANNOTATION),
    ]
    wanted = {target.name for target in b.target_clusters(binding)}
    items = b.status(binding).get("aggregatedStatus")
    for index, item in enumerate(items if isinstance(items, list) else ()):
        if isinstance(item, dict) and item.get("clusterName") in wanted:
            reads += [
                ("status", "aggregatedStatus", index, "clusterName"),
                ("status", "aggregatedStatus", index, "health"),
            ]
            wanted.discard(item["clusterName"])
    if wanted:
        reads.append(("status", "aggregatedStatus"))
    return tuple(reads)


def fill_reads(binding: Mapping[str, Any], filled: Iterable[str]) -> tuple[Path, ...]:
    """What `decide_cluster_failover_state` read to fill the tasks of `filled` clusters: whether the binding is
    deleting, its tasks, the failover rules Karmada copied from the policy, the last healthy reports, and of each
    filled cluster's entry in `status.aggregatedStatus` (tested where it stands) its name and the fields of its
    reflected status the cluster rules read: the loop's cache keeps no others (`controllers/loop/cache.py`
    `binding_cached_form`), and Karmada rewrites the rest as the copy reports."""
    reads: list[Path] = [DELETION, TASKS, ("spec", "failover"), ("metadata", "annotations", LAST_STATE_ANNOTATION)]
    fields = _rule_fields(binding)
    items = b.status(binding).get("aggregatedStatus")
    wanted = set(filled)
    for index, item in enumerate(items if isinstance(items, list) else ()):
        if isinstance(item, dict) and item.get("clusterName") in wanted:
            at = ("status", "aggregatedStatus", index)
            reads.append((*at, "clusterName"))
            reads.extend([(*at, "status")] if fields is None else [(*at, "status", field) for field in fields])
            wanted.discard(item["clusterName"])
    if wanted:  # a filled cluster without a reflected status: it must still have none
        reads.append(("status", "aggregatedStatus"))
    return tuple(reads)


def cluster_eviction_reads(binding: Mapping[str, Any], evicted: Iterable[str]) -> tuple[Path, ...]:
    """What `decide_cluster_evictions` read to evict from `evicted` (failover/reconcile/cluster_eviction.py): its
    targets and the applied placement's tolerations, and for the preserved state what the fill reads
    (`fill_reads`). The Clusters' taints are not the binding's: a taint removed since is the next decision's."""
    return (*fill_reads(binding, evicted), TARGETS, ("metadata", "annotations", APPLIED_PLACEMENT_ANNOTATION))


def _rule_fields(binding: Mapping[str, Any]) -> list[str] | None:
    """The top-level fields of a reflected status the cluster rules read, or None when one may read any."""
    fields: set[str] = set()
    for rule in preservation_rules(binding, CLUSTER):
        try:
            leading = parse_template(rule.json_path).leading_fields()
        except JSONPathSyntaxError:
            continue  # never evaluates to a value
        if leading is None:
            return None
        fields |= leading
    return sorted(fields)


def guarded_patch(obj: Mapping[str, Any], merge_patch: Mapping[str, Any], reads: Iterable[Path]) -> list[Operation]:
    """The JSON patch that applies `merge_patch` (RFC 7386) to `obj` if, and only if, every path of `reads` and
    every path the merge patch writes still holds the value it has in `obj`."""
    changes = list(_operations(obj, merge_patch, ()))
    tested = _outermost([*reads, *(path for path, _ in changes)])
    tests = [_test(obj, path) for path in tested]
    return [*tests, *(operation for _, operation in changes)]


def pointer(path: Sequence[str | int]) -> str:
    """A JSON pointer (RFC 6901): `~` and `/` in a step escaped (annotation keys hold slashes)."""
    return "".join("/" + str(step).replace("~", "~0").replace("/", "~1") for step in path)


def _operations(obj: Any, merge_patch: Mapping[str, Any], at: Path) -> Iterable[tuple[Path, Operation]]:
    """The `add`/`remove` operations of a merge patch on `obj`, each with the path it writes."""
    for key, value in merge_patch.items():
        path = (*at, key)
        current = obj.get(key, _ABSENT) if isinstance(obj, Mapping) else _ABSENT
        if value is None:
            if current is not _ABSENT:
                yield path, {"op": "remove", "path": pointer(path)}
        elif isinstance(value, Mapping) and isinstance(current, Mapping):
            yield from _operations(current, value, path)
        else:
            yield path, {"op": "add", "path": pointer(path), "value": copy.deepcopy(_without_nulls(value))}


def _without_nulls(value: Any) -> Any:
    """A merge patch's new object as it lands: its null members mean "absent" (RFC 7386)."""
    if isinstance(value, Mapping):
        return {key: _without_nulls(item) for key, item in value.items() if item is not None}
    return value


def _outermost(paths: Iterable[Path]) -> list[Path]:
    """The paths, without those inside another (testing the outer one tests them too), in a stable order."""
    unique = list(dict.fromkeys(paths))
    return [path for path in unique if not any(other != path and path[: len(other)] == other for other in unique)]


def _test(obj: Any, path: Path) -> Operation:
    """`test` of `path` at its value in `obj`; an absent path as null at its first missing step."""
    node = obj
    for depth, step in enumerate(path):
        if isinstance(node, Mapping) and step in node:
            node = node[step]
            continue
        if isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
            node = node[step]
            continue
        return {"op": "test", "path": pointer(path[: depth + 1]), "value": None}
    return {"op": "test", "path": pointer(path), "value": copy.deepcopy(node)}
