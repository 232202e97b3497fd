"""One workload's readiness: its policy, its kind's health, its Flink configuration, its newest state, where it can
go, and the RPO and RTO derived from them."""

from __future__ import annotations

import copy
from datetime import timedelta

from failover.core.loop_settings import DecisionSettings, FencingMode
from failover.readiness import workload as w
from failover.readiness.findings import Finding, Status
from failover.state.checkpoints import Candidate, LookupResult, Outcome
from tests.failover.binding_builders import JOB_ID, at, flink_binding, with_cluster_rules
from tests.failover.work_builders import cluster

CLUSTERS = {name: cluster(name, True, 0, typed=False) for name in ("member1", "member2")}
PATH = f"s3://state/default/{JOB_ID}/chk-7"
CONFIG = {
    "execution.checkpointing.dir": "s3://state/default",
    "execution.checkpointing.interval": "10s",
}


def flink(config=CONFIG, upgrade_mode="savepoint") -> dict:
    return {
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkDeployment",
        "metadata": {"name": "foo", "namespace": "default"},
        "spec": {"flinkConfiguration": dict(config), "job": {"upgradeMode": upgrade_mode}},
    }


def found(written: float) -> LookupResult:
    return LookupResult(
        Outcome.FOUND, PATH, "checkpoint", job_id=JOB_ID, candidates=(Candidate(PATH, "checkpoint", written, JOB_ID),)
    )


def ready_binding() -> dict:
    return with_cluster_rules(flink_binding())


def report(binding=None, manifest=None, lookup=None, now=100.0, members=None, clusters=None, **settings):
    facts = w.WorkloadFacts(
        binding or ready_binding(),
        manifest if manifest is not None else flink(),
        lookup if lookup is not None else found(at(95).timestamp()),
        health_customized=(),
        clusters=clusters or CLUSTERS,
        member_findings=members or {"member2": Finding("member-relay/member2", Status.OK, "")},
    )
    return w.workload_report(facts, DecisionSettings(**settings), at(now), 30.0)


def by_check(result: w.WorkloadReport) -> dict[str, Finding]:
    return {finding.check: finding for finding in result.findings}


def test_a_ready_workload_is_ok_throughout_with_its_rpo_and_rto() -> None:
    result = report()
    assert {check: f.status for check, f in by_check(result).items()} == {
        "policy": Status.OK,
        "health-interpretation": Status.OK,
        "flink-state": Status.OK,
        "restorable-state": Status.OK,
        "failover-targets": Status.OK,
    }
    assert result.rpo["stateAgeSeconds"] == 5 and result.rpo["checkpointIntervalSeconds"] == 10
    assert result.rpo["path"] == PATH
    # 30 s to NotReady + max(no NoExecute toleration, fenceAfterSeconds 60 s); the application toleration is 60 s.
    assert result.rto["deadClusterSeconds"] == 90 and result.rto["failingJobSeconds"] == 60
    assert "10 s + 30 s per GiB a slot restores" in result.rto["deadCluster"]  # the measured restore on top


def test_a_policy_without_state_or_without_cluster_failover_is_a_problem() -> None:
    binding = ready_binding()
    del binding["spec"]["failover"]["cluster"]["statePreservation"]
    finding = by_check(report(binding))["policy"]
    assert finding.status is Status.PROBLEM and "failover.cluster has no statePreservation" in finding.evidence
    only_application = flink_binding()
    finding = by_check(report(only_application))["policy"]
    assert finding.status is Status.PROBLEM and "no failover.cluster" in finding.evidence
    assert "Two copies" in finding.fix
    nothing = flink_binding()
    del nothing["spec"]["failover"]
    assert by_check(report(nothing))["policy"].status is Status.PROBLEM


def test_a_job_id_rule_that_restores_nothing_is_a_problem() -> None:
    binding = ready_binding()
    binding["spec"]["failover"]["cluster"]["statePreservation"]["rules"][0]["jsonPath"] = "{ .jobStatus.state }"
    finding = by_check(report(binding))["policy"]
    assert finding.status is Status.PROBLEM and "jobId" in finding.evidence


def test_only_cluster_failover_is_a_warning_and_needs_no_health_interpretation() -> None:
    binding = ready_binding()
    del binding["spec"]["failover"]["application"]
    findings = by_check(report(binding))
    assert findings["policy"].status is Status.WARNING and "health-interpretation" not in findings
    assert "failingJobSeconds" not in report(binding).rto


