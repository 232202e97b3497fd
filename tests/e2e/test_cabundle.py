"""controllers/cabundle.py against a real kube-apiserver: stale caBundles are rewritten to trust the relay's CA, a
second round writes nothing, and the apiserver really reaches the relay with the written bundle."""

from __future__ import annotations

import asyncio
import base64
import json
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from prometheus_client import CollectorRegistry

from certs.authority import generate_ca
from certs.serving import ensure_certificates
from certs.store import read_ca_bundle
from controllers.access.kube import load_api_client
from controllers.cabundle import (
    CERT_MANAGER,
    CERT_MANAGER_INJECT_ANNOTATION,
    MISSING,
    MUTATING,
    PATCHED,
    UNCHANGED,
    VALIDATING,
    CaBundleInjector,
    Target,
)
from tests.e2e.objects import deployment_ref, rebalancer
from tests.e2e.relay_process import RelayProcess
from tests.envtest import ControlPlane

pytestmark = pytest.mark.envtest

NOW = datetime.now(UTC)
# A group no test creates objects of: these configurations are never called, only patched.
UNUSED_RULE = {
    "apiGroups": ["cabundle.e2e.failover-relay.io"],
    "apiVersions": ["v1"],
    "operations": ["CREATE"],
    "resources": ["nothings"],
    "scope": "*",
}
TRUST_DEADLINE_SECONDS = 20.0


def _pem(certificate_pem: bytes) -> str:
    return base64.b64encode(certificate_pem).decode("ascii")


