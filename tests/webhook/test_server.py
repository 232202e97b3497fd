"""The admission server as it runs: RelayServer over real TLS on a random port, called like the apiserver calls it.

The client verifies the server against the generated CA with hostname checking on, so a wrong SAN or an unloaded
certificate fails these tests the way it would fail a real apiserver.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import platform
import ssl
import tomllib
import warnings
from collections.abc import AsyncIterator
from datetime import UTC
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from relay.serve import RelayServer
from relay.settings import Settings, apply
from tests.admission_reviews import admission_review, decoded_patch
from tests.policies import flink_policy
from tests.tls_clients import client_tls

SMALL_BODY_LIMIT = 64 * 1024

VERSION = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]["version"]


@pytest.fixture
async def relay(tmp_path: Path) -> AsyncIterator[RelayServer]:
    server = RelayServer(Settings(port=0, cert_dir=tmp_path / "certs", max_body_bytes=SMALL_BODY_LIMIT))
    await server.start()
    yield server
    await server.stop()


@contextlib.asynccontextmanager
async def session_for(relay: RelayServer) -> AsyncIterator[aiohttp.ClientSession]:
    """A client that verifies the relay's certificate by name, as the apiserver does."""
    assert relay.files.ca_file is not None
    connector = aiohttp.TCPConnector(ssl=client_tls(relay.files.ca_file))
    async with aiohttp.ClientSession(
        base_url=relay.url.replace("127.0.0.1", "localhost"), connector=connector
    ) as session:
        yield session


@pytest.fixture
async def client(relay: RelayServer) -> AsyncIterator[aiohttp.ClientSession]:
    async with session_for(relay) as session:
        yield session


async def post_review(client: aiohttp.ClientSession, endpoint: str, review: Any) -> dict[str, Any]:
    async with client.post(endpoint, json=review) as response:
        assert response.status == 200, await response.text()
        body = await response.json()
    assert body["apiVersion"] == "admission.k8s.io/v1"
    assert body["kind"] == "AdmissionReview"
    return body["response"]


async def test_validate_allows_the_documented_flink_policy(client: aiohttp.ClientSession) -> None:
    review = admission_review(flink_policy())
    response = await post_review(client, "/validate", review)
    assert response == {"uid": review["request"]["uid"], "allowed": True}


async def test_validate_denies_with_the_field_path_and_a_fix(client: aiohttp.ClientSession) -> None:
    review = admission_review(flink_policy(purgeMode="Gracefully"))
    response = await post_review(client, "/validate", review)
    assert response["allowed"] is False
    assert response["uid"] == review["request"]["uid"]
    message = response["status"]["message"]
    assert "spec.failover.application.statePreservation" in message
    assert "set purgeMode: Directly" in message
    assert response["status"]["code"] == 403


async def test_validate_warns_on_legacy_purge_mode(client: aiohttp.ClientSession) -> None:
    response = await post_review(client, "/validate", admission_review(flink_policy(purgeMode="Immediately")))
    assert response["allowed"] is True
    assert len(response["warnings"]) == 1
    assert "Immediately is a legacy name" in response["warnings"][0]
    assert all(len(warning) <= 120 for warning in response["warnings"])


async def test_update_is_validated_like_create(client: aiohttp.ClientSession) -> None:
    policy = flink_policy()
    broken = flink_policy(purgeMode="Sometimes")
    response = await post_review(client, "/validate", admission_review(broken, "UPDATE", old=policy))
    assert response["allowed"] is False
    assert "unknown purge mode 'Sometimes'" in response["status"]["message"]


async def test_mutate_returns_karmada_defaults_as_json_patch(client: aiohttp.ClientSession) -> None:
    policy = flink_policy()
    application = policy["spec"]["failover"]["application"]
    del application["decisionConditions"], application["purgeMode"], application["statePreservation"]
    response = await post_review(client, "/mutate", admission_review(policy))
    assert response["allowed"] is True
    assert decoded_patch(response) == [
        {"op": "add", "path": "/spec/failover/application/decisionConditions", "value": {"tolerationSeconds": 300}},
        {"op": "add", "path": "/spec/failover/application/purgeMode", "value": "Gracefully"},
        {"op": "add", "path": "/spec/failover/application/gracePeriodSeconds", "value": 600},
    ]


