"""The readiness conditions of one workload: its policy, Karmada's health interpretation of its kind, its own Flink
configuration, its newest restorable state, the clusters it can go to; and the numbers people plan with: the state a
failure now would lose (RPO) and how long the job would be down (RTO), each with its derivation."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from failover.admission.failover_warnings import NO_HEALTH_INTERPRETATION, stateless_flink_failover
from failover.core import binding as b
from failover.core.api import DEFAULT_TOLERATION_SECONDS, FLINK_DEPLOYMENTS, PurgeMode
from failover.core.cluster import NO_EXECUTE, is_schedulable
from failover.core.loop_settings import DecisionSettings
from failover.core.placement import placement_clusters
from failover.readiness.findings import (
    CLAIM_MODE_DOC,
    DEAD_CLUSTER_DOC,
    FLINK_STATE_DOC,
    NEVER_DOC,
    NO_STATE_DOC,
    PLANNED_MOVES_DOC,
    STATE_LOST_DOC,
    TWO_COPIES_DOC,
    Finding,
    Status,
    ok,
    problem,
    warning,
)
from failover.state.checkpoints import LookupResult
from failover.state.flink_config import (
    STATELESS,
    checkpoint_interval,
    claim_mode_hazards,
    read_state_config,
    stateless_restart_reasons,
)
from failover.state.last_state import preservation_rules

# Karmada's --cluster-failure-threshold default (cmd/controller-manager/app/options/options.go): how long a member
# must fail its health checks before its Ready turns False or Unknown.
KARMADA_CLUSTER_FAILURE_THRESHOLD_SECONDS = 30.0
# A restored job's start, from its JVMs to its first checkpoint, as bench/flink_restore.py measured it: this many
# seconds plus so many per GiB a slot restores (docs/operations.md, "The restore grace": T_flink and G).
RESTORE_SECONDS, RESTORE_SECONDS_PER_GIB = 10, 30
JOB_START = (
    f"then the job's own start from its state (measured: {RESTORE_SECONDS} s + {RESTORE_SECONDS_PER_GIB} s per GiB a "
    'slot restores, docs/operations.md "The restore grace")'
)
# A restorable state older than this many checkpoint intervals means the job is not checkpointing.
STALE_INTERVALS = 3
# ... and never less than this: a checkpoint of a large state may take longer than its interval.
STALE_FLOOR_SECONDS = 120.0


@dataclass(frozen=True)
class WorkloadFacts:
    """What the command read about one workload."""

    binding: Mapping[str, Any]
    # The workload as its member runs it: the manifest in its Work (overrides applied), else the resource template.
    manifest: Mapping[str, Any] | None
    lookup: LookupResult | None  # the restore lookup for a new copy now; None when there was none to make
    lookup_problem: str = ""  # why there is no lookup
    health_customized: Collection[tuple[str, str]] = ()  # (group, kind) a ResourceInterpreterCustomization judges
    clusters: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # every member Cluster, by name
    member_findings: Mapping[str, Finding] = field(default_factory=dict)  # shared_conditions.member_storage_finding


@dataclass(frozen=True)
class WorkloadReport:
    findings: tuple[Finding, ...]
    rpo: dict[str, Any]
    rto: dict[str, Any]


def _group_kind(binding: Mapping[str, Any]) -> tuple[str, str]:
    resource = b.spec(binding).get("resource")
    resource = resource if isinstance(resource, dict) else {}
    return str(resource.get("apiVersion") or "").partition("/")[0], str(resource.get("kind") or "")


def policy_finding(binding: Mapping[str, Any]) -> Finding:
    """The failover the policy gave the binding (Karmada copies it into `spec.failover`) keeps the state on both
    paths: a failing job (application) and a dead cluster (cluster, through the taint manager)."""
    check = "policy"
    application, cluster = b.application_failover(binding), b.cluster_failover(binding)
    if application is None and cluster is None:
        return problem(
            check,
            "the policy has no failover: a dead cluster's copy is evicted by the taint manager with Karmada's "
            "default purge mode and no state",
            STATE_LOST_DOC,
        )
    troubles = []
    for name, section in (("application", application), ("cluster", cluster)):
        if section is None:
            continue
        if not preservation_rules(binding, name):
            troubles.append(f"failover.{name} has no statePreservation: the job restarts without its state")
        elif section.get("purgeMode") not in (PurgeMode.DIRECTLY.value, PurgeMode.IMMEDIATELY.value):
            troubles.append(f"failover.{name}.purgeMode is {section.get('purgeMode')}, not Directly")
        elif _group_kind(binding) == (FLINK_DEPLOYMENTS.group, FLINK_DEPLOYMENTS.kind):
            troubles += stateless_flink_failover(section, f"failover.{name}")
    if cluster is None:
        troubles.append(
            "no failover.cluster: when the cluster dies the taint manager evicts with purgeMode Gracefully and no "
            "state, and a partitioned copy keeps running"
        )
    if troubles:
        return problem(check, "; ".join(troubles), TWO_COPIES_DOC if cluster is None else STATE_LOST_DOC)
    if application is None:
        return warning(
            check, "no failover.application: a failing job stays where it is; only a dead cluster moves it", NEVER_DOC
        )
    return ok(check, "application and cluster failover, Directly, with statePreservation")


def health_finding(binding: Mapping[str, Any], customized: Collection[tuple[str, str]]) -> Finding | None:
    """Application failover acts on Karmada's health of the copy: the kind needs an interpretation. None without
    application failover (nothing depends on it then)."""
    if b.application_failover(binding) is None:
        return None
    group_kind = _group_kind(binding)
    if group_kind in customized:
        return ok("health-interpretation", f"a ResourceInterpreterCustomization interprets {group_kind[1]}'s health")
    if group_kind in NO_HEALTH_INTERPRETATION:
        return problem(
            "health-interpretation",
            f"Karmada has no health interpretation for {group_kind[1]} and no ResourceInterpreterCustomization gives "
            "one (#7843): application failover never starts",
            NEVER_DOC,
        )
    return ok("health-interpretation", f"Karmada interprets {group_kind[1]}'s health")


def flink_state_finding(manifest: Mapping[str, Any] | None) -> Finding | None:
    """The FlinkDeployment's own configuration lets a new copy find its state. None for other kinds (a session job's
    configuration lives on its session cluster)."""
    check = "flink-state"
    if not isinstance(manifest, dict) or manifest.get("kind") != FLINK_DEPLOYMENTS.kind:
        return None
    spec = b.spec(manifest)
    config = spec.get("flinkConfiguration")
    reasons = list(stateless_restart_reasons(read_state_config(config)))
    if checkpoint_interval(config) is None:
        reasons.append("execution.checkpointing.interval is unset: the job takes no checkpoint")
    if reasons:
        return problem(check, "; ".join(reasons), FLINK_STATE_DOC)
    job = spec.get("job")
    job = job if isinstance(job, dict) else {}
    claim = claim_mode_hazards(read_state_config(config))
    if claim:
        return warning(check, "; ".join(claim), CLAIM_MODE_DOC)
    if (job.get("upgradeMode") or STATELESS) == STATELESS:
        return warning(check, "upgradeMode stateless: a planned move cannot hand over by savepoint", PLANNED_MOVES_DOC)
    return ok(check, f"checkpoints every {checkpoint_interval(config):g} s, kept on cancellation")


def _written(lookup: LookupResult) -> float | None:
    return next((candidate.written for candidate in lookup.candidates if candidate.path == lookup.path), None)


def state_finding(
    lookup: LookupResult | None, lookup_problem: str, interval: float | None, now: datetime
) -> tuple[Finding, dict[str, Any]]:
    """The newest restorable state a new copy would start from now, and the RPO it gives."""
    check = "restorable-state"
    rpo: dict[str, Any] = {"checkpointIntervalSeconds": interval}
    if lookup is None:
        return problem(check, f"no restore lookup: {lookup_problem}", NO_STATE_DOC), rpo
    if not lookup.found:
        return (
            problem(
                check,
                f"no restorable state ({lookup.reason or lookup.outcome.value}): a failover now starts the job "
                "from empty",
                NO_STATE_DOC,
            ),
            rpo,
        )
    written = _written(lookup)
    age = None if written is None else max(now.timestamp() - written, 0.0)
    rpo |= {"path": lookup.path, "kind": lookup.source, "stateAgeSeconds": None if age is None else round(age)}
    said = f"{lookup.path} ({lookup.source}" + ("" if age is None else f", written {age:.0f} s ago") + ")"
    if age is not None and interval is not None and age > max(STALE_INTERVALS * interval, STALE_FLOOR_SECONDS):
        rpo["derivation"] = f"a failure now loses the input of the last {age:.0f} s"
        return (
            warning(
                check,
                f"{said} is older than {STALE_INTERVALS} checkpoint intervals ({interval:g} s): the job's "
                "checkpoints are failing, or it is not running",
                NO_STATE_DOC,
            ),
            rpo,
        )
    if age is not None:
        rpo["derivation"] = f"a failure now replays the input of the last {age:.0f} s" + (
            "" if interval is None else f"; at worst about one checkpoint interval ({interval:g} s) plus one checkpoint"
        )
    return ok(check, said), rpo


def targets_finding(
    binding: Mapping[str, Any], clusters: Mapping[str, Mapping[str, Any]], member_findings: Mapping[str, Finding]
) -> Finding:
    """Somewhere to go: the clusters the placement allows besides the ones the workload is on that the scheduler may
    use now (Ready, untainted), and whether any of them is known to reach the storage (a member relay's heartbeat)."""
    check = "failover-targets"
    current = {target.name for target in b.target_clusters(binding)}
    allowed = placement_clusters(b.spec(binding).get("placement"))
    others = sorted((set(clusters) if allowed is None else set(allowed) & set(clusters)) - current)
    if not others:
        return problem(
            check,
            f"the placement allows no cluster besides {', '.join(sorted(current)) or 'none'}: a failover has nowhere "
            "to go (#5803)",
            DEAD_CLUSTER_DOC,
        )
    unusable = [cluster for cluster in others if not is_schedulable(clusters.get(cluster))]
    if len(unusable) == len(others):
        return problem(
            check,
            f"the placement allows {', '.join(others)}, but none is Ready and free of NoSchedule/NoExecute taints now: "
            "a failover has nowhere to go",
            DEAD_CLUSTER_DOC,
        )
    others = [cluster for cluster in others if cluster not in unusable]
    by_status = {
        status: [cluster for cluster in others if (f := member_findings.get(cluster)) and f.status is status]
        for status in Status
    }
    if by_status[Status.PROBLEM] and not by_status[Status.OK] and not by_status[Status.WARNING]:
        return problem(
            check,
            f"may go to {', '.join(others)}, whose member relays no longer reach the storage",
            DEAD_CLUSTER_DOC,
        )
    reached = f"; reaches the storage from {', '.join(by_status[Status.OK])}" if by_status[Status.OK] else ""
    if by_status[Status.PROBLEM]:
        return warning(
            check,
            f"may go to {', '.join(others)}{reached}; not from {', '.join(by_status[Status.PROBLEM])}",
            DEAD_CLUSTER_DOC,
        )
    besides = f" ({', '.join(unusable)} not schedulable now)" if unusable else ""
    return ok(check, f"may go to {', '.join(others)}{reached}{besides}")


def _no_execute_toleration(binding: Mapping[str, Any]) -> float:
    """The seconds the placement tolerates a NoExecute taint (the least of its NoExecute tolerations with
    tolerationSeconds; 0 without one). The readiness check assumes those tolerations match the not-Ready taint."""
    placement = b.spec(binding).get("placement")
    tolerations = placement.get("clusterTolerations") if isinstance(placement, dict) else None
    seconds = []
    for toleration in tolerations if isinstance(tolerations, list) else ():
        if (
            isinstance(toleration, dict)
            and toleration.get("effect") in (NO_EXECUTE, None, "")
            and isinstance(toleration.get("tolerationSeconds"), int)
        ):
            seconds.append(float(toleration["tolerationSeconds"]))
    return min(seconds, default=0.0)


def recovery_times(
    binding: Mapping[str, Any], settings: DecisionSettings, cluster_failure_threshold: float
) -> dict[str, Any]:
    """The expected RTO from the settings in force, with its derivation (docs/operations.md, "What happens, and how
    long it takes"): a dead cluster's job starts elsewhere once Karmada has marked the cluster not Ready, the taint's
    toleration and the brake's window have run out (the eviction) and the old copy is fenced; a failing job once its
    toleration has run out.
    The job's own start from its state comes on top of both."""
    times: dict[str, Any] = {}
    if b.cluster_failover(binding) is not None or b.application_failover(binding) is not None:
        toleration = _no_execute_toleration(binding)
        fence = settings.fence_after.total_seconds() if settings.fences else None
        if fence is None:
            times["deadClusterSeconds"] = None
            times["deadCluster"] = (
                "fencing is off: the old copy is released only when its cluster answers again or the task's grace "
                "period ends"
            )
        else:
            # The relay's own eviction also waits out the brake's window (failover/reconcile/brake.py); Karmada's taint
            # manager, when it evicts instead (clusterEvictions false), does not.
            window = settings.brake_window.total_seconds() if settings.cluster_evictions else None
            waits = [f"toleration {toleration:g} s"]
            waits += [] if window is None else [f"brakeWindowSeconds {window:g} s"]
            total = cluster_failure_threshold + max(toleration, window or 0.0, fence)
            times["deadClusterSeconds"] = round(total)
            times["deadCluster"] = (
                f"{cluster_failure_threshold:g} s until Karmada marks the cluster not Ready "
                f"(--cluster-failure-threshold) + max({', '.join(waits)}, fenceAfterSeconds {fence:g} s) "
                f"= {total:g} s, {JOB_START}"
            )
    application = b.application_failover(binding)
    if application is not None:
        conditions = application.get("decisionConditions")
        given = conditions.get("tolerationSeconds") if isinstance(conditions, dict) else None
        waited = given if isinstance(given, int) else DEFAULT_TOLERATION_SECONDS
        times["failingJobSeconds"] = waited
        times["failingJob"] = f"{waited} s of Unhealthy (decisionConditions.tolerationSeconds), {JOB_START}"
    return times


def workload_report(
    facts: WorkloadFacts, settings: DecisionSettings, now: datetime, cluster_failure_threshold: float
) -> WorkloadReport:
    config = b.spec(facts.manifest).get("flinkConfiguration") if isinstance(facts.manifest, dict) else None
    state, rpo = state_finding(facts.lookup, facts.lookup_problem, checkpoint_interval(config), now)
    findings = [
        policy_finding(facts.binding),
        health_finding(facts.binding, facts.health_customized),
        flink_state_finding(facts.manifest),
        state,
        targets_finding(facts.binding, facts.clusters, facts.member_findings),
    ]
    return WorkloadReport(
        tuple(finding for finding in findings if finding is not None),
        rpo,
        recovery_times(facts.binding, settings, cluster_failure_threshold),
    )
