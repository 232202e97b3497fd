"""The savepoint-injection decision for one admitted object (docs/design.md, "Savepoint injection").

This replaces the Kyverno step of Karmada's stateful failover: a workload recreated in a new cluster after a
failover carries a preserved job-id label; it gets the path of its newest restorable state.

The decision has two pure halves around the storage lookup the caller does in between (`failover/state/restore.py`):
- `plan_lookup` reads the trigger labels, the workload's state configuration and the recorded fallbacks, and says
  what to look up, or that the answer is already known (no label, an invalid job id). On UPDATE it offers the path
  set at creation as `carried`, so a re-sync from the Karmada control plane, whose template never holds it, does
  not strip it (karmada#6926, PR #7478); the lookup keeps it only when it lies inside an allowed root and is
  this job's state (`restore.carried_path_belongs`).
- `injection_verdict` turns the lookup result into a minimal RFC 6902 patch (`add` for absent fields, `replace` for
  present ones, missing parents created once), warnings and audit annotations, or into the configured failure answer
  (fail-open: admit unchanged with a warning; fail-closed: deny with the reason).

For the Flink operator's kinds (apache/flink-kubernetes-operator: `AbstractFlinkResourceReconciler`, `JobSpec`):
- only `initialSavepointPath` is needed: before the first deployment the operator restores from it whatever
  `upgradeMode` says. `upgradeMode` goes from `stateless` to `savepoint` (so the next upgrade keeps the state) only
  when the operator's validator accepts the result for every operator generation (`flink_config.py`).
- `job.state` is never touched: a job suspended through Karmada stays suspended, and a resource created
  `suspended` restores from the path when it is set `running` later.
- A path that arrives late, on an UPDATE of a resource the operator has already deployed, is ignored by the
  operator (`initialSavepointPath` is `@SpecDiff(IGNORE)`). With `late_restore` the patch also changes
  `savepointRedeployNonce` (FLINK-33763, operator 1.8), which cancels the running job *statelessly* and starts it
  from the path; without it the object is admitted with the path and a warning saying it will not be used.

Applying the patch and judging the result again yields no patch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from failover.core.fields import is_int, object_name
from failover.core.labels import escape_json_pointer
from failover.core.verdict import ALLOWED, Finding, Verdict
from failover.state.checkpoints import LookupResult, Outcome
from failover.state.empty_start import PARKED_MARKER, START_WITHOUT_STATE_ANNOTATION
from failover.state.flink_config import (
    claim_mode_hazards,
    is_state_path,
    read_state_config,
    stateless_restart_reasons,
    upgrade_mode_for_restore,
    validate_redeploy,
)
from failover.state.jobid import JobId, job_id_problem
from failover.state.profiles import InjectionProfile
from failover.state.restore import RestoreQuery


class FailureMode(StrEnum):
    """What a savepoint lookup that finds nothing usable (or fails) does to the admission."""

    OPEN = "open"  # admit unchanged, with a warning
    CLOSED = "closed"  # deny


FAIL_OPEN, FAIL_CLOSED = FailureMode.OPEN, FailureMode.CLOSED
# Open: a lookup that finds nothing usable admits the object unchanged, with a warning, so the job keeps running;
# closed suits jobs whose state matters more than their uptime (docs/operations.md).
DEFAULT_FAILURE_MODE = FAIL_OPEN
# The mutating webhook is registered with timeoutSeconds 5; 2 s leaves room for TLS, queueing and the reply.
LOOKUP_DEADLINE_SECONDS = 2.0
# Admissions of the same job within this share one lookup (a Work and its FlinkDeployment, retries).
LOOKUP_CACHE_TTL_SECONDS = 10.0

# Audit annotation keys; the apiserver prefixes them with the webhook's name.
AUDIT_OUTCOME = "savepoint-outcome"
AUDIT_PATH = "savepoint-path"
AUDIT_REASON = "savepoint-reason"
AUDIT_FALLBACK = "savepoint-fallback"
AUDIT_JOB_ID = "savepoint-job-id"
# Audit annotations are stored with every audit event of the request: keep them short.
MAX_AUDIT_VALUE = 512
CARRIED_FORWARD = "previous-admission"

# Recorded by the relay (the reconcile loop or the Work mutator) on the workload, for the fallbacks of
# failover/state/restore.py: the earlier job ids of the same workload, newest first, comma-separated; and the failed
# run's `status.jobStatus.upgradeSavepointPath`, which is a path, not a valid label value.
PREVIOUS_JOB_IDS_ANNOTATION = "failover-relay.io/previous-job-ids"
UPGRADE_SAVEPOINT_PATH_ANNOTATION = "failover-relay.io/upgrade-savepoint-path"
REDEPLOY_NONCE = "savepointRedeployNonce"


@dataclass(frozen=True)
class LookupPlan:
    """What the caller must do: look up `query` (keeping `carried` when it still belongs to the job), or use
    `result` directly, or nothing at all when `skip`. `warnings` go into the verdict whatever the lookup finds."""

    skip: bool = False
    query: RestoreQuery | None = None
    carried: str | None = None
    result: LookupResult | None = None
    warnings: tuple[str, ...] = ()


SKIP = LookupPlan(skip=True)


def plan_lookup(
    profile: InjectionProfile,
    obj: Mapping[str, Any],
    operation: str,
    old_object: Mapping[str, Any] | None = None,
    namespace: str = "",
) -> LookupPlan:
    """Read the trigger labels of `obj`; never puts a JobId that is not a checked Flink JobID into the query."""
    labels = _labels(obj)
    present = [(label, labels[label]) for label in profile.labels if label in labels]
    if not present:
        return SKIP
    job_ids: list[JobId] = []
    problems = []
    for label, value in present:
        problem = job_id_problem(value)
        if problem:
            problems.append(f"{label}: {problem}" if len(present) > 1 else problem)
        elif JobId(value) not in job_ids:
            job_ids.append(JobId(value))
    # One read of flinkConfiguration serves the warnings and the query.
    state = read_state_config(_get(obj, profile.flink.configuration)) if profile.flink else None
    reasons = stateless_restart_reasons(state) if state else ()
    warnings = tuple(f"restart will be stateless: {reason}" for reason in reasons)
    warnings += tuple(f"restore is unsafe: {hazard}" for hazard in (claim_mode_hazards(state) if state else ()))
    if not job_ids:
        return LookupPlan(result=LookupResult(Outcome.INVALID_JOB_ID, reason=problems[0]), warnings=warnings)
    query = RestoreQuery(
        namespace=namespace or _namespace(obj),
        job_ids=tuple(job_ids),
        previous_job_ids=_previous_job_ids(obj),
        checkpoint_dir=state.checkpoint_dir if state else None,
        savepoint_dir=state.savepoint_dir if state else None,
        per_job_checkpoints=not (state and state.checkpoint_dir and not state.create_subdir),
        upgrade_savepoint_path=_upgrade_savepoint_path(obj),
    )
    carried = None
    if operation == "UPDATE" and old_object is not None:
        old_ids = [_labels(old_object).get(label) for label in profile.labels]
        if job_ids[0].value in old_ids:
            carried = _path_of(profile, old_object)
    return LookupPlan(query=query, carried=carried, warnings=warnings)


def injection_verdict(
    profile: InjectionProfile,
    obj: Mapping[str, Any],
    result: LookupResult,
    failure_mode: str,
    namespace: str = "",
    *,
    operation: str = "CREATE",
    old_object: Mapping[str, Any] | None = None,
    late_restore: bool = False,
    warnings: tuple[str, ...] = (),
) -> Verdict:
    """The patch that makes `obj` restore from `result.path`, or the configured answer when there is none."""
    if not result.found or not result.path:
        return failure_verdict(profile, obj, result, failure_mode).merged(Verdict(warnings=warnings))
    job_id = result.job_id or _first_label_value(profile, obj)
    assignments = []
    for target in profile.targets:
        value = target.render(result.path, job_id, namespace)
        assignments.append((target.parts, value, target.keep))
    notes = list(warnings)
    if profile.flink is not None:
        assignments, more = _flink_assignments(
            profile, obj, result.path, assignments, operation, old_object, late_restore
        )
        notes.extend(more)
    ops, problems = patch_fields(obj, assignments)
    if problems:
        return Verdict(denials=tuple(problems))
    audit = {AUDIT_OUTCOME: Outcome.FOUND.value if ops else "already-set", AUDIT_PATH: result.path[:MAX_AUDIT_VALUE]}
    if result.fallback:
        audit[AUDIT_FALLBACK] = result.fallback
        notes.append(f"restored via fallback {result.fallback}: the preserved job id had no state")
    if result.job_id:
        audit[AUDIT_JOB_ID] = result.job_id
    return Verdict(patch=tuple(ops), audit=audit, warnings=tuple(notes))


def _flink_assignments(
    profile: InjectionProfile,
    obj: Mapping[str, Any],
    path: str,
    assignments: list[tuple[tuple[str, ...], str, frozenset[str]]],
    operation: str,
    old_object: Mapping[str, Any] | None,
    late_restore: bool,
) -> tuple[list[tuple[tuple[str, ...], Any, frozenset[str]]], list[str]]:
    """`upgradeMode` where valid, and the redeploy nonce for a late path (module docstring)."""
    assert profile.flink is not None
    shape = profile.flink
    job = _get(obj, shape.job)
    job = job if isinstance(job, dict) else {}
    configuration = _get(obj, shape.configuration)
    result: list[tuple[tuple[str, ...], Any, frozenset[str]]] = list(assignments)
    mode = upgrade_mode_for_restore({**job, "initialSavepointPath": path}, configuration)
    if mode is not None:
        result.append(((*shape.job, "upgradeMode"), mode, frozenset()))
    notes: list[str] = []
    late = (
        operation == "UPDATE"
        and old_object is not None
        and not _path_of(profile, old_object)
        and job.get("initialSavepointPath") != path
        and _deployed(obj, shape.last_reconciled_spec)
    )
    if late:
        if late_restore:
            nonce = job.get(REDEPLOY_NONCE)
            next_nonce = nonce + 1 if is_int(nonce) else 1
            new_job = {**job, "initialSavepointPath": path, REDEPLOY_NONCE: next_nonce}
            if validate_redeploy(new_job, job) is None:
                result.append(((*shape.job, REDEPLOY_NONCE), next_nonce, frozenset()))
                notes.append("late restore: redeploying statelessly from the found state")
        else:
            notes.append("late restore path: the operator ignores it on a deployed job (see lateRestore)")
    return result, notes


def injection_off_verdict(profile: InjectionProfile, obj: Mapping[str, Any]) -> Verdict:
    """With no checkpoint root there is nothing to inject: an object that carries the failover job id (a moved copy)
    is admitted unchanged, and says so, since it starts without the state its job id names."""
    job_id = _first_label_value(profile, obj)
    if not job_id:
        return ALLOWED
    return Verdict(
        warnings=(f"no savepoint set: injection is off (no savepoint.checkpointRoot); job {job_id} starts empty",),
        audit={AUDIT_OUTCOME: "injection-off"},
    )


def failure_verdict(
    profile: InjectionProfile, obj: Mapping[str, Any], result: LookupResult, failure_mode: str
) -> Verdict:
    """Fail-open: admitted unchanged with a warning; fail-closed: denied (parked: failover/state/empty_start.py),
    unless the object names a restore path of its own (restored by hand) or accepts the loss of the job's state
    (START_WITHOUT_STATE_ANNOTATION naming its job id). The reason goes to the answer and the audit log."""
    reason = result.reason or result.outcome.value
    audit = {AUDIT_OUTCOME: result.outcome.value, AUDIT_REASON: reason[:MAX_AUDIT_VALUE]}
    name = object_name(obj) or profile.kind
    if failure_mode == FAIL_CLOSED and _path_of(profile, obj):
        return Verdict(warnings=(f"restoring from the object's own path: {reason}",), audit=audit)
    if failure_mode == FAIL_CLOSED and _first_label_value(profile, obj) in _accepted_losses(obj):
        accepted = f"starting without state, as {START_WITHOUT_STATE_ANNOTATION} accepts"
        return Verdict(warnings=(accepted,), audit=audit)
    if failure_mode == FAIL_CLOSED:
        where = profile.path_targets[0].field
        if result.outcome is Outcome.INVALID_JOB_ID:
            where = f"metadata.labels[{profile.label}]"
        elif result.outcome is Outcome.REFUSED_DIRECTORY and profile.flink is not None:
            where = ".".join(profile.flink.configuration)
        return Verdict(denials=(Finding(where, f"{PARKED_MARKER} {name}: {reason}"),), audit=audit)
    # Short prefix: kubectl already names the object, and the reason must survive the 120-character clip.
    return Verdict(warnings=(f"no savepoint set: {reason}",), audit=audit)


def patch_fields(
    obj: Mapping[str, Any], assignments: list[tuple[tuple[str, ...], Any, frozenset[str]]]
) -> tuple[list[dict[str, Any]], list[Finding]]:
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
                _nest(created[prefix], parts[depth + 1 :], value)
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
                _nest(subtree, parts[depth + 1 :], value)
                created[prefix] = subtree
                ops.append(_op("replace" if key in node else "add", prefix, subtree))
                break
            if not isinstance(child, dict):
                problems.append(Finding(".".join(prefix), f"must be an object, got {type(child).__name__}"))
                break
            node = child
    return ops, problems


def _nest(tree: dict[str, Any], parts: tuple[str, ...], value: Any) -> None:
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


def _accepted_losses(obj: Mapping[str, Any]) -> set[str]:
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    value = annotations.get(START_WITHOUT_STATE_ANNOTATION) if isinstance(annotations, dict) else None
    return {part.strip() for part in value.split(",")} - {""} if isinstance(value, str) else set()


def _path_of(profile: InjectionProfile, obj: Mapping[str, Any]) -> str | None:
    for target in profile.path_targets:
        if target.value != "{path}":
            continue
        node = _get(obj, target.parts)
        if isinstance(node, str) and node:
            return node
    return None


def _get(obj: Any, parts: tuple[str, ...]) -> Any:
    node = obj
    for key in parts:
        node = node.get(key) if isinstance(node, dict) else None
    return node


def _deployed(obj: Mapping[str, Any], marker: tuple[str, ...]) -> bool:
    """Whether the operator has deployed the resource once (its last reconciled spec is recorded)."""
    return bool(_get(obj, marker))


def _first_label_value(profile: InjectionProfile, obj: Mapping[str, Any]) -> str:
    labels = _labels(obj)
    return next((str(labels[label]) for label in profile.labels if label in labels), "")


def _namespace(obj: Mapping[str, Any]) -> str:
    namespace = _get(obj, ("metadata", "namespace"))
    return namespace if isinstance(namespace, str) else ""


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    annotations = _get(obj, ("metadata", "annotations"))
    return annotations if isinstance(annotations, dict) else {}


def _previous_job_ids(obj: Mapping[str, Any]) -> tuple[JobId, ...]:
    """The recorded earlier job ids; anything that is not a Flink JobID is dropped, never joined into a path."""
    value = _annotations(obj).get(PREVIOUS_JOB_IDS_ANNOTATION)
    if not isinstance(value, str):
        return ()
    ids: list[JobId] = []
    for part in value.split(",")[:16]:  # a handful of earlier runs is plenty; the list is untrusted
        part = part.strip()
        if job_id_problem(part) is None and JobId(part) not in ids:
            ids.append(JobId(part))
    return tuple(ids)


def claim_mode(profile: InjectionProfile, obj: Mapping[str, Any]) -> str | None:
    """The claim mode the restored job will start in, from its own configuration; None for a kind that is no Flink
    job."""
    return read_state_config(_get(obj, profile.flink.configuration)).claim_mode if profile.flink else None


def _upgrade_savepoint_path(obj: Mapping[str, Any]) -> str | None:
    """The failed run's start path: recorded by the relay, or in the object's own reflected status; never the
    operator's last-state sentinel."""
    for value in (
        _annotations(obj).get(UPGRADE_SAVEPOINT_PATH_ANNOTATION),
        _get(obj, ("status", "jobStatus", "upgradeSavepointPath")),
    ):
        if is_state_path(value):
            return str(value).strip()
    return None