async def test_mutate_defaults_in_the_legacy_spelling_when_configured(tmp_path: Path) -> None:
    settings = apply(Settings(port=0, cert_dir=tmp_path / "certs"), {"controllers.purgeModeSpelling": "legacy"})
    relay = RelayServer(settings)
    await relay.start()
    try:
        async with session_for(relay) as client:
            policy = flink_policy()
            del policy["spec"]["failover"]["application"]["purgeMode"]
            response = await post_review(client, "/mutate", admission_review(policy))
    finally:
        await relay.stop()
    assert {"op": "add", "path": "/spec/failover/application/purgeMode", "value": "Graciously"} in decoded_patch(
        response
    )


async def test_mutate_of_a_complete_policy_carries_no_patch(client: aiohttp.ClientSession) -> None:
    response = await post_review(client, "/mutate", admission_review(flink_policy()))
    assert "patch" not in response and "patchType" not in response
    assert response["allowed"] is True


async def test_kinds_we_do_not_handle_are_allowed_untouched(client: aiohttp.ClientSession) -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "a"}}
    for endpoint in ("/validate", "/mutate"):
        response = await post_review(client, endpoint, admission_review(deployment))
        assert response["allowed"] is True and "patch" not in response


async def test_delete_is_not_judged(client: aiohttp.ClientSession) -> None:
    review = admission_review(flink_policy(purgeMode="Sometimes"), "DELETE")
    review["request"]["oldObject"], review["request"]["object"] = review["request"]["object"], None
    assert (await post_review(client, "/validate", review))["allowed"] is True


async def test_rebalancer_with_duplicate_workloads_is_denied(client: aiohttp.ClientSession) -> None:
    workload = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "demo", "namespace": "default"}
    rebalancer = {
        "apiVersion": "apps.karmada.io/v1alpha1",
        "kind": "WorkloadRebalancer",
        "metadata": {"name": "demo"},
        "spec": {"workloads": [workload, dict(workload)]},
    }
    response = await post_review(client, "/validate", admission_review(rebalancer))
    assert response["allowed"] is False
    assert "spec.workloads[1]" in response["status"]["message"]


@pytest.mark.parametrize(
    ("body", "content_type", "status", "reason"),
    [
        (b"", "application/json", 400, "request body is empty"),
        (b"{not json", "application/json", 400, "not JSON"),
        (b"[1, 2]", "application/json", 400, "not a JSON object"),
        (
            json.dumps(
                {"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": {"uid": "x"}}
            ).encode(),
            "application/json",
            400,
            "v1beta1",
        ),
        (
            json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}).encode(),
            "application/json",
            400,
            "request is missing",
        ),
        (
            json.dumps(
                {
                    "apiVersion": "admission.k8s.io/v1",
                    "kind": "AdmissionReview",
                    "request": {"kind": {"group": "", "version": "v1", "kind": "Pod"}},
                }
            ).encode(),
            "application/json",
            400,
            "request.uid",
        ),
        (b"[" * 30_000 + b"]" * 30_000, "application/json", 400, "nests deeper"),
        (b"{}", "text/plain", 415, "application/json"),
    ],
)
async def test_malformed_requests_get_a_4xx_with_a_reason(
    client: aiohttp.ClientSession, body: bytes, content_type: str, status: int, reason: str
) -> None:
    async with client.post("/validate", data=body, headers={"Content-Type": content_type}) as response:
        assert response.status == status
        text = await response.text()
    assert reason in text
    assert text.count("\n") == 1  # one line


async def test_oversized_body_is_refused_and_the_server_keeps_serving(client: aiohttp.ClientSession) -> None:
    policy = flink_policy()
    policy["metadata"]["annotations"] = {"padding": "x" * (SMALL_BODY_LIMIT + 1)}
    async with client.post("/validate", json=admission_review(policy)) as response:
        assert response.status == 413
        assert "exceeds the limit" in await response.text()
    assert (await post_review(client, "/validate", admission_review(flink_policy())))["allowed"] is True


async def test_wrong_types_are_denied_with_the_path_not_an_error(client: aiohttp.ClientSession) -> None:
    policy = flink_policy()
    policy["spec"]["failover"]["application"]["decisionConditions"] = {"tolerationSeconds": "soon"}
    response = await post_review(client, "/validate", admission_review(policy))
    assert response["allowed"] is False
    assert "spec.failover.application.decisionConditions.tolerationSeconds" in response["status"]["message"]


