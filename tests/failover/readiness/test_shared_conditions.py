"""The control plane's readiness conditions, from what Karmada, the relay and the storage show."""

from __future__ import annotations

from pathlib import Path

import pytest

from failover.fence.fence_files import Heartbeat
from failover.readiness import shared_conditions as cp
from failover.readiness.findings import FIX_DOCS, Status
from tests.failover.binding_builders import at

REPO = Path(__file__).resolve().parents[3]

# karmada-controller-manager's /metrics as controller-runtime writes it (one line per result; a few controllers).
METRICS = """# HELP controller_runtime_reconcile_total Total number of reconciliations per controller
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="cluster",result="success"} 12
controller_runtime_reconcile_total{controller="taint-manager",result="error"} 0
controller_runtime_reconcile_total{controller="taint-manager",result="success"} 40
controller_runtime_reconcile_total{controller="resource-binding-graceful-eviction-controller",result="success"} 0
"""


def test_every_fix_names_a_section_the_docs_have() -> None:
    for file, heading in FIX_DOCS:
        headings = [line.lstrip("#").strip() for line in (REPO / file).read_text().splitlines() if line.startswith("#")]
        assert heading in headings, f"{file} has no section {heading!r}"


def test_controllers_left_on_beside_the_relay_are_a_problem_naming_their_flag() -> None:
    finding = cp.controllers_finding(METRICS)
    assert finding.status is Status.PROBLEM
    assert "gracefulEviction" in finding.evidence and "-gracefulEviction" in finding.evidence
    assert "applicationFailover" not in finding.evidence


def test_the_relays_controllers_set_up_is_ok_and_without_taint_manager_a_problem() -> None:
    replaced_off = METRICS.replace("resource-binding-graceful-eviction-controller", "binding")
    assert cp.controllers_finding(replaced_off).status is Status.OK
    no_taint_manager = replaced_off.replace("taint-manager", "execution")
    finding = cp.controllers_finding(no_taint_manager)
    assert finding.status is Status.PROBLEM and "Failover=true" in finding.evidence


def test_metrics_not_read_or_of_a_standby_are_a_warning_not_an_all_clear() -> None:
    assert cp.controllers_finding(None).status is Status.WARNING
    unread = cp.controllers_finding(None, "http://x/metrics did not answer (refused)")
    assert "refused" in unread.evidence
    standby = cp.controllers_finding("# HELP go_goroutines ...\ngo_goroutines 40\n")
    assert standby.status is Status.WARNING and "leader" in standby.evidence


def lease(renewed: float, duration: int = 15, holder: str = "relay-0") -> dict:
    return {"spec": {"holderIdentity": holder, "renewTime": at(renewed).isoformat(), "leaseDurationSeconds": duration}}


def test_the_relay_leads_only_while_its_lease_is_renewed() -> None:
    assert cp.relay_leader_finding(lease(0), "failover-relay/failover-relay", at(10)).status is Status.OK
    expired = cp.relay_leader_finding(lease(0), "failover-relay/failover-relay", at(16))
    assert expired.status is Status.PROBLEM and "16 s ago" in expired.evidence
    assert cp.relay_leader_finding(None, "default/failover-relay", at(0)).status is Status.PROBLEM
    assert cp.relay_leader_finding(lease(0, holder=""), "ns/n", at(0)).status is Status.PROBLEM


def taint_policy(name: str = "evict-not-ready", statuses=("False", "Unknown"), effect="NoExecute", target=None) -> dict:
    spec = {
        "addOnConditions": [{"conditionType": "Ready", "operator": "In", "statusValues": list(statuses)}],
        "taints": [{"key": "failover.example.io/not-ready", "effect": effect}],
    }
    if target is not None:
        spec["targetClusters"] = target
    return {"metadata": {"name": name}, "spec": spec}


def test_the_shipped_cluster_taint_policy_covers_every_cluster() -> None:
    import yaml

    shipped = yaml.safe_load((REPO / "manifests" / "karmada" / "cluster-taint-policy.yaml").read_text())
    assert cp.taint_policy_finding([shipped], ["member1", "member2"]).status is Status.OK


