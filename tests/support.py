"""Small builders shared by the test modules: AdmissionReviews, TLS client contexts, example policies."""

from __future__ import annotations

import base64
import copy
import ctypes
import json
import os
import signal
import ssl
import sys
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from failover.reconcile.record_keeping import merged

GVK = {
    "PropagationPolicy": ("policy.karmada.io", "v1alpha1"),
    "ClusterPropagationPolicy": ("policy.karmada.io", "v1alpha1"),
    "WorkloadRebalancer": ("apps.karmada.io", "v1alpha1"),
    "FlinkDeployment": ("flink.apache.org", "v1beta1"),
    "FlinkSessionJob": ("flink.apache.org", "v1beta1"),
    "FlinkBlueGreenDeployment": ("flink.apache.org", "v1beta1"),
    "Deployment": ("apps", "v1"),
}


def on_ci() -> bool:
    """Running under .ci/run (CI=true): a missing tool or binary a tier needs is a failure there, locally a skip."""
    return os.environ.get("CI", "").lower() in ("true", "1", "yes")


def die_with_parent() -> None:
    """A `preexec_fn`: the child gets SIGKILL when the thread that started it dies without stopping it (Linux's
    PR_SET_PDEATHSIG), so a test process killed outright leaves no apiserver or JVM behind. Start such children from
    the main thread only."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def interruptible() -> None:
    """A `preexec_fn` for a child the test stops with SIGINT, as Ctrl-C would: a shell starts a background job (a CI
    runner's, `make test &`) with SIGINT ignored, every process below inherits that, and Python then never installs
    its KeyboardInterrupt handler."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def serve_command(port: int, cert_dir: Path, *options: str, host: str | None = "127.0.0.1") -> list[str]:
    """`failover-relay serve` under the Python running the tests, on `port` with its certificates in `cert_dir` and
    JSON logs (what the tests read), followed by `options`; `host` None keeps serve's default bind address."""
    return [
        sys.executable,
        "-m",
        "relay.cli",
        "serve",
        *(["--host", host] if host is not None else []),
        "--port",
        str(port),
        "--cert-dir",
        str(cert_dir),
        "--log-format",
        "json",
        *options,
    ]


def admission_review(
    obj: Mapping[str, Any],
    operation: str = "CREATE",
    *,
    uid: str | None = None,
    old: Mapping[str, Any] | None = None,
    dry_run: bool = False,
) -> dict[str, Any]:
    kind = obj["kind"]
    group, version = GVK[kind]
    metadata = obj.get("metadata", {})
    request: dict[str, Any] = {
        "uid": uid or str(uuid.uuid4()),
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": kind.lower() + "s"},
        "name": metadata.get("name", ""),
        "operation": operation,
        "userInfo": {"username": "test"},
        "object": obj,
        "oldObject": old,
        "dryRun": dry_run,
    }
    if metadata.get("namespace"):
        request["namespace"] = metadata["namespace"]
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def client_tls(ca_file: Path) -> ssl.SSLContext:
    """What the apiserver does: verify the server against the caBundle, hostname included."""
    return ssl.create_default_context(cafile=str(ca_file))


def decoded_patch(response: Mapping[str, Any]) -> list[dict[str, Any]]:
    assert response.get("patchType") == "JSONPatch"
    return json.loads(base64.b64decode(response["patch"]))


def flink_policy(**application: Any) -> dict[str, Any]:
    """The Flink example of Karmada's application failover documentation."""
    app: dict[str, Any] = {
        "decisionConditions": {"tolerationSeconds": 60},
        "purgeMode": "Directly",
        "statePreservation": {
            "rules": [{"aliasLabelName": "application.karmada.io/failover-jobid", "jsonPath": "{ .jobStatus.jobId }"}]
        },
    }
    app.update(application)
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": "flink-pp", "namespace": "default"},
        "spec": {
            "propagateDeps": True,
            "resourceSelectors": [
                {"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment", "name": "basic-example"}
            ],
            "failover": {"application": app},
            "placement": {
                "clusterAffinity": {"clusterNames": ["member1", "member2"]},
                "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 1, "minGroups": 1}],
            },
        },
    }


def report(request: Any, tag: str, line: str) -> None:
    """Put a measured number into the test output even under -q, as `[tag] line` (the numbers go into the notes)."""
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.ensure_newline()
            reporter.write_line(f"[{tag}] {line}")


def merge_patch(obj: Mapping[str, Any], patch: Mapping[str, Any] | None) -> dict[str, Any]:
    """Apply a JSON merge patch (RFC 7386) to a copy of `obj`: what the apiserver stores after PATCH. The loop's own
    `merged`, on a deep copy, so that a test may change the result without touching `obj`."""
    return merged(copy.deepcopy(dict(obj)), patch or {})


def replace_object(objects: Any, obj: Mapping[str, Any], *, status: bool = False) -> dict[str, Any]:
    """PUT ``obj`` (or its status subresource) through a `controllers.kube.CustomObjects`: what Karmada's own
    controllers do when they rewrite a binding or reflect member status; the relay itself only patches."""
    r, api, name = objects.resource, objects.api, obj["metadata"]["name"]
    if r.namespaced:
        namespace = obj["metadata"]["namespace"]
        if status:
            return api.replace_namespaced_custom_object_status(r.group, r.version, namespace, r.plural, name, obj)
        return api.replace_namespaced_custom_object(r.group, r.version, namespace, r.plural, name, obj)
    if status:
        return api.replace_cluster_custom_object_status(r.group, r.version, r.plural, name, obj)
    return api.replace_cluster_custom_object(r.group, r.version, r.plural, name, obj)
