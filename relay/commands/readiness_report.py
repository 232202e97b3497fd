"""The readiness check's report: its inputs fetched and `failover.readiness` asked to judge them. Reads the
karmada-apiserver (Clusters, bindings, Works, templates, ClusterTaintPolicies, ResourceInterpreterCustomizations, the
relay's Lease), karmada-controller-manager's `/metrics` when given, the checkpoint storage (the restore lookup, the
member relays' heartbeats) and the answers of two `--dry-run=server` policy creates that only the relay's webhooks
decide; changes nothing. Every request is bounded (`REQUEST_TIMEOUT_SECONDS`). `readiness` prints the report
(readiness_check.py); `drill` runs it first and refuses on a problem (drill_run.py)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, cast

from failover.core import binding as b
from failover.core.api import (
    CLUSTER_TAINT_POLICIES,
    FLINK_GROUP,
    PROPAGATION_POLICIES,
    RESOURCE_INTERPRETER_CUSTOMIZATIONS,
    WORKS,
)
from failover.core.loop_settings import DecisionSettings
from failover.core.work import execution_namespace, manifests
from failover.readiness import shared_conditions as cp
from failover.readiness.findings import counts
from failover.readiness.workload import (
    KARMADA_CLUSTER_FAILURE_THRESHOLD_SECONDS,
    WorkloadFacts,
    WorkloadReport,
    workload_report,
)
from failover.state.preserved_state import belongs_to
from failover.views.status_view import is_stateful, workload_name
from relay.commands.online import Online, OnlineError, heartbeats, named
from relay.commands.restore_lookup import restore_lookup
from relay.kube_requests import raw_request

REQUEST_TIMEOUT_SECONDS = 10
# Where the relay's Lease is looked for when --lease-namespace is not given: the namespace manifests/deploy installs
# it in, then "default" (a relay outside a Pod, controllers/manager.py default_lease_namespace).
LEASE_NAMESPACES = ("failover-relay", "default")
PROBE_NAMESPACE = "default"  # every apiserver has it; the probes are never stored


def readiness_report(
    online: Online,
    workload: str | None,
    namespace: str | None,
    metrics_url: str | None,
    cluster_failure_threshold: float = KARMADA_CLUSTER_FAILURE_THRESHOLD_SECONDS,
    bindings: list[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The report of `bindings` (when the caller has listed them already), else of `protected_bindings`."""
    now = datetime.now(UTC)
    settings = online.settings
    decisions: DecisionSettings = settings.controllers.decisions
    clusters = online.clusters()
    beats, unreadable = heartbeats(online.storage)
    storage_fence = settings.storage_fence_on()
    members = {
        name: cp.member_storage_finding(name, (beats or {}).get(name), beats is not None, storage_fence, now)
        for name in sorted(clusters)
    }
    metrics, unread = _metrics(metrics_url)
    control_plane = [
        cp.controllers_finding(metrics, unread),
        cp.relay_leader_finding(*_lease(online), now),
        cp.taint_policy_finding(online.listed(CLUSTER_TAINT_POLICIES), clusters),
        cp.validation_finding(_probe(online, cp.VALIDATION_PROBE_PURGE_MODE)),
        cp.mutation_finding(_probe(online, cp.MUTATION_PROBE_PURGE_MODE)),
        cp.storage_finding(settings.savepoint.checkpoint_root, unreadable),
        *members.values(),
    ]
    customized = _health_customized(online)
    workloads, every = [], list(control_plane)
    works: dict[str, list[Mapping[str, Any]]] = {}
    for binding in protected_bindings(online, workload, namespace) if bindings is None else bindings:
        lookup = restore_lookup(online, binding)
        manifest = _manifest(online, binding, lookup.template, works)
        facts = WorkloadFacts(binding, manifest, lookup.result, lookup.problem, customized, clusters, members)
        report = workload_report(facts, decisions, now, cluster_failure_threshold)
        every += report.findings
        workloads.append(_workload_entry(binding, report))
    return {
        "controlPlane": [finding.as_dict() for finding in control_plane],
        "workloads": workloads,
        "summary": counts(every),
    }


def _workload_entry(binding: Mapping[str, Any], report: WorkloadReport) -> dict[str, Any]:
    resource = b.spec(binding).get("resource")
    resource = resource if isinstance(resource, dict) else {}
    return {
        "workload": workload_name(binding),
        "kind": resource.get("kind"),
        "placedOn": [target.name for target in b.target_clusters(binding)],
        "checks": [finding.as_dict() for finding in report.findings],
        "rpo": report.rpo,
        "rto": report.rto,
    }