def _configuration(
    kind: str,
    name: str,
    ca_bundle: str | None,
    url: str,
    rule: dict[str, Any],
    failure_policy: str = "Ignore",
    webhooks: int = 2,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    entries = []
    for index in range(webhooks):
        client_config: dict[str, Any] = {"url": f"{url}/validate"}
        if ca_bundle is not None:
            client_config["caBundle"] = ca_bundle
        entries.append(
            {
                "name": f"w{index}.cabundle.e2e.failover-relay.io",
                "admissionReviewVersions": ["v1"],
                "clientConfig": client_config,
                "rules": [rule],
                "failurePolicy": failure_policy,
                "sideEffects": "None",
                "timeoutSeconds": 5,
            }
        )
    metadata: dict[str, Any] = {"name": name}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": metadata, "webhooks": entries}


def _get(plane: ControlPlane, kind: str, name: str) -> dict[str, Any]:
    return json.loads(plane.kubectl("get", kind.lower(), name, "-o", "json").stdout)


def _bundles(plane: ControlPlane, kind: str, name: str) -> list[list[x509.Certificate]]:
    return [
        x509.load_pem_x509_certificates(base64.b64decode(webhook["clientConfig"]["caBundle"]))
        for webhook in _get(plane, kind, name)["webhooks"]
    ]


def _cert_dir(tmp_path: Path, name: str) -> Path:
    directory = tmp_path / name
    ensure_certificates(directory, None, None, NOW)
    return directory


def _own(cert_dir: Path) -> set[bytes]:
    return {
        c.fingerprint(c.signature_hash_algorithm) for c in x509.load_pem_x509_certificates(read_ca_bundle(cert_dir))
    }


def _fingerprints(certificates: list[x509.Certificate]) -> set[bytes]:
    return {c.fingerprint(c.signature_hash_algorithm) for c in certificates}


@pytest.fixture
def configurations(control_plane: ControlPlane) -> Iterator[list[tuple[str, str]]]:
    """(kind, name) of every configuration a test creates; all deleted afterwards."""
    created: list[tuple[str, str]] = []
    yield created
    for kind, name in created:
        control_plane.kubectl("delete", kind.lower(), name, "--ignore-not-found", check=False)


def _create(plane: ControlPlane, created: list[tuple[str, str]], configuration: dict[str, Any]) -> None:
    plane.kubectl("create", "-f", "-", input=json.dumps(configuration))
    created.append((configuration["kind"], configuration["metadata"]["name"]))


def _injector(plane: ControlPlane, cert_dir: Path, name: str) -> CaBundleInjector:
    return CaBundleInjector(
        load_api_client(plane.kubeconfig_path),
        cert_dir,
        CollectorRegistry(),
        targets=(Target(VALIDATING, name), Target(MUTATING, name)),
    )


async def test_stale_bundles_are_rewritten_once(
    control_plane: ControlPlane, configurations: list[tuple[str, str]], tmp_path: Path
) -> None:
    name = f"cabundle-e2e-{uuid.uuid4().hex[:8]}"
    cert_dir = _cert_dir(tmp_path, "relay")
    expired = generate_ca("expired-ca", NOW - timedelta(days=400), timedelta(days=365))
    # Validating: an expired CA (a relay gone for a year); mutating: bytes that are no certificate at all.
    _create(
        control_plane,
        configurations,
        _configuration(
            "ValidatingWebhookConfiguration", name, _pem(expired.certificate_pem), "https://127.0.0.1:9", UNUSED_RULE
        ),
    )
    _create(
        control_plane,
        configurations,
        _configuration(
            "MutatingWebhookConfiguration", name, _pem(b"not a certificate"), "https://127.0.0.1:9", UNUSED_RULE
        ),
    )
    injector = _injector(control_plane, cert_dir, name)

    first = await injector.sync_once()

    assert first == {f"{VALIDATING}/{name}": PATCHED, f"{MUTATING}/{name}": PATCHED}
    for kind in (VALIDATING, MUTATING):
        for bundle in _bundles(control_plane, kind, name):
            assert _fingerprints(bundle) == _own(cert_dir)  # the expired CA and the garbage are gone
    versions = {kind: _get(control_plane, kind, name)["metadata"]["resourceVersion"] for kind in (VALIDATING, MUTATING)}

    second = await injector.sync_once()

    assert second == {f"{VALIDATING}/{name}": UNCHANGED, f"{MUTATING}/{name}": UNCHANGED}
    assert {
        kind: _get(control_plane, kind, name)["metadata"]["resourceVersion"] for kind in (VALIDATING, MUTATING)
    } == versions
    samples = {
        s.labels["result"]: s.value
        for metric in injector.metrics.syncs.collect()
        for s in metric.samples
        if s.name.endswith("_total") and s.labels["configuration"] == f"{VALIDATING}/{name}"
    }
    assert samples == {PATCHED: 1.0, UNCHANGED: 1.0}


async def test_replicas_with_their_own_cas_converge_on_a_bundle_trusting_both(
    control_plane: ControlPlane, configurations: list[tuple[str, str]], tmp_path: Path
) -> None:
    name = f"cabundle-e2e-{uuid.uuid4().hex[:8]}"
    for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
        _create(control_plane, configurations, _configuration(kind, name, None, "https://127.0.0.1:9", UNUSED_RULE))
    replica_a, replica_b = (_injector(control_plane, _cert_dir(tmp_path, replica), name) for replica in "ab")

    rounds = 0
    while rounds < 5:
        rounds += 1
        results = await asyncio.gather(replica_a.sync_once(), replica_b.sync_once())
        if all(result == UNCHANGED for replica in results for result in replica.values()):
            break

    assert rounds <= 4, "the replicas kept rewriting each other's caBundle"
    both = _own(replica_a.cert_dir) | _own(replica_b.cert_dir)
    for kind in (VALIDATING, MUTATING):
        for bundle in _bundles(control_plane, kind, name):
            assert _fingerprints(bundle) == both


async def test_cert_manager_and_missing_configurations_are_left_alone(
    control_plane: ControlPlane, configurations: list[tuple[str, str]], tmp_path: Path
) -> None:
    name = f"cabundle-e2e-{uuid.uuid4().hex[:8]}"
    stale = _pem(generate_ca("cert-manager-ca", NOW, timedelta(days=30)).certificate_pem)
    _create(
        control_plane,
        configurations,
        _configuration(
            "ValidatingWebhookConfiguration",
            name,
            stale,
            "https://127.0.0.1:9",
            UNUSED_RULE,
            annotations={CERT_MANAGER_INJECT_ANNOTATION: "failover-relay/failover-relay"},
        ),
    )
    before = _get(control_plane, VALIDATING, name)["metadata"]["resourceVersion"]

    results = await _injector(control_plane, _cert_dir(tmp_path, "relay"), name).sync_once()

    assert results == {f"{VALIDATING}/{name}": CERT_MANAGER, f"{MUTATING}/{name}": MISSING}
    assert _get(control_plane, VALIDATING, name)["metadata"]["resourceVersion"] == before


async def test_the_apiserver_reaches_the_relay_once_the_bundle_is_patched(
    control_plane: ControlPlane, relay: RelayProcess, configurations: list[tuple[str, str]]
) -> None:
    name = f"cabundle-e2e-{uuid.uuid4().hex[:8]}"
    other_ca = _pem(generate_ca("some-other-ca", NOW, timedelta(days=30)).certificate_pem)
    rule = {
        "apiGroups": ["apps.karmada.io"],
        "apiVersions": ["v1alpha1"],
        "operations": ["CREATE"],
        "resources": ["workloadrebalancers"],
        "scope": "Cluster",
    }
    _create(
        control_plane,
        configurations,
        _configuration(
            "ValidatingWebhookConfiguration", name, other_ca, relay.url, rule, failure_policy="Fail", webhooks=1
        ),
    )
    probe = json.dumps(rebalancer(f"cabundle-probe-{uuid.uuid4().hex[:8]}", deployment_ref("app", "default")))

    def dry_run() -> Any:
        return control_plane.kubectl("create", "--dry-run=server", "-f", "-", input=probe, check=False)

    deadline = time.monotonic() + TRUST_DEADLINE_SECONDS
    while (  # noqa: ASYNC110  polls the apiserver through kubectl: there is no event to wait on
        "x509" not in (refused := dry_run()).stderr and time.monotonic() < deadline
    ):
        await asyncio.sleep(0.2)  # the apiserver learns of the new configuration through an informer
    assert refused.returncode != 0 and "x509" in refused.stderr, refused.stderr

    results = await _injector(control_plane, relay.cert_dir, name).sync_once()
    assert results[f"{VALIDATING}/{name}"] == PATCHED

    answered = relay.reviews_answered("validate")
    while (  # noqa: ASYNC110  polls the apiserver through kubectl: there is no event to wait on
        (accepted := dry_run()).returncode != 0 and time.monotonic() < deadline + TRUST_DEADLINE_SECONDS
    ):
        await asyncio.sleep(0.2)
    assert accepted.returncode == 0, accepted.stderr
    assert relay.reviews_answered("validate") > answered
