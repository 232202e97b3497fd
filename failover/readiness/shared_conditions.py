"""The readiness conditions of the control plane, shared by every workload: Karmada's controllers, the relay's leader,
the ClusterTaintPolicy that turns a dead cluster into an eviction, the webhooks as the karmada-apiserver calls them,
the checkpoint storage, and what each member relay says through the storage."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from failover.core import binding as b
from failover.core.annotations import parse_time
from failover.core.api import PurgeMode
from failover.core.cluster import NO_EXECUTE, READY
from failover.core.names import is_dns_label
from failover.fence.control_plane import HEARTBEAT_SECONDS, without_relay
from failover.fence.fence_files import heartbeat_name
from failover.readiness.findings import (
    CERTIFICATES_DOC,
    CONTROL_PLANE_DOC,
    CONTROLLERS_DOC,
    DEAD_CLUSTER_DOC,
    FAILURE_POLICIES_DOC,
    MEMBER_DOC,
    STORAGE_FENCE_DOC,
    Finding,
    ok,
    problem,
    warning,
)

# karmada-controller-manager's controllers the relay replaces, by their `--controllers` name, and the names
# controller-runtime reports them under (`controller_runtime_reconcile_total{controller=...}`, set to 0 for every
# controller when it starts): pkg/controllers/applicationfailover, gracefuleviction, workloadrebalancer.
REPLACED_CONTROLLERS = {
    "applicationFailover": (
        "resource-binding-application-failover-controller",
        "cluster-resource-binding-application-failover-controller",
    ),
    "gracefulEviction": (
        "resource-binding-graceful-eviction-controller",
        "cluster-resource-binding-graceful-eviction-controller",
    ),
    "workloadRebalancer": ("workload-rebalancer",),
}
# Registered only with --feature-gates=Failover=true (cmd/controller-manager/app/controllermanager.go
# startClusterController): pkg/controllers/cluster/taint_manager.go TaintManagerName.
TAINT_MANAGER = "taint-manager"
_CONTROLLER_LABEL = re.compile(r'^controller_runtime_reconcile_total\{[^}]*\bcontroller="([^"]+)"', re.MULTILINE)
UNHEALTHY_READY = ("False", "Unknown")  # a cluster that stopped answering is Unknown, one that reports trouble False


def running_controllers(metrics: str) -> frozenset[str]:
    """The controllers a controller-runtime manager runs, from its Prometheus text."""
    return frozenset(_CONTROLLER_LABEL.findall(metrics))


def controllers_finding(metrics: str | None, unread: str = "") -> Finding:
    """Which of karmada-controller-manager's controllers run, from its `/metrics` (`metrics`; None when not read, and
    `unread` says why). The flags say what was asked; the metrics say what runs, whichever installer wrote them."""
    check = "karmada-controllers"
    if metrics is None:
        return warning(
            check,
            f"not checked: {unread or 'no --controller-manager-metrics URL given'}; the three controllers the relay "
            "replaces must be off and the Failover gate on",
            CONTROLLERS_DOC,
        )
    running = running_controllers(metrics)
    if not running:
        return warning(
            check,
            "karmada-controller-manager runs no controller here: a replica that is not the leader; read the leader's "
            "metrics",
            CONTROLLERS_DOC,
        )
    beside = [name for name, reported in REPLACED_CONTROLLERS.items() if running & set(reported)]
    if beside:
        return problem(
            check,
            f"karmada-controller-manager runs {', '.join(beside)} beside the relay: two writers on "
            "gracefulEvictionTasks (--controllers must turn "
            f"{', '.join('-' + name for name in beside)})",
            CONTROLLERS_DOC,
        )
    if TAINT_MANAGER not in running:
        return problem(
            check,
            "karmada-controller-manager runs no taint manager (--feature-gates=Failover=true is off): a dead "
            "cluster's workloads never move",
            DEAD_CLUSTER_DOC,
        )
    return ok(
        check,
        f"{TAINT_MANAGER} runs; {', '.join(REPLACED_CONTROLLERS)} are off "
        "(--enable-no-execute-taint-eviction is not in the metrics: false is recommended, the relay evicts)",
    )


def relay_leader_finding(lease: Mapping[str, Any] | None, where: str, now: datetime) -> Finding:
    """The relay's loop runs: its Lease (`where`: namespace/name) is held and renewed within its duration."""
    check = "relay-loop"
    if lease is None:
        return problem(
            check, f"no Lease {where}: no relay runs its reconcile loop on this control plane", CONTROL_PLANE_DOC
        )
    spec = b.spec(lease)
    holder, renewed = spec.get("holderIdentity"), parse_time(spec.get("renewTime"))
    duration = spec.get("leaseDurationSeconds")
    duration = duration if isinstance(duration, int) and duration > 0 else 15  # client-go's default leaseDuration
    if not holder or renewed is None:
        return problem(check, f"the Lease {where} is held by no one: no relay leads", CONTROL_PLANE_DOC)
    age = (now - renewed).total_seconds()
    if age > duration:
        return problem(
            check,
            f"{holder} last renewed the Lease {where} {age:.0f} s ago (its duration is {duration} s): no relay leads",
            CONTROL_PLANE_DOC,
        )
    return ok(check, f"{holder} leads (Lease {where} renewed {max(age, 0):.0f} s ago)")