def protected_bindings(online: Online, workload: str | None, namespace: str | None) -> list[Mapping[str, Any]]:
    """The workloads the relay protects (a stateful failover policy) and every Flink workload (a Flink job under a
    policy without state is the mistake the check is for); the one named when `workload` is given."""
    found = []
    for binding in online.bindings():
        kind = b.spec(binding).get("resource")
        flink = isinstance(kind, dict) and str(kind.get("apiVersion") or "").startswith(f"{FLINK_GROUP}/")
        if not (flink or is_stateful(binding)):
            continue
        if workload is not None and not named(binding, workload, namespace):
            continue
        if workload is None and namespace and b.metadata(binding).get("namespace") != namespace:
            continue
        found.append(binding)
    if workload is not None and not found:
        where = f" in namespace {namespace}" if namespace else ""
        raise OnlineError(f"no workload {workload}{where} propagated by Karmada")
    return sorted(found, key=workload_name)


def _manifest(
    online: Online,
    binding: Mapping[str, Any],
    template: Mapping[str, Any] | None,
    works: dict[str, list[Mapping[str, Any]]],
) -> Mapping[str, Any] | None:
    """The workload as its member runs it: its manifest in the Work of its first target cluster (overrides applied),
    else the resource template."""
    for target in b.target_clusters(binding):
        if target.name not in works:
            works[target.name] = online.listed(WORKS, execution_namespace(target.name))
        for work in works[target.name]:
            if not belongs_to(work, binding):
                continue
            for manifest in manifests(work):
                if isinstance(manifest, dict):
                    return cast(Mapping[str, Any], manifest)
    return template


def _metrics(url: str | None) -> tuple[str | None, str]:
    if not url:
        return None, ""
    try:
        # http(s) only: the command refused any other scheme (conventions.metrics_url_problem).
        with urllib.request.urlopen(url, timeout=REQUEST_TIMEOUT_SECONDS) as response:
            return response.read(16 * 1024 * 1024).decode("utf-8", "replace"), ""
    except (urllib.error.URLError, OSError, ValueError) as error:
        return None, f"{url} did not answer ({getattr(error, 'reason', error)})"


def _lease(online: Online) -> tuple[Mapping[str, Any] | None, str]:
    controllers = online.settings.controllers
    name = controllers.lease_name
    namespaces = (controllers.lease_namespace,) if controllers.lease_namespace else LEASE_NAMESPACES
    for lease_namespace in namespaces:
        status, _, body = raw_request(
            online.api_client, "GET", f"/apis/coordination.k8s.io/v1/namespaces/{lease_namespace}/leases/{name}"
        )
        if status == 200:
            return json.loads(body), f"{lease_namespace}/{name}"
    return None, " or ".join(f"{lease_namespace}/{name}" for lease_namespace in namespaces)


def _probe(online: Online, purge_mode: str) -> cp.ProbeAnswer:
    status, _, body = raw_request(
        online.api_client,
        "POST",
        PROPAGATION_POLICIES.path(namespace=PROBE_NAMESPACE),
        query=[("dryRun", "All")],
        body=cp.probe_policy(purge_mode),
        content_type="application/json",
    )
    try:
        decoded = json.loads(body) if body else {}
    except ValueError:
        decoded = {}
    decoded = decoded if isinstance(decoded, dict) else {}
    if status < 300:
        return cp.ProbeAnswer(status, stored=decoded)
    return cp.ProbeAnswer(status, str(decoded.get("message") or body[:300].decode("utf-8", "replace")))


def _health_customized(online: Online) -> frozenset[tuple[str, str]]:
    """(group, kind) of every ResourceInterpreterCustomization with a health interpretation."""
    found = set()
    for customization in online.listed(RESOURCE_INTERPRETER_CUSTOMIZATIONS):
        spec = b.spec(customization)
        target, rules = spec.get("target"), spec.get("customizations")
        if isinstance(target, dict) and isinstance(rules, dict) and isinstance(rules.get("healthInterpretation"), dict):
            found.add((str(target.get("apiVersion") or "").partition("/")[0], str(target.get("kind") or "")))
    return frozenset(found)
