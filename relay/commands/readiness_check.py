"""`failover-relay readiness [WORKLOAD]`: would each workload under the relay come back with its state if its cluster
died or its job failed now? Reads the karmada-apiserver (Clusters, bindings, Works, templates, ClusterTaintPolicies,
ResourceInterpreterCustomizations, the relay's Lease), karmada-controller-manager's `/metrics` when given, the
checkpoint storage (the restore lookup, the member relays' heartbeats) and the answers of two `--dry-run=server`
policy creates that only the relay's webhooks decide; changes nothing. The judgement is `failover.readiness`; this
module fetches its inputs and prints the report. Every request is bounded (`REQUEST_TIMEOUT_SECONDS`).

Exit 0 when nothing is a problem (warnings allowed), 1 when something is, 2 with one line for bad input.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO, cast

import yaml
from kubernetes import client

from controllers.access.fence_store import FenceStore
from controllers.access.kube import NoClusterConfig, load_api_client
from failover.core import binding as b
from failover.core.api import (
    CLUSTER_RESOURCE_BINDINGS,
    CLUSTER_TAINT_POLICIES,
    CLUSTERS,
    FLINK_GROUP,
    PROPAGATION_POLICIES,
    RESOURCE_BINDINGS,
    RESOURCE_INTERPRETER_CUSTOMIZATIONS,
    WORKS,
)
from failover.core.loop_settings import DecisionSettings
from failover.core.work import execution_namespace, manifests
from failover.readiness import shared_conditions as cp
from failover.readiness.findings import Status, counts
from failover.readiness.workload import (
    KARMADA_CLUSTER_FAILURE_THRESHOLD_SECONDS,
    WorkloadFacts,
    WorkloadReport,
    workload_report,
)
from failover.state.preserved_state import belongs_to
from failover.views.status_view import is_stateful, workload_name
from relay.commands.karmada_reads import NotKarmada, require_karmada
from relay.commands.status import StatusError, Storage, listed, named, open_storage, restore_lookup
from relay.kube_requests import Unreachable, raw_request
from relay.settings import Settings

EXIT_READY, EXIT_PROBLEM, EXIT_BAD_INPUT = 0, 1, 2
REQUEST_TIMEOUT_SECONDS = 10
# Where the relay's Lease is looked for when --lease-namespace is not given: the namespace manifests/deploy installs
# it in, then "default" (a relay outside a Pod, controllers/manager.py default_lease_namespace).
LEASE_NAMESPACES = ("failover-relay", "default")
PROBE_NAMESPACE = "default"  # every apiserver has it; the probes are never stored


def run_readiness(
    kubeconfig: Path | None,
    settings: Settings,
    workload: str | None,
    namespace: str | None,
    output: str,
    metrics_url: str | None,
    cluster_failure_threshold: float,
    out: TextIO,
    err: TextIO,
) -> int:
    logging.getLogger("urllib3").setLevel(logging.ERROR)  # its retry warnings; the failure is said in one line
    try:
        storage = open_storage(settings.savepoint)
        api_client = load_api_client(kubeconfig)
        require_karmada(api_client, RESOURCE_BINDINGS, CLUSTER_RESOURCE_BINDINGS, CLUSTERS)
        report = readiness_report(
            api_client, settings, storage, workload, namespace, metrics_url, cluster_failure_threshold
        )
    except (StatusError, NoClusterConfig, NotKarmada, Unreachable) as error:
        print(f"failover-relay: {error}", file=err)
        return EXIT_BAD_INPUT
    print(render(report, output), file=out, end="" if output == "table" else "\n")
    return EXIT_PROBLEM if report["summary"][Status.PROBLEM.value] else EXIT_READY


def readiness_report(
    api_client: client.ApiClient,
    settings: Settings,
    storage: Storage | None,
    workload: str | None,
    namespace: str | None,
    metrics_url: str | None,
    cluster_failure_threshold: float = KARMADA_CLUSTER_FAILURE_THRESHOLD_SECONDS,
    bindings: list[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The report of `bindings` (when the caller has listed them already), else of `protected_bindings`."""
    now = datetime.now(UTC)
    decisions: DecisionSettings = settings.controllers.decisions
    clusters = {str(b.metadata(cluster).get("name")): cluster for cluster in listed(api_client, CLUSTERS)}
    heartbeats, unreadable = _heartbeats(storage)
    storage_fence = settings.storage_fence_on()
    members = {
        name: cp.member_storage_finding(name, (heartbeats or {}).get(name), heartbeats is not None, storage_fence, now)
        for name in sorted(clusters)
    }
    metrics, unread = _metrics(metrics_url)
    control_plane = [
        cp.controllers_finding(metrics, unread),
        cp.relay_leader_finding(*_lease(api_client, settings), now),
        cp.taint_policy_finding(listed(api_client, CLUSTER_TAINT_POLICIES), clusters),
        cp.validation_finding(_probe(api_client, cp.VALIDATION_PROBE_PURGE_MODE)),
        cp.mutation_finding(_probe(api_client, cp.MUTATION_PROBE_PURGE_MODE)),
        cp.storage_finding(settings.savepoint.checkpoint_root, unreadable),
        *members.values(),
    ]
    customized = _health_customized(api_client)
    workloads, every = [], list(control_plane)
    works: dict[str, list[Mapping[str, Any]]] = {}
    for binding in protected_bindings(api_client, workload, namespace) if bindings is None else bindings:
        lookup = restore_lookup(api_client, storage, binding)
        manifest = _manifest(api_client, binding, lookup.template, works)
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