def _evicts_not_ready(policy: Mapping[str, Any]) -> bool:
    """The ClusterTaintPolicy adds a NoExecute taint when Ready is False and when it is Unknown."""
    spec = b.spec(policy)
    taints = spec.get("taints")
    if not isinstance(taints, list) or not any(
        isinstance(taint, dict) and taint.get("effect") == NO_EXECUTE for taint in taints
    ):
        return False
    covered: set[str] = set()
    conditions = spec.get("addOnConditions")
    for condition in conditions if isinstance(conditions, list) else ():
        if not isinstance(condition, dict) or condition.get("conditionType") != READY:
            continue
        listed = condition.get("statusValues")
        values = {str(value) for value in listed} if isinstance(listed, list) else set()
        if condition.get("operator") == "In":
            covered |= values & set(UNHEALTHY_READY)
        elif condition.get("operator") == "NotIn":
            covered |= set(UNHEALTHY_READY) - values
    return covered >= set(UNHEALTHY_READY)


def _targets(policy: Mapping[str, Any], clusters: Iterable[str]) -> frozenset[str]:
    """The clusters a ClusterTaintPolicy taints: all without targetClusters or with an empty one; otherwise those its
    clusterNames name minus exclude (a label or field selector is taken to select all it names: only names are
    judged here)."""
    clusters = frozenset(clusters)
    target = b.spec(policy).get("targetClusters")
    if not isinstance(target, dict) or not target:
        return clusters
    names = target.get("clusterNames")
    chosen = clusters & {str(name) for name in names} if isinstance(names, list) and names else clusters
    excluded = target.get("exclude")
    return chosen - ({str(name) for name in excluded} if isinstance(excluded, list) else set())


def taint_policy_finding(policies: Iterable[Mapping[str, Any]], clusters: Iterable[str]) -> Finding:
    """Something taints a failed cluster NoExecute (since v1.14 Karmada itself adds only NoSchedule taints), on every
    member cluster."""
    check = "cluster-taint-policy"
    clusters = sorted(clusters)
    evicting = [policy for policy in policies if _evicts_not_ready(policy)]
    if not evicting:
        return problem(
            check,
            "no ClusterTaintPolicy adds a NoExecute taint to a cluster whose Ready is False or Unknown: a dead "
            "cluster's workloads never move",
            DEAD_CLUSTER_DOC,
        )
    covered: set[str] = set()
    for policy in evicting:
        covered |= _targets(policy, clusters)
    names = ", ".join(sorted(str(b.metadata(policy).get("name")) for policy in evicting))
    if uncovered := [cluster for cluster in clusters if cluster not in covered]:
        return problem(
            check,
            f"{names} taints NoExecute, but not {', '.join(uncovered)}: their workloads never move when they die",
            DEAD_CLUSTER_DOC,
        )
    return ok(check, f"{names} taints a not-Ready cluster NoExecute, on every member cluster")


PROBE_NAME = "failover-relay-readiness-probe"


def probe_policy(purge_mode: str) -> dict[str, Any]:
    """A PropagationPolicy for a `--dry-run=server` create (never stored): application failover of a FlinkDeployment
    that no one has, keeping its job id, with `purge_mode`."""
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": PROBE_NAME},
        "spec": {
            "propagateDeps": True,  # the relay refuses application failover without it
            "resourceSelectors": [
                {"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment", "name": PROBE_NAME}
            ],
            "failover": {
                "application": {
                    "decisionConditions": {"tolerationSeconds": 30},
                    "purgeMode": purge_mode,
                    "statePreservation": {
                        "rules": [
                            {
                                "aliasLabelName": "application.karmada.io/failover-jobid",
                                "jsonPath": "{ .jobStatus.jobId }",
                            }
                        ]
                    },
                }
            },
        },
    }


# Only the relay refuses statePreservation with Gracefully (docs/design.md, "Policy admission"); only the relay's
# mutating webhook rewrites the purge mode Karmada v1.19 removed from its enum (Immediately -> Directly).
VALIDATION_PROBE_PURGE_MODE = PurgeMode.GRACEFULLY.value
MUTATION_PROBE_PURGE_MODE = PurgeMode.IMMEDIATELY.value
MUTATION_PROBE_EXPECTED = PurgeMode.DIRECTLY.value