async def test_health_readiness_and_metrics(client: aiohttp.ClientSession, relay: RelayServer) -> None:
    async with client.get("/healthz") as response:
        assert response.status == 200
    async with client.get("/readyz") as response:
        assert response.status == 200, await response.text()
    await post_review(client, "/validate", admission_review(flink_policy(purgeMode="Gracefully")))
    async with client.get("/metrics") as response:
        assert response.status == 200
        exposition = await response.text()
    assert (
        'failover_relay_admission_requests_total{endpoint="validate",kind="PropagationPolicy",verdict="denied"} 1.0'
    ) in exposition
    assert "failover_relay_admission_latency_seconds_bucket" in exposition
    assert "failover_relay_admission_requests_in_flight" in exposition
    build = f'failover_relay_build_info{{python="{platform.python_version()}",version="{VERSION}"}} 1.0'
    assert build in exposition
    relay.readiness.shutting_down = True
    async with client.get("/readyz") as response:
        assert response.status == 503
        assert "shutting down" in await response.text()


async def test_metrics_name_only_served_kinds_and_count_requests_in_flight(
    client: aiohttp.ClientSession, relay: RelayServer
) -> None:
    for kind in ("MadeUpKind1", "MadeUpKind2"):
        review = admission_review({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}})
        review["request"]["kind"]["kind"] = kind
        assert (await post_review(client, "/validate", review))["allowed"] is True
    relay.metrics.requests_in_flight += 3  # as if three reviews were being served during the scrape
    async with client.get("/metrics") as response:
        exposition = await response.text()
    relay.metrics.requests_in_flight -= 3
    assert (
        'failover_relay_admission_requests_total{endpoint="validate",kind="other",verdict="allowed"} 2.0'
    ) in exposition
    assert "MadeUpKind" not in exposition
    assert "failover_relay_admission_requests_in_flight 3.0" in exposition


async def test_readiness_fails_when_the_listener_is_gone(relay: RelayServer, tmp_path: Path) -> None:
    assert await relay.readiness.problems() == ()
    await relay.stop()
    relay.readiness.shutting_down = False
    relay.readiness._cached = None
    problems = await relay.readiness.problems()
    assert problems and "does not answer" in problems[0]


async def test_tls_below_1_2_is_refused(relay: RelayServer) -> None:
    context = client_tls(relay.files.ca_file)  # type: ignore[arg-type]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # TLS 1.1 is deprecated: that is the point
        context.minimum_version = context.maximum_version = ssl.TLSVersion.TLSv1_1
    with contextlib.suppress(ssl.SSLError):
        context.set_ciphers("ALL:@SECLEVEL=0")
    with pytest.raises((ssl.SSLError, ConnectionError)):
        await asyncio.open_connection("127.0.0.1", relay.port, ssl=context, server_hostname="localhost")


async def test_certificate_names_cover_loopback_addresses(relay: RelayServer) -> None:
    context = client_tls(relay.files.ca_file)  # type: ignore[arg-type]
    for server_hostname in ("localhost", "127.0.0.1"):
        _, writer = await asyncio.open_connection("127.0.0.1", relay.port, ssl=context, server_hostname=server_hostname)
        writer.close()


async def test_mtls_refuses_admissions_without_a_client_certificate(tmp_path: Path) -> None:
    from datetime import datetime, timedelta

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    from certs.authority import generate_ca

    now = datetime.now(UTC)
    client_ca = generate_ca("apiserver-client-ca", now, timedelta(days=1))
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")])
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(client_ca.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=1))
        .not_valid_after(now + timedelta(hours=1))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(client_ca.private_key, hashes.SHA256())
    )
    (tmp_path / "client-ca.crt").write_bytes(client_ca.certificate_pem)
    (tmp_path / "client.pem").write_bytes(
        certificate.public_bytes(serialization.Encoding.PEM)
        + key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    relay = RelayServer(Settings(port=0, cert_dir=tmp_path / "certs", client_ca_file=tmp_path / "client-ca.crt"))
    await relay.start()
    try:
        review = admission_review(flink_policy())
        anonymous = client_tls(relay.files.ca_file)  # type: ignore[arg-type]
        with_certificate = client_tls(relay.files.ca_file)  # type: ignore[arg-type]
        with_certificate.load_cert_chain(tmp_path / "client.pem")
        url = relay.url.replace("127.0.0.1", "localhost")
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=anonymous)) as session:
            async with session.post(f"{url}/validate", json=review) as response:
                assert response.status == 401
                assert "client certificate" in await response.text()
            # Intended (docs/security.md): the kubelet's probes send no client certificate, and /metrics carries
            # counts only; all three answer without one.
            for path in ("/readyz", "/healthz", "/metrics"):
                async with session.get(f"{url}{path}") as response:
                    assert response.status == 200, path
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=with_certificate)) as session:
            async with session.post(f"{url}/validate", json=review) as response:
                assert response.status == 200
                assert (await response.json())["response"]["allowed"] is True
    finally:
        await relay.stop()