@pytest.mark.parametrize(
    ("policy", "said"),
    [
        (taint_policy(effect="NoSchedule"), "no ClusterTaintPolicy"),
        (taint_policy(statuses=("False",)), "no ClusterTaintPolicy"),  # a dead member's Ready is Unknown
        (taint_policy(target={"clusterNames": ["member1"]}), "not member2"),
        (taint_policy(target={"exclude": ["member2"]}), "not member2"),
    ],
)
def test_a_taint_policy_that_misses_a_dead_cluster_is_a_problem(policy: dict, said: str) -> None:
    finding = cp.taint_policy_finding([policy], ["member1", "member2"])
    assert finding.status is Status.PROBLEM and said in finding.evidence


def test_not_in_true_counts_as_false_and_unknown() -> None:
    policy = taint_policy()
    policy["spec"]["addOnConditions"] = [{"conditionType": "Ready", "operator": "NotIn", "statusValues": ["True"]}]
    assert cp.taint_policy_finding([policy], ["member1"]).status is Status.OK


CALL_FAILED = (
    'Internal error occurred: failed calling webhook "validate.failover-relay.io": failed to call webhook: Post '
    '"https://127.0.0.1:4443/validate?timeout=10s": tls: failed to verify certificate: x509: certificate signed by '
    "unknown authority"
)


def test_the_validation_probe_is_ok_only_when_the_relay_denied_it() -> None:
    denied = cp.ProbeAnswer(400, 'admission webhook "validate.failover-relay.io" denied the request: spec...')
    assert cp.validation_finding(denied).status is Status.OK
    failed = cp.validation_finding(cp.ProbeAnswer(500, CALL_FAILED))
    assert failed.status is Status.PROBLEM and "x509" in failed.evidence and "Certificates" in failed.fix
    accepted = cp.validation_finding(cp.ProbeAnswer(201, stored={}))
    assert accepted.status is Status.PROBLEM and "Ignore" in accepted.evidence
    assert cp.validation_finding(cp.ProbeAnswer(403, "forbidden")).status is Status.WARNING


def test_the_mutation_probe_is_ok_only_when_stored_rewritten() -> None:
    rewritten = {"spec": {"failover": {"application": {"purgeMode": "Directly"}}}}
    assert cp.mutation_finding(cp.ProbeAnswer(201, stored=rewritten)).status is Status.OK
    refused = cp.ProbeAnswer(422, 'spec.failover.application.purgeMode: Unsupported value: "Immediately"')
    assert cp.mutation_finding(refused).status is Status.PROBLEM
    assert cp.mutation_finding(cp.ProbeAnswer(500, CALL_FAILED)).status is Status.PROBLEM


def test_the_probe_policies_differ_only_in_their_purge_mode() -> None:
    validation = cp.probe_policy(cp.VALIDATION_PROBE_PURGE_MODE)
    mutation = cp.probe_policy(cp.MUTATION_PROBE_PURGE_MODE)
    assert validation["spec"]["failover"]["application"].pop("purgeMode") == "Gracefully"
    assert mutation["spec"]["failover"]["application"].pop("purgeMode") == "Immediately"
    assert validation == mutation


def test_storage_without_root_or_unreadable_is_a_problem() -> None:
    assert cp.storage_finding(None).status is Status.PROBLEM
    assert cp.storage_finding("s3://state", "ClientError: 403").status is Status.PROBLEM
    assert cp.storage_finding("s3://state").status is Status.OK


def test_a_member_relay_that_stopped_writing_is_a_problem_one_never_installed_a_warning() -> None:
    beat = Heartbeat("member2", at(0), 2.0)
    assert cp.member_storage_finding("member2", beat, True, True, at(60)).status is Status.OK
    stale = cp.member_storage_finding("member2", beat, True, True, at(91))
    assert stale.status is Status.PROBLEM and "cannot reach the storage" in stale.evidence
    assert ".failover-relay/relays/member2.json" in stale.evidence  # what to delete if it was removed on purpose
    never = cp.member_storage_finding("member2", None, True, True, at(0))
    assert never.status is Status.WARNING and "fenced by time only" in never.evidence
    assert cp.member_storage_finding("member2", None, False, True, at(0)).status is Status.WARNING
