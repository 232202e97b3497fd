"""No silent empty start: a moved copy that runs without the state its move carried, or that is parked for the lack of
it, is said so on the binding, in `status`, in an Event on the workload and in a metric, until someone resolves it.

A move that carries state brings copies that are moving in, then restoring (failover/state/restoration.py
`moving_or_restoring`). Each such copy is judged
on what the Flink operator and Karmada report of it in the binding, not on what the relay meant to do: a savepoint
webhook that was not called (relay down, `failurePolicy: Ignore`), that failed open or timed out leaves no trace on
the control plane, but the operator's word does.

- **Empty** (`failureMode: open`, or no webhook at all): the operator deployed the copy
  (`status.reconciliationStatus.lastReconciledSpec`, which Karmada's FlinkDeployment interpreter reflects:
  `resourcecustomizations/flink.apache.org/v1beta1/FlinkDeployment/customizations.yaml`) with no
  `job.initialSavepointPath`: the job started from nothing.
- **Parked** (`failureMode: closed`): the member's apiserver refused the copy with the savepoint webhook's answer
  (`PARKED_MARKER`), which Karmada reports as the copy's `applied: false` and `appliedMessage`. The copy does not
  run; Karmada retries the apply.

Either is recorded in `STARTED_WITHOUT_STATE_ANNOTATION` on the binding,

    {"member2": {"since": "2026-11-28T12:00:00Z", "jobId": "9a27...", "outcome": "empty",
                 "reason": "no completed checkpoint under s3://state/ns/9a27..."}}

and stays until it is resolved (docs/troubleshooting.md, "A job started without its state"):
- restored by hand: the copy is deployed from a path (the template's `initialSavepointPath`, which a closed-mode
  lookup that finds nothing keeps: failover/state/savepoint.py), or redeployed from one (`savepointRedeployNonce`);
- accepted: the workload carries `START_WITHOUT_STATE_ANNOTATION` naming the job id whose state is given up, which also
  lets a parked copy start (the webhook admits it unchanged);
- gone: its cluster is no longer a target of the binding.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from failover.core import binding as b
from failover.core.annotations import format_time, parse_time, read_json_annotation
from failover.core.decision import NORMAL, WARNING, Event, clip_message
from failover.core.names import ObjectRef
from failover.core.work import live_manifests
from failover.state.jobid import job_id_problem
from failover.state.restoration import Restoring, moving_or_restoring

STARTED_WITHOUT_STATE_ANNOTATION = "failover-relay.io/started-without-state"
# On the workload (the resource template, which Karmada copies into each Work): the job id whose state is given up.
START_WITHOUT_STATE_ANNOTATION = "failover-relay.io/start-without-state"
# The savepoint webhook's denial when a closed-mode lookup finds nothing (failover/state/savepoint.py
# `failure_verdict`); Karmada passes it on in the copy's `appliedMessage`.
PARKED_MARKER = "no restore point for"
EVENT_STARTED_WITHOUT_STATE = "StartedWithoutState"
EVENT_PARKED = "RestoreParked"
EVENT_RESOLVED = "StateLossResolved"
NO_PATH = "deployed without a restore path (the member relay's savepoint_lookup log says why)"
# A reason is one sentence of an annotation and an Event; a storage listing can be long.
MAX_REASON = 300
# The operator's serialized spec (a FlinkDeployment's whole spec); beyond this it is not read.
MAX_SPEC_CHARS = 1 << 20


class Outcome(StrEnum):
    EMPTY = "empty"  # running without the state the move carried
    PARKED = "parked"  # refused by the savepoint webhook (failureMode closed): not running


@dataclass(frozen=True)
class StateLoss:
    """A copy on `cluster` that runs without, or is parked for the lack of, the state of job `job_id`."""

    cluster: str
    since: datetime
    job_id: str
    outcome: Outcome
    reason: str

    def as_json(self) -> dict[str, Any]:
        return {
            "since": format_time(self.since),
            "jobId": self.job_id,
            "outcome": self.outcome.value,
            "reason": self.reason,
        }


def state_losses(binding: Mapping[str, Any]) -> dict[str, StateLoss]:
    """STARTED_WITHOUT_STATE_ANNOTATION by cluster; an entry that does not read is left out."""
    found = {}
    for cluster, entry in read_json_annotation(b.annotations(binding).get(STARTED_WITHOUT_STATE_ANNOTATION)).items():
        if not isinstance(cluster, str) or not isinstance(entry, dict):
            continue
        since, job_id, reason = parse_time(entry.get("since")), entry.get("jobId"), entry.get("reason")
        if since is None or job_id_problem(job_id) is not None or not isinstance(reason, str):
            continue
        try:
            outcome = Outcome(str(entry.get("outcome")))
        except ValueError:
            continue
        found[cluster] = StateLoss(cluster, since, str(job_id), outcome, reason[:MAX_REASON])
    return found


def watched_clusters(binding: Mapping[str, Any]) -> set[str]:
    """The clusters whose copy's reflected `reconciliationStatus` the loop reads: moving in, restoring, or with a state
    loss."""
    return set(moving_or_restoring(binding)) | set(state_losses(binding))


def deployed_restore_path(item: Mapping[str, Any] | None) -> str | None:
    """The `job.initialSavepointPath` the operator deployed one copy with ("" for none), from its reflected
    `status.reconciliationStatus.lastReconciledSpec` (`{"spec": {...}, "resource_metadata": {...}}`); None while the
    operator has not deployed it, or when the field does not read."""
    reflected = (item or {}).get("status")
    reconciliation = reflected.get("reconciliationStatus") if isinstance(reflected, dict) else None
    raw = reconciliation.get("lastReconciledSpec") if isinstance(reconciliation, dict) else None
    if not isinstance(raw, str) or not raw or len(raw) > MAX_SPEC_CHARS:
        return None
    try:
        deployed = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    spec = deployed.get("spec") if isinstance(deployed, dict) else None
    job = spec.get("job") if isinstance(spec, dict) else None
    if not isinstance(job, dict):
        return None
    path = job.get("initialSavepointPath")
    return path if isinstance(path, str) else ""


def parked_reason(item: Mapping[str, Any] | None) -> str | None:
    """The savepoint webhook's (or the members' restore guard's) refusal of one copy, as Karmada reports its apply;
    None when it is not refused so. Karmada writes `applied` only when true (`AggregatedStatusItem.Applied`,
    `json:"applied,omitempty"`, pkg/apis/work/v1alpha2/binding_types.go): a refused apply has the message alone."""
    if not isinstance(item, Mapping) or item.get("applied") is True:
        return None
    message = item.get("appliedMessage")
    if not isinstance(message, str) or PARKED_MARKER not in message:
        return None
    return message[message.index(PARKED_MARKER) :][:MAX_REASON]


def carried_job_id(record: Restoring) -> str | None:
    """The Flink job id among the labels a move carried."""
    return next((value for _, value in sorted(record.carried.items()) if job_id_problem(value) is None), None)


def accepted_job_ids(works: Iterable[Mapping[str, Any]], cluster: str) -> set[str]:
    """The job ids whose state the workload gives up (START_WITHOUT_STATE_ANNOTATION on a manifest of the Work for
    `cluster`: the template's annotations as Karmada propagates them)."""
    accepted: set[str] = set()
    for manifest in live_manifests(works, cluster):
        value = b.annotations(manifest).get(START_WITHOUT_STATE_ANNOTATION)
        if isinstance(value, str):
            accepted.update(part.strip() for part in value.split(","))
    return accepted


def newly_empty(binding: Mapping[str, Any]) -> dict[str, str]:
    """By cluster, the job id of each restoring copy that the operator has just been seen deploying without a
    restore path and that is not recorded yet: the caller may look in the storage for why (`decide_state_losses`'s
    `explained`)."""
    health, known = b.aggregated_status(binding), state_losses(binding)
    found = {}
    for cluster, record in moving_or_restoring(binding).items():
        job_id = carried_job_id(record)
        if job_id and cluster not in known and deployed_restore_path(health.get(cluster)) == "":
            found[cluster] = job_id
    return found


@dataclass(frozen=True)
class StateLossDecision:
    """`patch` rewrites STARTED_WITHOUT_STATE_ANNOTATION; `found` are the losses recorded now, `resolved` the
    clusters whose loss ended; `losses` what the binding holds after the patch (for the gauge)."""

    patch: Mapping[str, Any] | None = None
    found: tuple[StateLoss, ...] = ()
    resolved: tuple[str, ...] = ()
    losses: tuple[StateLoss, ...] = ()
    events: tuple[Event, ...] = ()


def decide_state_losses(
    binding: Mapping[str, Any],
    works: Iterable[Mapping[str, Any]],
    explained: Mapping[str, str],
    now: datetime,
) -> StateLossDecision:
    """Record the restoring copies that run without their carried state or are parked, and end the records that are
    resolved (module docstring). `works`: the binding's Works (for the acceptance annotation); `explained`: by
    cluster, why a newly empty copy found no state, as the caller read the storage (else a generic reason)."""
    if not isinstance(binding, dict) or b.is_deleting(binding):
        return StateLossDecision()
    works = list(works)
    raw = b.annotations(binding).get(STARTED_WITHOUT_STATE_ANNOTATION)
    known = state_losses(binding)
    targets = {target.name for target in b.target_clusters(binding)}
    health = b.aggregated_status(binding)
    workload = _workload(binding)
    kept: dict[str, StateLoss] = {}
    found, resolved, events = [], [], []
    for cluster, loss in sorted(known.items()):
        if cluster not in targets:
            continue
        item = health.get(cluster)
        ended = _resolution(loss, item, accepted_job_ids(works, cluster))
        if ended is not None:
            resolved.append(cluster)
            events.append(Event(NORMAL, EVENT_RESOLVED, clip_message(f"the copy on {cluster}: {ended}"), workload))
            continue
        if loss.outcome is Outcome.PARKED and deployed_restore_path(item) == "":
            # Refused, then deployed without a path: the webhook was not called for the retry (failurePolicy Ignore).
            loss = StateLoss(
                cluster,
                now,
                loss.job_id,
                Outcome.EMPTY,
                "deployed without a restore path after it was parked: the savepoint webhook did not answer the retry",
            )
            found.append(loss)
            events.append(_event(loss, workload))
        kept[cluster] = loss
    for cluster, record in sorted(moving_or_restoring(binding).items()):
        job_id = carried_job_id(record)
        if cluster in known or cluster not in targets or job_id is None:
            continue
        if job_id in accepted_job_ids(works, cluster):
            continue
        item = health.get(cluster)
        parked = parked_reason(item)
        if parked is not None:
            loss = StateLoss(cluster, now, job_id, Outcome.PARKED, parked)
        elif deployed_restore_path(item) == "":
            reason = explained.get(cluster) or NO_PATH
            loss = StateLoss(cluster, now, job_id, Outcome.EMPTY, reason[:MAX_REASON])
        else:
            continue
        kept[cluster] = loss
        found.append(loss)
        events.append(_event(loss, workload))
    value = _value(kept.values())
    patch = None if value == raw else {"metadata": {"annotations": {STARTED_WITHOUT_STATE_ANNOTATION: value}}}
    return StateLossDecision(patch, tuple(found), tuple(resolved), tuple(kept.values()), tuple(events))


def _resolution(loss: StateLoss, item: Mapping[str, Any] | None, accepted: set[str]) -> str | None:
    """How a recorded loss ended, or None while it lasts."""
    path = deployed_restore_path(item)
    if path:
        return f"now deployed from {path[:MAX_REASON]} (restored by hand)"
    if loss.job_id in accepted:
        return f"the loss of job {loss.job_id}'s state is accepted ({START_WITHOUT_STATE_ANNOTATION})"
    return None


def _event(loss: StateLoss, workload: ObjectRef | None) -> Event:
    accept = (
        f"restore by hand (spec.job.initialSavepointPath on the template), or accept the loss: kubectl annotate"
        f" {workload.kind.lower() if workload else 'flinkdeployment'} {workload.name if workload else '<name>'}"
        f" {START_WITHOUT_STATE_ANNOTATION}={loss.job_id}"
    )
    if loss.outcome is Outcome.PARKED:
        message = f"the copy on {loss.cluster} is parked, not running: {loss.reason}; {accept}"
        return Event(WARNING, EVENT_PARKED, clip_message(message), workload)
    message = f"the copy on {loss.cluster} started without the state of job {loss.job_id}: {loss.reason}; {accept}"
    return Event(WARNING, EVENT_STARTED_WITHOUT_STATE, clip_message(message), workload)


def _workload(binding: Mapping[str, Any]) -> ObjectRef | None:
    """The resource template, where `kubectl describe` shows its Events (with its uid: kubectl matches on it)."""
    resource = b.spec(binding).get("resource")
    reference = b.workload_reference(binding)
    if reference is None or not isinstance(resource, dict):
        return None
    uid = resource.get("uid")
    return ObjectRef(reference["kind"], reference["name"], reference.get("namespace", ""), str(uid or ""))


def _value(losses: Iterable[StateLoss]) -> str | None:
    entries = {loss.cluster: loss.as_json() for loss in sorted(losses, key=lambda loss: loss.cluster)}
    return json.dumps(entries, separators=(",", ":"), sort_keys=True) if entries else None
