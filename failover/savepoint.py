"""The savepoint-injection decision for one admitted object (DESIGN.md "Preserved state and savepoint injection").

This replaces the Kyverno step of Karmada's stateful failover (reference section 5): a workload recreated in a new
cluster after a failover carries the preserved job-id label; it gets the path of its job's newest completed
checkpoint and the fields that make the operator restore from it.

The decision has two pure halves around the storage lookup the caller does in between:
- `plan_lookup` reads the label and says whether a lookup is needed, or the answer is already known (no label,
  an invalid job id, or on UPDATE the path set at creation, carried forward so a re-sync from the Karmada control
  plane, whose template never holds it, does not strip it: Karmada issue #6926, PR #7478);
- `injection_verdict` turns the lookup result into a minimal RFC 6902 patch (`add` for absent fields, `replace` for
  present ones, missing parents created once), warnings and audit annotations, or into the configured failure answer
  (fail-open: admit unchanged with a warning; fail-closed: deny with the reason).

Applying the patch and judging the result again yields no patch: a field that already holds the wanted value (or,
for upgradeMode, any state-restoring mode) is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from failover.checkpoints import LookupResult, Outcome
from failover.fields import object_name
from failover.jobid import JobId, job_id_problem
from failover.labels import escape_json_pointer
from failover.profiles import InjectionProfile
from failover.verdict import Finding, Verdict, clip

FAIL_OPEN = "open"
FAIL_CLOSED = "closed"

# Audit annotation keys; the apiserver prefixes them with the webhook's name.
AUDIT_OUTCOME = "savepoint-outcome"
AUDIT_PATH = "savepoint-path"
AUDIT_REASON = "savepoint-reason"
# Audit annotations are stored with every audit event of the request: keep them short.
MAX_AUDIT_VALUE = 512
CARRIED_FORWARD = "previous-admission"


@dataclass(frozen=True)
class LookupPlan:
    """What the caller must do: look up `job_id`, or use `result` directly (or nothing at all when `skip`)."""

    skip: bool = False
    job_id: JobId | None = None
    result: LookupResult | None = None


SKIP = LookupPlan(skip=True)


def plan_lookup(profile: InjectionProfile, obj: Mapping[str, Any], operation: str,
                old_object: Mapping[str, Any] | None = None) -> LookupPlan:
    """Read the job-id label of `obj`; never returns a JobId that is not a checked Flink JobID."""
    labels = _labels(obj)
    if profile.label not in labels:
        return SKIP
    value = labels[profile.label]
    problem = job_id_problem(value)
    if problem:
        return LookupPlan(result=LookupResult(Outcome.INVALID_JOB_ID, reason=problem))
    if operation == "UPDATE" and old_object is not None and _labels(old_object).get(profile.label) == value:
        carried = _carried_path(profile, old_object)
        if carried:
            return LookupPlan(result=LookupResult(Outcome.FOUND, carried, CARRIED_FORWARD))
    return LookupPlan(job_id=JobId(value))


def injection_verdict(profile: InjectionProfile, obj: Mapping[str, Any], result: LookupResult, failure_mode: str,
                      namespace: str = "") -> Verdict:
    """The patch that makes `obj` restore from `result.path`, or the configured answer when there is none."""
    if not result.found or not result.path:
        return failure_verdict(profile, obj, result, failure_mode)
    job_id = str(_labels(obj).get(profile.label, ""))
    assignments = []
    for target in profile.targets:
        value = target.render(result.path, job_id, namespace)
        assignments.append((target.parts, value, target.keep))
    ops, problems = patch_fields(obj, assignments)
    if problems:
        return Verdict(denials=tuple(problems))
    audit = {AUDIT_OUTCOME: Outcome.FOUND.value if ops else "already-set", AUDIT_PATH: result.path[:MAX_AUDIT_VALUE]}
    return Verdict(patch=tuple(ops), audit=audit)


def failure_verdict(profile: InjectionProfile, obj: Mapping[str, Any], result: LookupResult,
                    failure_mode: str) -> Verdict:
    """Fail-open: admitted unchanged with a warning; fail-closed: denied. The reason goes to both and the audit log."""
    reason = result.reason or result.outcome.value
    audit = {AUDIT_OUTCOME: result.outcome.value, AUDIT_REASON: reason[:MAX_AUDIT_VALUE]}
    name = object_name(obj) or profile.kind
    if failure_mode == FAIL_CLOSED:
        where = f"metadata.labels[{profile.label}]" if result.outcome is Outcome.INVALID_JOB_ID \
            else profile.path_targets[0].field
        return Verdict(denials=(Finding(where, f"no restore point for {name}: {reason}"),), audit=audit)
    # Short prefix: kubectl already names the object, and the reason must survive the 120-character clip.
    return Verdict(warnings=(clip(f"no savepoint set: {reason}"),), audit=audit)


def patch_fields(obj: Mapping[str, Any],
                 assignments: list[tuple[tuple[str, ...], str, frozenset[str]]]) -> tuple[list[dict[str, Any]],
                                                                                         list[Finding]]:
    """RFC 6902 operations that give each dotted field its value, skipping fields that already hold it (or a `keep`
    value). A missing parent is created once, holding every field below it; a parent of the wrong type is a denial."""
    ops: list[dict[str, Any]] = []
    problems: list[Finding] = []
    created: dict[tuple[str, ...], dict[str, Any]] = {}  # missing ancestor → the value its `add` will carry
    for parts, value, keep in assignments:
        node: Any = obj
        for depth, key in enumerate(parts):
            prefix = parts[: depth + 1]
            if prefix in created:
                _nest(created[prefix], parts[depth + 1:], value)
                break
            if depth == len(parts) - 1:
                if key not in node:
                    ops.append(_op("add", prefix, value))
                # keep holds strings; a hostile list or mapping here is simply replaced.
                elif node[key] != value and not (isinstance(node[key], str) and node[key] in keep):
                    ops.append(_op("replace", prefix, value))
                break
            child = node.get(key)
            if child is None:
                subtree: dict[str, Any] = {}
                _nest(subtree, parts[depth + 1:], value)
                created[prefix] = subtree
                ops.append(_op("replace" if key in node else "add", prefix, subtree))
                break
            if not isinstance(child, dict):
                problems.append(Finding(".".join(prefix), f"must be an object, got {type(child).__name__}"))
                break
            node = child
    return ops, problems


def _nest(tree: dict[str, Any], parts: tuple[str, ...], value: str) -> None:
    for key in parts[:-1]:
        tree = tree.setdefault(key, {})
    tree[parts[-1]] = value


def _op(op: str, parts: tuple[str, ...], value: Any) -> dict[str, Any]:
    # The subtree dicts are still being filled while later assignments nest into them; the op shares them.
    return {"op": op, "path": "/" + "/".join(escape_json_pointer(part) for part in parts), "value": value}


def _labels(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    labels = metadata.get("labels") if isinstance(metadata, dict) else None
    return labels if isinstance(labels, dict) else {}


def _carried_path(profile: InjectionProfile, old_object: Mapping[str, Any]) -> str | None:
    for target in profile.path_targets:
        if target.value != "{path}":
            continue
        node: Any = old_object
        for key in target.parts:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, str) and node:
            return node
    return None
