"""Warnings at admission for stateful failover that cannot happen, or not as the policy says.

Each is an admission warning (`kubectl apply` prints it), never a denial: the policy is valid for Karmada, it just
will not do what its author expects.

- A selected kind Karmada has no health interpretation for (karmada#7843): its binding never reports
  Unhealthy, so application failover never starts. Karmada interprets health natively for apps/v1 workloads, Pods,
  Services, Ingresses, PVCs and PDBs (`pkg/resourceinterpreter/default/native/healthy.go`) and through its
  bundled customizations for some CRDs (FlinkDeployment among them), but not for batch/v1 Job, FlinkSessionJob or
  FlinkBlueGreenDeployment; a ResourceInterpreterCustomization with `healthInterpretation` fixes it.
- A placement that names a single cluster (karmada#5803): a failover has nowhere to go.
- Cluster failover whose placement tolerates every NoExecute taint: the taint manager never evicts
  (`pkg/controllers/cluster/taint_manager.go` `needEviction`).
- Failback (`failover-relay.io/failback: "true"`) on a flat `clusterAffinity` of more than two clusters with a
  single-cluster spread: the workload moves back only when the recovered cluster wins the scheduler's name
  tie-break (failover/moves/failback.py `failback_route`); ordered `clusterAffinities` always can.
- Stateful failover of FlinkDeployments whose preserved state cannot restore a job (the policy side;
  failover/reconcile/stateless_restart.py is the workload's): no statePreservation rule keeps the job id (`{
  .jobStatus.jobId }`), by which the restore finds the job's checkpoints and savepoints; or the rule that keeps it
  writes a label the relay's savepoint webhook is not registered for (`failover.state.profiles.TRIGGER_LABELS`), so the
  restored copy gets the label and no restore path. The workloads' own configuration (no checkpoint dir,
  DELETE_ON_CANCELLATION) cannot be judged here: the policy webhook answers from the object alone, without reading the
  selected workloads from the apiserver; those come at the workload's admission with a trigger label
  (`failover.state.savepoint`) and as the loop's StatelessRestart Event (`failover.reconcile.stateless_restart`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from failover.admission.rules import Rule
from failover.core import binding as b
from failover.core.api import FAILBACK_ANNOTATION, FLINK_DEPLOYMENTS
from failover.core.jsonpath import JSONPathSyntaxError, parse_template
from failover.core.placement import clusters_by_name_only, placement_clusters, placement_is_single_cluster
from failover.state.profiles import TRIGGER_LABELS

# (group, kind) Karmada v1.19 has no health interpretation for, as reported in karmada#7843.
NO_HEALTH_INTERPRETATION = frozenset(
    {("batch", "Job"), ("flink.apache.org", "FlinkSessionJob"), ("flink.apache.org", "FlinkBlueGreenDeployment")}
)
# The status fields the restore reads the job id from: FlinkDeployment `status.jobStatus.jobId`; and the `jobID` typo
# of Karmada's docs, which failover/admission/policy.py already warns about (it blocks the eviction itself).
JOB_ID_FIELDS = frozenset({"jobStatus", "jobId"})
JOB_ID_TYPO_FIELDS = frozenset({"jobStatus", "jobID"})
STATEFUL_SECTIONS = ("application", "cluster")


@dataclass(frozen=True)
class FailoverWarning:
    text: str
    rule: Rule


def failover_warnings(
    policy: Mapping[str, Any], trigger_labels: Sequence[str] = TRIGGER_LABELS
) -> list[FailoverWarning]:
    """The warnings for one (Cluster)PropagationPolicy; [] when it has no failover or nothing to say.
    ``trigger_labels``: the job-id labels the relay's savepoint webhook restores on."""
    spec = b.spec(policy)
    failover = spec.get("failover")
    if not isinstance(failover, dict):
        return []
    placement = spec.get("placement")
    placement = placement if isinstance(placement, dict) else {}
    warnings: list[FailoverWarning] = []
    kinds = _selected_kinds(spec)
    if isinstance(failover.get("application"), dict):
        for group, kind in kinds:
            if (group, kind) in NO_HEALTH_INTERPRETATION:
                warnings.append(
                    FailoverWarning(
                        f"{kind}: Karmada has no health interpretation for it (#7843),"
                        " so application failover never starts",
                        Rule.NO_HEALTH_INTERPRETATION,
                    )
                )
    names = placement_clusters(placement)
    if names is not None and len(names) == 1:
        warnings.append(
            FailoverWarning(
                f"spec.placement names only {min(names)}: a failover has no other cluster to go to (#5803)",
                Rule.SINGLE_NAMED_CLUSTER,
            )
        )
    if isinstance(failover.get("cluster"), dict) and _tolerates_every_no_execute(placement):
        warnings.append(
            FailoverWarning(
                "spec.failover.cluster: clusterTolerations tolerate every NoExecute taint, so Karmada never evicts",
                Rule.TOLERATES_EVERY_NO_EXECUTE,
            )
        )
    if (
        b.annotations(policy).get(FAILBACK_ANNOTATION) == "true"
        and placement_is_single_cluster(placement)
        and (not placement.get("clusterAffinities"))
    ):
        flat = clusters_by_name_only(placement.get("clusterAffinity"))
        if flat is None or len(flat) > 2:
            warnings.append(
                FailoverWarning(
                    "failback: with clusterAffinity Karmada breaks the tie by name; only ordered"
                    " clusterAffinities always move back",
                    Rule.FAILBACK_TIE_BREAK,
                )
            )
    if (FLINK_DEPLOYMENTS.group, FLINK_DEPLOYMENTS.kind) in kinds:
        for section in STATEFUL_SECTIONS:
            if isinstance(failover.get(section), dict):
                warnings += (
                    FailoverWarning(text, Rule.STATELESS_FLINK_FAILOVER)
                    for text in stateless_flink_failover(failover[section], f"spec.failover.{section}", trigger_labels)
                )
    return warnings


