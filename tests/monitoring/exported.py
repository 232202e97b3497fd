"""What the relay's /metrics really exports: a relay run in-process, exercised so every family has samples, scraped.

The registry is put together as `failover-relay serve` does it (relay/serve.py, relay/start_controllers.py): the
admission server's metrics, and on the same registry the reconcile loop's (``ReconcileLoop``) and the caBundle
updater's (``CaBundleInjector``). Then, through the real code paths:

- reviews over real TLS: a policy allowed, one denied, a body that is not JSON (an admission error), a
  FlinkDeployment with a job id label whose checkpoint root does not exist (savepoint lookup ``storage-error``);
- a real ``Controller`` of the loop reconciles four keys, one ending ok, one in a conflict, one in an API error and
  one in a crash (each retried once and then ok), as its workers count them;
- the loop's metrics record a workload kept on its last cluster and then moved, and one braked and then released,
  as the binding reconciler does;
- with a kubeconfig naming an apiserver address that refuses connections: a Work whose binding cannot be read
  (``binding-unreadable``), and one round of the caBundle updater (``error``);
- the storm metrics of one workload evicted from a member cluster, restoring and then restored;
- a connection that speaks plain text to the TLS port (refused: ``handshake-failed``).

The scrape (``GET /metrics``) is parsed into ``Series``: the names and labels the alert tests and the dashboard
check use, so a renamed metric or label fails them.
"""

from __future__ import annotations

import asyncio
import json
import socket
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
from kubernetes.client.exceptions import ApiException
from prometheus_client.parser import text_string_to_metric_families

from controllers.access.kube import load_api_client
from controllers.cabundle import CaBundleInjector
from controllers.loop.controller import Controller
from controllers.manager import ReconcileLoop
from failover.core.api import (
    DEFAULT_JOB_ID_LABEL,
    RESOURCE_BINDING_NAME_ANNOTATION,
    RESOURCE_BINDING_NAMESPACE_ANNOTATION,
    RESOURCE_BINDINGS,
    WORKS,
)
from relay.serve import RelayServer
from relay.settings import ControllerSettings, SavepointSettings, Settings
from relay.start_controllers import loop_settings
from tests.admission_reviews import admission_review
from tests.failover.work_builders import work
from tests.policies import flink_policy
from tests.tls_clients import client_tls

JOB_ID = "0123456789abcdef0123456789abcdef"


@dataclass(frozen=True)
class Series:
    name: str
    labels: tuple[tuple[str, str], ...]
    value: float = field(default=0.0, compare=False)  # as scraped

    @property
    def label_dict(self) -> dict[str, str]:
        return dict(self.labels)

    def promql(self, extra: dict[str, str] | None = None) -> str:
        """The series in the notation of promtool's input_series, with target labels added."""
        labels = self.label_dict | (extra or {})
        return self.name + "{" + ", ".join(f'{key}="{value}"' for key, value in sorted(labels.items())) + "}"


def parse(exposition: str) -> list[Series]:
    return [
        Series(sample.name, tuple(sorted(sample.labels.items())), sample.value)
        for family in text_string_to_metric_families(exposition)
        for sample in family.samples
    ]


def flink_deployment() -> dict:
    return {
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkDeployment",
        "metadata": {"name": "scraped", "namespace": "flink", "labels": {DEFAULT_JOB_ID_LABEL: JOB_ID}},
        "spec": {
            "image": "flink:1.17",
            "flinkVersion": "v1_17",
            "job": {"jarURI": "local:///opt/flink/job.jar", "upgradeMode": "stateless"},
        },
    }


def refused_address() -> str:
    """An address where nothing listens: a port bound and closed again."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def unreachable_kubeconfig(path: Path) -> Path:
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "nowhere",
                "clusters": [{"name": "nowhere", "cluster": {"server": refused_address()}}],
                "users": [{"name": "nobody", "user": {"token": "unused"}}],
                "contexts": [{"name": "nowhere", "context": {"cluster": "nowhere", "user": "nobody"}}],
            }
        )
    )
    return path


def work_review() -> dict:
    """A Work in a member's execution namespace, rendered from a ResourceBinding (its annotations name it)."""
    rendered = work(
        flink_deployment(),
        name="scraped",
        annotations={
            RESOURCE_BINDING_NAMESPACE_ANNOTATION: "flink",
            RESOURCE_BINDING_NAME_ANNOTATION: "scraped-flinkdeployment",
        },
    )
    group, version = WORKS.group, WORKS.version
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "5c0a1d2e-0000-4000-8000-000000000001",
            "operation": "CREATE",
            "name": "scraped",
            "namespace": "karmada-es-member1",
            "userInfo": {"username": "test"},
            "object": rendered,
            "oldObject": None,
            "kind": {"group": group, "version": version, "kind": "Work"},
            "resource": {"group": group, "version": version, "resource": WORKS.plural},
        },
    }