def test_a_kind_karmada_cannot_judge_needs_a_customization() -> None:
    binding = ready_binding()
    binding["spec"]["resource"]["kind"] = "FlinkSessionJob"
    assert w.health_finding(binding, ()).status is Status.PROBLEM
    assert w.health_finding(binding, {("flink.apache.org", "FlinkSessionJob")}).status is Status.OK


def test_flink_configurations_that_lose_the_state_are_problems() -> None:
    deleting = flink({**CONFIG, "execution.checkpointing.externalized-checkpoint-retention": "delete_on_cancellation"})
    finding = by_check(report(manifest=deleting))["flink-state"]
    assert finding.status is Status.PROBLEM and "DELETE_ON_CANCELLATION" in finding.evidence
    no_interval = flink({"execution.checkpointing.dir": "s3://state/default"})
    assert "takes no checkpoint" in by_check(report(manifest=no_interval))["flink-state"].evidence
    stateless = by_check(report(manifest=flink(upgrade_mode="stateless")))["flink-state"]
    assert stateless.status is Status.WARNING and "savepoint" in stateless.evidence


def test_no_state_or_an_old_one_is_reported_with_what_a_failover_would_do() -> None:
    missing = by_check(report(lookup=LookupResult(Outcome.NOT_FOUND, reason="no completed checkpoint")))
    assert missing["restorable-state"].status is Status.PROBLEM and "from empty" in missing["restorable-state"].evidence
    old = report(lookup=found(at(0).timestamp()), now=500)
    assert by_check(old)["restorable-state"].status is Status.WARNING and old.rpo["stateAgeSeconds"] == 500
    facts = w.WorkloadFacts(ready_binding(), flink(), None, "no job id known: the workload has not reported one")
    unknown = w.workload_report(facts, DecisionSettings(), at(0), 30.0)
    assert "no job id known" in by_check(unknown)["restorable-state"].evidence


def test_nowhere_to_go_or_only_to_members_that_lost_the_storage_is_a_problem() -> None:
    binding = ready_binding()
    binding["spec"]["placement"] = {"clusterAffinity": {"clusterNames": ["member1"]}}
    assert by_check(report(binding))["failover-targets"].status is Status.PROBLEM
    lost = {"member2": Finding("member-relay/member2", Status.PROBLEM, "")}
    assert by_check(report(members=lost))["failover-targets"].status is Status.PROBLEM
    unverified = {"member2": Finding("member-relay/member2", Status.WARNING, "")}
    assert by_check(report(members=unverified))["failover-targets"].status is Status.OK
    down = {**CLUSTERS, "member2": cluster("member2", False, 0, typed=False)}
    finding = by_check(report(clusters=down))["failover-targets"]
    assert finding.status is Status.PROBLEM and "none is Ready" in finding.evidence


def test_the_rto_follows_the_toleration_the_fence_and_fencing_off() -> None:
    binding = ready_binding()
    toleration = {"key": "failover.example.io/not-ready", "effect": "NoExecute", "tolerationSeconds": 120}
    binding["spec"]["placement"] = {"clusterTolerations": [toleration]}
    assert report(binding).rto["deadClusterSeconds"] == 150
    # A short fence: the brake's window (30 s) comes last, unless Karmada's taint manager writes the eviction.
    assert report(fence_after=timedelta(seconds=10)).rto["deadClusterSeconds"] == 60
    windowless = report(fence_after=timedelta(seconds=10), cluster_evictions=False).rto
    assert windowless["deadClusterSeconds"] == 40 and "brakeWindowSeconds" not in windowless["deadCluster"]
    off = report(fencing=FencingMode.OFF).rto
    assert off["deadClusterSeconds"] is None and "fencing is off" in off["deadCluster"]


def test_nothing_in_the_binding_is_trusted_to_be_well_formed() -> None:
    binding = copy.deepcopy(ready_binding())
    binding["spec"]["failover"]["cluster"] = "Directly"
    binding["spec"]["placement"] = {"clusterTolerations": ["x", {"tolerationSeconds": "soon"}]}
    result = report(binding, manifest={"kind": "FlinkDeployment", "spec": {"flinkConfiguration": ["x"]}})
    assert by_check(result)["policy"].status is Status.PROBLEM