@dataclass(frozen=True)
class ProbeAnswer:
    """The karmada-apiserver's answer to a `--dry-run=server` create: its HTTP status, its message (an error's
    `message`), and the object it would have stored (a success's body)."""

    code: int
    message: str = ""
    stored: Mapping[str, Any] | None = None


def _not_called(check: str, answer: ProbeAnswer) -> Finding | None:
    """The apiserver tried to call the relay and could not: a caBundle, a URL or a Service that is wrong."""
    if "failed calling webhook" in answer.message:
        return problem(check, f"the karmada-apiserver cannot call the relay: {answer.message}", CERTIFICATES_DOC)
    return None


def validation_finding(answer: ProbeAnswer) -> Finding:
    """A policy that only the relay refuses (statePreservation with purgeMode Gracefully): the relay's denial proves
    the apiserver calls its validating webhook."""
    check = "validating-webhook"
    if failed := _not_called(check, answer):
        return failed
    if answer.code < 300:
        return problem(
            check,
            "the karmada-apiserver accepted a policy the relay refuses: the validating webhook is not registered, "
            "or its failurePolicy Ignore hid a failed call",
            FAILURE_POLICIES_DOC,
        )
    if "denied the request" in answer.message and "failover-relay" in answer.message:
        return ok(check, "the karmada-apiserver calls the relay and keeps its denial")
    return warning(check, f"the probe could not tell: HTTP {answer.code} {answer.message}", CONTROL_PLANE_DOC)


def mutation_finding(answer: ProbeAnswer, expected_purge_mode: str = MUTATION_PROBE_EXPECTED) -> Finding:
    """A policy with a legacy purge mode, which only the relay's mutating webhook rewrites before Karmada's schema
    refuses it (failover/admission/policy.py `mutate_policy`): stored rewritten proves the apiserver calls it."""
    check = "mutating-webhook"
    if failed := _not_called(check, answer):
        return failed
    failover = b.spec(answer.stored or {}).get("failover")
    application = failover.get("application") if isinstance(failover, dict) else None
    if answer.code < 300 and isinstance(application, dict) and application.get("purgeMode") == expected_purge_mode:
        return ok(check, "the karmada-apiserver calls the relay and applies its patch")
    if answer.code == 422 or answer.code < 300:
        return problem(
            check,
            "the relay's patch was not applied: the mutating webhook is not registered, or its failurePolicy Ignore "
            f"hid a failed call ({answer.message or 'stored unchanged'})",
            FAILURE_POLICIES_DOC,
        )
    return warning(check, f"the probe could not tell: HTTP {answer.code} {answer.message}", CONTROL_PLANE_DOC)


def storage_finding(root: str | None, unreadable: str = "") -> Finding:
    """The control plane reaches the checkpoint storage (the restore lookup and the storage fence read it)."""
    check = "checkpoint-storage"
    if not root:
        return problem(check, "no checkpoint root configured: no restore path is ever given", CONTROL_PLANE_DOC)
    if unreadable:
        return problem(check, f"{root} cannot be read from here: {unreadable}", CONTROL_PLANE_DOC)
    return ok(check, f"{root} is readable")


def member_storage_finding(
    cluster: str, heartbeat: Any | None, heartbeats_read: bool, storage_fence: bool, now: datetime
) -> Finding:
    """What a member relay proves about `cluster`: it reaches the storage (it writes its heartbeat there) and it
    watches the storage fence's records. `heartbeat`: the member relay's last (`failover.fence.fence_files.Heartbeat`),
    None when it never wrote one; `heartbeats_read`: whether the heartbeats could be read at all."""
    check = f"member-relay/{cluster}"
    if not heartbeats_read:
        return warning(check, "not checked: the heartbeats in the checkpoint storage cannot be read", MEMBER_DOC)
    if heartbeat is None:
        consequence = (
            "a partitioned copy there is fenced by time only"
            if storage_fence
            else "nothing on the control plane can tell whether it reaches the storage"
        )
        return warning(check, f"no member relay on {cluster}: {consequence}", STORAGE_FENCE_DOC)
    period = max(HEARTBEAT_SECONDS, heartbeat.poll_seconds)
    age = (now - heartbeat.seen_at).total_seconds()
    if without_relay([cluster], {cluster: heartbeat}, now):  # the storage fence's own rule: three missed heartbeats
        return problem(
            check,
            f"the member relay on {cluster} last wrote to the storage {age:.0f} s ago (every {period:.0f} s "
            f"expected): it cannot reach the storage, or it stopped (removed on purpose: delete "
            f"{heartbeat_name(cluster) if is_dns_label(cluster) else 'its heartbeat'} below the checkpoint root)",
            STORAGE_FENCE_DOC,
        )
    return ok(check, f"the member relay on {cluster} reaches the storage (wrote {max(age, 0):.0f} s ago)")