async def speak_plain_text(port: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /metrics HTTP/1.1\r\nHost: relay\r\n\r\n")
    await writer.drain()
    await reader.read()
    writer.close()


async def run_controller(loop: ReconcileLoop) -> None:
    """One real Controller of the loop, its workers reconciling keys that end in each result once."""
    failures = {
        "conflicting": ApiException(status=409, reason="Conflict"),
        "api-failing": ApiException(status=500, reason="InternalError"),
        "crashing": RuntimeError("a bug"),
    }
    reconciled: set[str] = set()
    everything_done = asyncio.Event()

    async def reconcile(key: str) -> None:
        failure = failures.pop(key, None)
        if failure is not None:
            raise failure
        reconciled.add(key)
        if reconciled == {"fine", *("conflicting", "api-failing", "crashing")}:
            everything_done.set()

    controller = Controller(RESOURCE_BINDINGS.plural, reconcile, loop.metrics, workers=1)
    for key in ("fine", "conflicting", "api-failing", "crashing"):
        controller.queue.add(key)
    # Its worker alone: the keys are queued by hand instead of by an informer, which would need an apiserver.
    worker = asyncio.create_task(controller._work())
    try:
        await asyncio.wait_for(everything_done.wait(), 10)
    finally:
        await controller.queue.shut_down()
        await asyncio.wait_for(worker, 5)


def storm(loop: ReconcileLoop) -> None:
    """A workload evicted from member1 by the taint manager, seen restoring on member2 and then restored, as the
    binding reconciler hands its phases to the storm metrics."""
    binding = {
        "apiVersion": RESOURCE_BINDINGS.api_version,
        "kind": RESOURCE_BINDINGS.kind,
        "metadata": {"name": "scraped-flinkdeployment", "namespace": "flink", "generation": 2},
        "spec": {
            "clusters": [{"name": "member2", "replicas": 1}],
            "gracefulEvictionTasks": [
                {
                    "fromCluster": "member1",
                    "purgeMode": "Directly",
                    "reason": "TaintUntolerated",
                    "producer": "TaintManager",
                    "creationTimestamp": "2026-11-26T10:00:00Z",
                }
            ],
        },
        "status": {
            "schedulerObservedGeneration": 2,
            "aggregatedStatus": [{"clusterName": "member2", "health": "Unknown"}],
        },
    }
    key, now = (RESOURCE_BINDINGS.kind, "flink/scraped-flinkdeployment"), datetime(2026, 11, 26, 10, 1, tzinfo=UTC)
    loop.metrics.storm.observe(key, binding, ("member2",), now)
    binding["status"]["aggregatedStatus"][0]["health"] = "Healthy"
    loop.metrics.storm.observe(key, binding, ("member2",), now)
    # Its new job's first checkpoint, 41 s after the move, as the binding pipeline's restoration step counts it.
    loop.metrics.restores.labels("member2").observe(41.0)
    # A failback that handed its job over by savepoint, as the failback reconciler counts the move it wrote.
    loop.metrics.planned_moves.labels("member2", "Failback", "savepoint").inc()


async def post(session: aiohttp.ClientSession, path: str, body: bytes) -> None:
    async with session.post(path, data=body, headers={"Content-Type": "application/json"}) as response:
        await response.read()


async def scrape_exercised_relay(tmp_path: Path) -> str:
    kubeconfig = unreachable_kubeconfig(tmp_path / "kubeconfig")
    settings = Settings(
        port=0,
        cert_dir=tmp_path / "certs",
        savepoint=SavepointSettings(checkpoint_root=f"file://{tmp_path / 'no-such-root'}"),
        controllers=ControllerSettings(kubeconfig=str(kubeconfig)),
    )
    relay = RelayServer(settings)
    await relay.start()
    try:
        registry = relay.metrics.registry
        loop = ReconcileLoop(load_api_client(kubeconfig), loop_settings(settings.controllers), registry)
        injector = CaBundleInjector(load_api_client(kubeconfig), settings.cert_dir, registry)
        assert relay.files.ca_file is not None
        connector = aiohttp.TCPConnector(ssl=client_tls(relay.files.ca_file))
        async with aiohttp.ClientSession(
            base_url=relay.url.replace("127.0.0.1", "localhost"), connector=connector
        ) as session:
            await post(session, "/validate", json.dumps(admission_review(flink_policy())).encode())
            await post(
                session, "/validate", json.dumps(admission_review(flink_policy(purgeMode="Gracefully"))).encode()
            )
            await post(session, "/validate", b"not json")
            await post(session, "/mutate", json.dumps(admission_review(flink_deployment())).encode())
            await post(session, "/mutate", json.dumps(work_review()).encode())
            await speak_plain_text(relay.port)
            await run_controller(loop)
            await loop.calls.run(
                "get", dict
            )  # a call on the loop's threads, timed by its name (controllers/access/client.py)
            # What the binding reconciler records for a workload kept on member3 (failover/reconcile/last_cluster.py)
            # that later moved on: the series stays, at 0.
            kept = loop.metrics.kept
            kept.set(("ResourceBinding", "flink/scraped"), ("member3",))
            kept.set(("ResourceBinding", "flink/scraped"), ())
            # And a cluster failover held by the brake (failover/reconcile/brake.py) while member1 was not Ready.
            braked = loop.metrics.braked
            braked.set(("ResourceBinding", "flink/scraped"), ("member1",))
            braked.set(("ResourceBinding", "flink/scraped"), ())
            storm(loop)
            await injector.sync_once()
            async with session.get("/metrics") as response:
                assert response.status == 200
                return await response.text()
    finally:
        await relay.stop()


def scraped_series(tmp_path: Path) -> list[Series]:
    return parse(asyncio.run(scrape_exercised_relay(tmp_path)))


def exported_names(exposition: str) -> set[str]:
    """Every series name the scrape offers, also of families without a sample yet (a labelled counter that never
    moved shows only its HELP and TYPE)."""
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "summary": ("_sum", "_count")}
    found = set()
    for family in text_string_to_metric_families(exposition):
        found.update(sample.name for sample in family.samples)
        found.update(family.name + suffix for suffix in suffixes.get(family.type, ("",)))
    return found