def stateless_flink_failover(
    section: Mapping[str, Any], path: str, trigger_labels: Sequence[str] = TRIGGER_LABELS
) -> list[str]:
    """Why a stateful failover ``section`` (application or cluster) of FlinkDeployments restores no state.

    Only rules that parse are judged (the others are denied by failover/admission/policy.py). A section without
    statePreservation is stateless on purpose and says nothing.
    """
    preservation = section.get("statePreservation")
    rules = preservation.get("rules") if isinstance(preservation, dict) else None
    if not isinstance(rules, list) or not rules:
        return []
    job_id_rules, typos = [], 0
    for index, rule in enumerate(rules):
        if not isinstance(rule, dict) or not isinstance(rule.get("jsonPath"), str):
            continue
        try:
            fields = parse_template(rule["jsonPath"]).field_names()
        except JSONPathSyntaxError:
            continue
        if fields >= JOB_ID_FIELDS:
            job_id_rules.append((index, rule.get("aliasLabelName")))
        typos += fields >= JOB_ID_TYPO_FIELDS
    sp_path = f"{path}.statePreservation"
    if not job_id_rules:
        return (
            []
            if typos
            else [f"{sp_path}: no rule keeps {{ .jobStatus.jobId }}: FlinkDeployments restart without state"]
        )
    if any(alias in trigger_labels for _, alias in job_id_rules):
        return []
    return [f"{sp_path}.rules[{job_id_rules[0][0]}].aliasLabelName: no restore runs on this label (docs/restore.md)"]


def _selected_kinds(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    selectors = spec.get("resourceSelectors")
    kinds = []
    for selector in selectors if isinstance(selectors, list) else ():
        if (
            isinstance(selector, dict)
            and isinstance(selector.get("apiVersion"), str)
            and isinstance(selector.get("kind"), str)
        ):
            group = selector["apiVersion"].rpartition("/")[0]
            kinds.append((group, selector["kind"]))
    return kinds


def _tolerates_every_no_execute(placement: Mapping[str, Any]) -> bool:
    tolerations = placement.get("clusterTolerations")
    return any(
        isinstance(t, dict)
        and not t.get("key")
        and t.get("operator") == "Exists"
        and t.get("effect") in (None, "", "NoExecute")
        and t.get("tolerationSeconds") is None
        for t in (tolerations if isinstance(tolerations, list) else ())
    )