def protected_bindings(
    api_client: client.ApiClient, workload: str | None, namespace: str | None
) -> list[Mapping[str, Any]]:
    """The workloads the relay protects (a stateful failover policy) and every Flink workload (a Flink job under a
    policy without state is the mistake the check is for); the one named when `workload` is given."""
    found = []
    for resource in (RESOURCE_BINDINGS, CLUSTER_RESOURCE_BINDINGS):
        for binding in listed(api_client, resource):
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
        raise StatusError(f"no workload {workload}{where} propagated by Karmada")
    return sorted(found, key=workload_name)


def _manifest(
    api_client: client.ApiClient,
    binding: Mapping[str, Any],
    template: Mapping[str, Any] | None,
    works: dict[str, list[Mapping[str, Any]]],
) -> Mapping[str, Any] | None:
    """The workload as its member runs it: its manifest in the Work of its first target cluster (overrides applied),
    else the resource template."""
    for target in b.target_clusters(binding):
        if target.name not in works:
            works[target.name] = list(listed(api_client, WORKS, execution_namespace(target.name)))
        for work in works[target.name]:
            if not belongs_to(work, binding):
                continue
            for manifest in manifests(work):
                if isinstance(manifest, dict):
                    return cast(Mapping[str, Any], manifest)
    return template


def _heartbeats(storage: Storage | None) -> tuple[dict[str, Any] | None, str]:
    """The member relays' heartbeats, and why the storage could not be read ("" when it could)."""
    if storage is None:
        return None, ""
    try:
        return FenceStore(storage.roots[0]).read_heartbeats(), ""
    except Exception as error:  # noqa: BLE001  any storage failure is the finding, named
        return None, f"{type(error).__name__}: {error}"


def _metrics(url: str | None) -> tuple[str | None, str]:
    if not url:
        return None, ""
    try:
        # http(s) only: the command refused any other scheme (readiness_command.metrics_url_problem).
        with urllib.request.urlopen(url, timeout=REQUEST_TIMEOUT_SECONDS) as response:
            return response.read(16 * 1024 * 1024).decode("utf-8", "replace"), ""
    except (urllib.error.URLError, OSError, ValueError) as error:
        return None, f"{url} did not answer ({getattr(error, 'reason', error)})"


def _lease(api_client: client.ApiClient, settings: Settings) -> tuple[Mapping[str, Any] | None, str]:
    name = settings.controllers.lease_name
    namespaces = (settings.controllers.lease_namespace,) if settings.controllers.lease_namespace else LEASE_NAMESPACES
    for lease_namespace in namespaces:
        status, _, body = raw_request(
            api_client, "GET", f"/apis/coordination.k8s.io/v1/namespaces/{lease_namespace}/leases/{name}"
        )
        if status == 200:
            return json.loads(body), f"{lease_namespace}/{name}"
    return None, " or ".join(f"{lease_namespace}/{name}" for lease_namespace in namespaces)


def _probe(api_client: client.ApiClient, purge_mode: str) -> cp.ProbeAnswer:
    status, _, body = raw_request(
        api_client,
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


def _health_customized(api_client: client.ApiClient) -> frozenset[tuple[str, str]]:
    """(group, kind) of every ResourceInterpreterCustomization with a health interpretation."""
    found = set()
    for customization in listed(api_client, RESOURCE_INTERPRETER_CUSTOMIZATIONS):
        spec = b.spec(customization)
        target, rules = spec.get("target"), spec.get("customizations")
        if isinstance(target, dict) and isinstance(rules, dict) and isinstance(rules.get("healthInterpretation"), dict):
            found.add((str(target.get("apiVersion") or "").partition("/")[0], str(target.get("kind") or "")))
    return frozenset(found)


def render(report: Mapping[str, Any], output: str) -> str:
    if output == "json":
        return json.dumps(report, indent=2)
    if output == "yaml":
        return yaml.safe_dump(dict(report), sort_keys=False).rstrip("\n")
    return render_table(report)


def render_table(report: Mapping[str, Any]) -> str:
    lines = ["control plane"]
    lines += _finding_lines(report["controlPlane"])
    for entry in report["workloads"]:
        lines += ["", f"{entry['workload']} ({entry['kind']}) placed on: {', '.join(entry['placedOn']) or '-'}"]
        lines += _finding_lines(entry["checks"])
        rpo, rto = entry["rpo"], entry["rto"]
        if rpo.get("derivation"):
            lines.append(f"  RPO  {rpo['derivation']}")
        for key, label in (("deadCluster", "dead cluster"), ("failingJob", "failing job")):
            if rto.get(key):
                seconds = rto.get(f"{key}Seconds")
                lines.append(f"  RTO  {label}: " + (f"about {seconds} s: " if seconds is not None else "") + rto[key])
    summary = report["summary"]
    lines += ["", ", ".join(f"{summary[status.value]} {status.value}" for status in Status)]
    return "\n".join(lines) + "\n"


def _finding_lines(findings: list[Mapping[str, str]]) -> list[str]:
    width = max((len(finding["check"]) for finding in findings), default=0)
    lines = []
    for finding in findings:
        lines.append(f"  {finding['status']:<8} {finding['check']:<{width}}  {finding['evidence']}")
        if finding.get("fix"):
            lines.append(f"  {'':<8} {'':<{width}}  fix: {finding['fix']}")
    return lines
