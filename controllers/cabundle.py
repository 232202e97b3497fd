"""Keep the caBundle of our webhook configurations trusting the relay's CA.

Every replica runs this (it is not behind the Lease): each self-managing replica has its own CA in its own cert dir
(an emptyDir), so each must make sure the apiserver trusts *its* CA. That is why the bundle written is a union, not
a copy of one replica's ``ca.crt``:

- our certificates (``ca.crt``, which holds the new and the previous CA during a rotation: the overlap rule) are
  always in it;
- certificates already in the caBundle (another replica's CA) stay while they have not expired, newest first, up to
  ``MAX_BUNDLE_CERTIFICATES`` in all, so the CAs of replicas that are long gone do not pile up for a year.

The bundle is written in a canonical order (newest first, then by fingerprint), so replicas that agree on the set of
certificates produce the same bytes: the same bytes mean no write, and two replicas never flip a caBundle back and
forth. A write is a JSON patch that first tests the resourceVersion it was computed from, so a concurrent write by
another replica fails (409/422) instead of being lost, and is merged on the next round.

A configuration carrying cert-manager's ``cert-manager.io/inject-ca-from`` annotation is left to cert-manager.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import structlog
import urllib3
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.serialization import Encoding
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from prometheus_client import CollectorRegistry, Counter
from urllib3.exceptions import HTTPError

from certs.store import CertificateError, read_ca_bundle
from controllers.access.kube import DEFAULT_REQUEST_TIMEOUT_SECONDS, conflict, not_found

log = structlog.get_logger("failover_relay.cabundle")

VALIDATING = "ValidatingWebhookConfiguration"
MUTATING = "MutatingWebhookConfiguration"
DEFAULT_CONFIGURATION_NAME = "failover-relay"
CERT_MANAGER_INJECT_ANNOTATION = "cert-manager.io/inject-ca-from"
# Often enough that a new replica is trusted well before its first rotation matters (rotation happens 30 days before
# expiry), and cheap: one GET per configuration per minute per replica.
SYNC_INTERVAL_SECONDS = 60.0
# Two replicas plus rollouts: each restart of a self-managing replica brings a new CA. Sixteen keeps every live
# replica's CA (and its previous one during a rotation) with room to spare, and bounds the size of the bundle.
MAX_BUNDLE_CERTIFICATES = 16
# Outcomes, as the `result` label of the metric.
UNCHANGED, PATCHED, CONFLICT, MISSING, CERT_MANAGER, ERROR = (
    "unchanged",
    "patched",
    "conflict",
    "missing",
    "cert-manager",
    "error",
)


@dataclass(frozen=True)
class Target:
    kind: str  # VALIDATING or MUTATING
    name: str


def default_targets(
    validating: str = DEFAULT_CONFIGURATION_NAME, mutating: str = DEFAULT_CONFIGURATION_NAME
) -> tuple[Target, ...]:
    return Target(VALIDATING, validating), Target(MUTATING, mutating)


class CaBundleMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.syncs = Counter(
            "failover_relay_cabundle_syncs_total",
            "caBundle checks of a webhook configuration, by configuration and result (unchanged, patched, "
            "conflict, missing, cert-manager, error).",
            ("configuration", "result"),
            registry=registry,
        )


def parse_bundle(data: bytes) -> list[x509.Certificate]:
    """The certificates of a caBundle; a bundle that does not parse counts as empty (it is rewritten)."""
    try:
        return x509.load_pem_x509_certificates(data)
    except ValueError:
        return []


def desired_bundle(
    own: Sequence[x509.Certificate],
    current: Sequence[x509.Certificate],
    now: datetime,
    limit: int = MAX_BUNDLE_CERTIFICATES,
) -> list[x509.Certificate]:
    """Our certificates, plus the unexpired others of ``current`` (newest first) up to ``limit``; canonical order."""
    by_fingerprint = {_fingerprint(certificate): certificate for certificate in own}
    others = sorted(
        (
            certificate
            for certificate in current
            if _fingerprint(certificate) not in by_fingerprint and certificate.not_valid_after_utc > now
        ),
        key=_newest_first,
    )
    for certificate in others[: max(0, limit - len(by_fingerprint))]:
        by_fingerprint.setdefault(_fingerprint(certificate), certificate)
    return sorted(by_fingerprint.values(), key=_newest_first)


def pem(certificates: Sequence[x509.Certificate]) -> bytes:
    return b"".join(certificate.public_bytes(Encoding.PEM) for certificate in certificates)


def bundle_patch(configuration: dict[str, Any], bundle: bytes) -> list[dict[str, Any]]:
    """The JSON patch that sets every webhook's caBundle to ``bundle``, or [] when they all hold it already.

    It starts with a test of the resourceVersion (and of each webhook's name), so it applies only to the object it
    was computed from.
    """
    encoded = base64.b64encode(bundle).decode("ascii")
    webhooks = configuration.get("webhooks") or []
    operations: list[dict[str, Any]] = []
    for index, webhook in enumerate(webhooks):
        if (webhook.get("clientConfig") or {}).get("caBundle") == encoded:
            continue
        operations += [
            {"op": "test", "path": f"/webhooks/{index}/name", "value": webhook.get("name")},
            {"op": "add", "path": f"/webhooks/{index}/clientConfig/caBundle", "value": encoded},
        ]
    if not operations:
        return []
    resource_version = (configuration.get("metadata") or {}).get("resourceVersion")
    return [{"op": "test", "path": "/metadata/resourceVersion", "value": resource_version}, *operations]


class CaBundleInjector:
    """Read our CA from ``cert_dir`` and make the webhook configurations trust it; ``run()`` repeats every minute."""

    def __init__(
        self,
        api_client: client.ApiClient,
        cert_dir: Path,
        registry: CollectorRegistry,
        targets: Sequence[Target] = default_targets(),
        interval_seconds: float = SYNC_INTERVAL_SECONDS,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.api = client.AdmissionregistrationV1Api(api_client)
        self.cert_dir = cert_dir
        self.targets = tuple(targets)
        self.interval_seconds = interval_seconds
        self.clock = clock
        self.metrics = CaBundleMetrics(registry)

    async def run(self) -> None:
        """Until cancelled: sync now, then every ``interval_seconds``. A failed round is logged and retried."""
        while True:
            await self.sync_once()
            await asyncio.sleep(self.interval_seconds)

    async def sync_once(self) -> dict[str, str]:
        """One round over every target; returns ``{"Kind/name": result}``."""
        try:
            own = parse_bundle(await asyncio.to_thread(read_ca_bundle, self.cert_dir))
        except CertificateError as error:
            log.warning("cabundle_source_unreadable", error=str(error))
            return {}
        if not own:
            log.warning("cabundle_source_empty", cert_dir=str(self.cert_dir))
            return {}
        results = {}
        for target in self.targets:
            label = f"{target.kind}/{target.name}"
            try:
                result = await asyncio.to_thread(self._sync, target, own)
            except (ApiException, HTTPError, OSError, ValueError) as error:
                log.warning(
                    "cabundle_sync_failed",
                    configuration=label,
                    status=getattr(error, "status", None),
                    error=type(error).__name__,
                )
                result = ERROR
            self.metrics.syncs.labels(label, result).inc()
            results[label] = result
        return results

    def _sync(self, target: Target, own: Sequence[x509.Certificate]) -> str:
        label = f"{target.kind}/{target.name}"
        try:
            configuration = self._read(target)
        except ApiException as error:
            if not_found(error):
                log.info("cabundle_configuration_missing", configuration=label)
                return MISSING
            raise
        annotations = (configuration.get("metadata") or {}).get("annotations") or {}
        if CERT_MANAGER_INJECT_ANNOTATION in annotations:
            return CERT_MANAGER
        now = self.clock()
        current: dict[bytes, x509.Certificate] = {}
        for webhook in configuration.get("webhooks") or []:
            for certificate in parse_bundle(_decoded((webhook.get("clientConfig") or {}).get("caBundle"))):
                current.setdefault(_fingerprint(certificate), certificate)
        patch = bundle_patch(configuration, pem(desired_bundle(own, list(current.values()), now)))
        if not patch:
            return UNCHANGED
        try:
            self._patch(target, patch)
        except ApiException as error:
            # 409: the object moved on; 422: a JSON-patch test failed (same cause). The next round merges again.
            if conflict(error) or error.status == 422:
                log.info("cabundle_conflict", configuration=label, status=error.status)
                return CONFLICT
            if not_found(error):
                return MISSING
            raise
        log.info("cabundle_patched", configuration=label, webhooks=(len(patch) - 1) // 2)
        return PATCHED

    def _read(self, target: Target) -> dict[str, Any]:
        read = (
            self.api.read_validating_webhook_configuration
            if target.kind == VALIDATING
            else self.api.read_mutating_webhook_configuration
        )
        # With _preload_content=False the client returns the raw urllib3 response, whatever its annotation says.
        response = cast(
            "urllib3.HTTPResponse",
            read(target.name, _preload_content=False, _request_timeout=DEFAULT_REQUEST_TIMEOUT_SECONDS),
        )
        return json.loads(response.data)

    def _patch(self, target: Target, patch: list[dict[str, Any]]) -> None:
        write = (
            self.api.patch_validating_webhook_configuration
            if target.kind == VALIDATING
            else self.api.patch_mutating_webhook_configuration
        )
        write(
            target.name,
            patch,
            _content_type="application/json-patch+json",
            _preload_content=False,
            _request_timeout=DEFAULT_REQUEST_TIMEOUT_SECONDS,
        )


def _decoded(value: Any) -> bytes:
    if not isinstance(value, str) or not value:
        return b""
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return b""


def _fingerprint(certificate: x509.Certificate) -> bytes:
    return certificate.fingerprint(hashes.SHA256())


def _newest_first(certificate: x509.Certificate) -> tuple[float, bytes]:
    return -certificate.not_valid_before_utc.timestamp(), _fingerprint(certificate)
