"""Prometheus metrics of the admission server.

Each server owns its registry (no process-global state), so several servers can live in one test process.
Names follow controller-runtime's webhook metrics, prefixed with our name.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

# Buckets from 0.25 ms: a review costs ~0.1-0.5 ms of CPU; the top buckets reach the 5 s mutate timeout.
LATENCY_BUCKETS = (0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class AdmissionMetrics:
    content_type = CONTENT_TYPE_LATEST

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.requests = Counter(
            "failover_relay_admission_requests_total",
            "AdmissionReviews answered, by endpoint, kind and verdict (allowed, patched, denied, error).",
            ("endpoint", "kind", "verdict"),
            registry=self.registry,
        )
        self.latency = Histogram(
            "failover_relay_admission_latency_seconds",
            "Time from reading the request to writing the answer.",
            ("endpoint",),
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        # A plain count read at scrape time: requests are served on one event loop, so it needs no lock.
        self.requests_in_flight = 0
        self.in_flight = Gauge(
            "failover_relay_admission_requests_in_flight", "Requests being served now.", registry=self.registry
        )
        self.in_flight.set_function(lambda: self.requests_in_flight)
        self.build_info = Gauge(
            "failover_relay_build_info",
            "1, labelled with the relay's version and the Python it runs on: which replica runs what, in a rollout.",
            ("version", "python"),
            registry=self.registry,
        )
        self._answered: dict[tuple[str, str, str], tuple[Counter, Histogram]] = {}
        self.errors = Counter(
            "failover_relay_admission_errors_total",
            "Requests answered with a 4xx (bad request) or an internal error, by endpoint and reason.",
            ("endpoint", "reason"),
            registry=self.registry,
        )
        self.savepoint_lookups = Counter(
            "failover_relay_savepoint_lookups_total",
            "Savepoint injections by outcome: found, not-found, timeout, storage-error, invalid-job-id, "
            "carried-forward (UPDATE keeping the path set at CREATE).",
            ("outcome",),
            registry=self.registry,
        )
        self._lookups: dict[str, Counter] = {}
        self.work_labels = Counter(
            "failover_relay_work_labels_total",
            "Work admissions of the preserved-state mutation, by outcome (labelled, unchanged, not-applicable, "
            "binding-unreadable).",
            ("outcome",),
            registry=self.registry,
        )
        self.certificate_repairs = Counter(
            "failover_relay_certificate_repairs_total",
            "Damage found in a cert dir of our own (lost or corrupt ca.crt or ca.key) and repaired; each is also "
            "logged as an error naming the file.",
            registry=self.registry,
        )
        self.certificate_renewal_errors = Counter(
            "failover_relay_certificate_renewal_errors_total",
            "Periodic certificate checks that failed to renew or read the serving certificate (each also logged as "
            "certificate_renewal_failed); the loaded certificate serves on until it expires.",
            registry=self.registry,
        )
        self.connections_open = Gauge(
            "failover_relay_connections_open",
            "TLS connections admitted and not yet closed (handshaking or served).",
            registry=self.registry,
        )
        self.connections_refused = Counter(
            "failover_relay_connections_refused_total",
            "Connections closed before serving them, by reason (max-connections, max-connections-per-peer, "
            "handshake-timeout, handshake-failed), and idle ones closed to make room in a full server (evicted).",
            ("reason",),
            registry=self.registry,
        )
        self.certificate_expiry = Gauge(
            "failover_relay_certificate_expiry_timestamp_seconds",
            "Unix time at which the serving certificate expires.",
            registry=self.registry,
        )

    def count_answer(self, endpoint: str, kind: str, verdict: str, seconds: float) -> None:
        """One answered review. The labelled children are looked up once per label set: `labels()` validates and
        locks on every call, a measurable share of a review's CPU (docs/benchmarks.md)."""
        key = (endpoint, kind, verdict)
        children = self._answered.get(key)
        if children is None:
            children = self._answered[key] = (self.requests.labels(*key), self.latency.labels(endpoint))
        children[0].inc()
        children[1].observe(seconds)

    def count_savepoint_lookup(self, outcome: str) -> None:
        child = self._lookups.get(outcome)
        if child is None:
            child = self._lookups[outcome] = self.savepoint_lookups.labels(outcome)
        child.inc()

    def count_refused_connection(self, reason: str) -> None:
        self.connections_refused.labels(reason).inc()

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
