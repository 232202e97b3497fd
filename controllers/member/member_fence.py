"""The member relay's fence watcher (`serve --member --fence-cluster NAME`): every `fence.pollSeconds` read this
cluster's fence records from the checkpoint storage, suspend the copies they name, and acknowledge each record once
its copies are stopped (decisions: failover/fence/member_relay.py `decide_member_fence`; docs/design.md, "The
storage fence").

It acts on records alone: no record, nothing is ever suspended, whatever happens to the control plane. An outage of
the storage or of its own cluster's apiserver is said once (controllers/access/outage.py) and tried again at every poll,
for as long as it lasts: the watcher outlives it. The records last read stay in force for the webhook
(webhook/fence_mutator.py), so a storage blip never lets a fenced copy run again. Anything else that goes wrong is a
bug: it ends the watcher, and with it the relay's readiness (relay/serve.py `supervised`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from prometheus_client import CollectorRegistry, Counter, Gauge
from urllib3.exceptions import HTTPError

from controllers.access.fence_store import ClusterFences, FenceStorageError, FenceStore, on_storage
from controllers.access.kube import DEFAULT_REQUEST_TIMEOUT_SECONDS
from controllers.access.outage import Outage
from failover.core.work import MemberCopy
from failover.fence.control_plane import HEARTBEAT_SECONDS
from failover.fence.fence_files import SUSPENDED, FenceRecord, Heartbeat
from failover.fence.member_relay import (
    SUSPENDABLE,
    decide_member_fence,
    has_jobmanager,
    operator_suspended,
    suspendable,
)
from failover.state.jobmanager import JobManager, jobmanager_selector, owned_by

log = structlog.get_logger("failover_relay.member_fence")

PLURALS = {resource.kind: resource.plural for resource in SUSPENDABLE}
EVENT_JOBMANAGER_STOPPED = "JobManagerStopped"


class MemberFenceMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.polls = Counter(
            "failover_relay_member_fence_polls_total",
            "Reads of this member cluster's fence records from the checkpoint storage.",
            ("member_cluster", "result"),
            registry=registry,
        )
        self.suspensions = Counter(
            "failover_relay_member_fence_suspensions_total",
            "Copies a fence record names set to spec.job.state suspended by the member relay.",
            ("member_cluster", "result"),
            registry=registry,
        )
        self.acknowledgements = Counter(
            "failover_relay_member_fence_acknowledgements_total",
            "Fence records acknowledged by the member relay (their copies stopped or absent).",
            ("member_cluster", "result"),
            registry=registry,
        )
        self.jobmanagers_stopped = Counter(
            "failover_relay_member_fence_jobmanagers_stopped_total",
            "JobManager Deployments of suspended copies the operator left running (FLINK-41262), deleted by the member"
            " relay.",
            ("member_cluster", "result"),
            registry=registry,
        )
        self.records = Gauge(
            "failover_relay_member_fence_records",
            "Fence records of this member cluster in the checkpoint storage, as last read.",
            ("member_cluster",),
            registry=registry,
        )


class MemberFenceWatcher:
    def __init__(
        self,
        cluster: str,
        fences: FenceStore,
        api_client: client.ApiClient,
        registry: CollectorRegistry,
        poll_seconds: float,
        on_records: Callable[[Iterable[FenceRecord]], None],
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.cluster, self.fences, self.poll_seconds = cluster, fences, poll_seconds
        self.objects = client.CustomObjectsApi(api_client)
        self.apps, self.core = client.AppsV1Api(api_client), client.CoreV1Api(api_client)
        self.metrics = MemberFenceMetrics(registry)
        self.on_records, self.clock = on_records, clock
        self.storage = Outage(log, "fence_records_read_failed", "fence_records_read_again")
        self._heartbeat_at: datetime | None = None
        self.apiserver = Outage(log, "member_apiserver_failed", "member_apiserver_answers_again")

    async def run(self) -> None:
        log.info("fence_watcher_started", member_cluster=self.cluster, poll_seconds=self.poll_seconds)
        while True:
            await self.poll_once()
            await asyncio.sleep(self.poll_seconds)

    async def poll_once(self) -> None:
        try:
            found: ClusterFences = await on_storage(self.fences.read, self.cluster)
        except FenceStorageError as failed:  # the records last read stay in force
            self.metrics.polls.labels(self.cluster, "error").inc()
            self.storage.failed(member_cluster=self.cluster, **failed.fields)
            return
        self.storage.succeeded(member_cluster=self.cluster)
        self.metrics.polls.labels(self.cluster, "success").inc()
        await self._heartbeat()
        self.metrics.records.labels(self.cluster).set(len(found.records))
        self.on_records(found.records.values())
        for fence_id, record in sorted(found.records.items()):
            await self._handle(record, acknowledged=fence_id in found.acks)

    async def _heartbeat(self) -> None:
        """Say in the storage that this cluster is watched (the control plane reports members without a relay), at
        most every HEARTBEAT_SECONDS."""
        now = self.clock()
        if self._heartbeat_at is not None and now - self._heartbeat_at < timedelta(seconds=HEARTBEAT_SECONDS):
            return
        try:
            await on_storage(self.fences.write_heartbeat, Heartbeat(self.cluster, now, self.poll_seconds))
        except FenceStorageError as failed:  # the next poll tries again
            self.storage.failed(member_cluster=self.cluster, **failed.fields)
            return
        self._heartbeat_at = now

    async def _handle(self, record: FenceRecord, acknowledged: bool) -> None:
        copies: dict[MemberCopy, Mapping[str, Any] | None] = {}
        for ref in record.copies:
            if not suspendable(ref):
                continue  # never read: decide_member_fence waits on it, and the timer fences
            try:
                copies[ref] = await asyncio.to_thread(self._get, ref)
            except (ApiException, HTTPError, OSError) as error:  # its apiserver down or refusing: the next poll
                self._failed("read", record, ref, error)
                return
        jobmanagers: dict[MemberCopy, JobManager] = {}
        for ref, obj in copies.items():
            if obj is not None and has_jobmanager(ref) and operator_suspended(obj):
                try:
                    jobmanagers[ref] = await asyncio.to_thread(self._jobmanager, ref, obj)
                except (ApiException, HTTPError, OSError) as error:
                    self._failed("read-jobmanager", record, ref, error)
                    return
        self.apiserver.succeeded(member_cluster=self.cluster)
        decision = decide_member_fence(record, copies, jobmanagers, acknowledged, self.clock())
        for ref in decision.stop_jobmanager:
            await self._stop_jobmanager(record, ref, jobmanagers[ref])
        for ref in decision.suspend:
            obj = copies[ref] or {}
            try:
                await asyncio.to_thread(self._suspend, ref, str((obj.get("metadata") or {}).get("resourceVersion")))
            except (ApiException, HTTPError, OSError) as error:
                self.metrics.suspensions.labels(self.cluster, "error").inc()
                self._failed("suspend", record, ref, error)
                continue
            self.metrics.suspensions.labels(self.cluster, "success").inc()
            log.info(
                "fence_copy_suspended",
                member_cluster=self.cluster,
                fence_id=record.fence_id,
                kind=ref.kind,
                object=f"{ref.namespace}/{ref.name}",
                binding=record.binding,
            )
        ack = decision.acknowledge
        if ack is None:
            return
        try:
            written = await on_storage(self.fences.write_ack, ack)
        except FenceStorageError as failed:  # written at the next poll
            self.metrics.acknowledgements.labels(self.cluster, "error").inc()
            log.warning(
                "fence_acknowledgement_failed", member_cluster=self.cluster, fence_id=record.fence_id, **failed.fields
            )
            return
        if written:
            self.metrics.acknowledgements.labels(self.cluster, "success").inc()
            log.info(
                "fence_acknowledgement_written",
                member_cluster=self.cluster,
                fence_id=record.fence_id,
                copies=[f"{c.copy.namespace}/{c.copy.name}:{c.state}" for c in ack.copies],
                savepoint=ack.savepoint,
                since_record_seconds=round((ack.acknowledged_at - record.written_at).total_seconds(), 1),
            )

    def _failed(self, call: str, record: FenceRecord, ref: MemberCopy, error: Exception) -> None:
        """A read or patch of a copy failed: a refusal of the apiserver (a status), or no answer at all."""
        answer = (
            {"status": error.status, "reason": error.reason}
            if isinstance(error, ApiException)
            else {"error": type(error).__name__, "detail": str(error)[:200]}
        )
        self.apiserver.failed(
            member_cluster=self.cluster,
            call=call,
            fence_id=record.fence_id,
            object=f"{ref.namespace}/{ref.name}",
            **answer,
        )

    async def _stop_jobmanager(self, record: FenceRecord, ref: MemberCopy, jobmanager: JobManager) -> None:
        """Delete the JobManager Deployment the operator left up after the suspension (FLINK-41262), and say so in
        the log and in an Event on the copy."""
        deployment = jobmanager.deployment or {}
        try:
            await asyncio.to_thread(self._delete_deployment, ref, deployment)
        except (ApiException, HTTPError, OSError) as error:
            self.metrics.jobmanagers_stopped.labels(self.cluster, "error").inc()
            self._failed("stop-jobmanager", record, ref, error)
            return
        self.metrics.jobmanagers_stopped.labels(self.cluster, "success").inc()
        pods = list(jobmanager.running_pods)
        log.warning(
            "fence_jobmanager_stopped",
            member_cluster=self.cluster,
            fence_id=record.fence_id,
            object=f"{ref.namespace}/{ref.name}",
            pods=pods,
        )
        message = (
            f"failover-relay: the operator reported {ref.kind} {ref.name} suspended but left its JobManager running"
            f" (FLINK-41262); deleted Deployment {ref.name} so the job cannot run again beside its new copy (fence"
            f" {record.fence_id})"
        )
        try:
            await asyncio.to_thread(self._event, ref, message)
        except (ApiException, HTTPError, OSError) as error:  # the stop stands; only its Event is lost
            log.warning("fence_event_failed", member_cluster=self.cluster, reason=getattr(error, "reason", None))

    def _jobmanager(self, ref: MemberCopy, obj: Mapping[str, Any]) -> JobManager:
        """The copy's JobManager: the Deployment named after it that it owns, and the pods of its selector."""
        try:
            found = self.apps.read_namespaced_deployment(
                ref.name, ref.namespace, _request_timeout=DEFAULT_REQUEST_TIMEOUT_SECONDS
            )
            deployment = self.apps.api_client.sanitize_for_serialization(found)
        except ApiException as error:
            if error.status != 404:
                raise
            deployment = None
        pods = self.core.list_namespaced_pod(
            ref.namespace,
            label_selector=jobmanager_selector(ref.name),
            _request_timeout=DEFAULT_REQUEST_TIMEOUT_SECONDS,
        )
        return JobManager(
            deployment if owned_by(deployment, obj) else None,
            tuple(self.core.api_client.sanitize_for_serialization(pod) for pod in pods.items),
        )

    def _delete_deployment(self, ref: MemberCopy, deployment: Mapping[str, Any]) -> None:
        """Delete with its uid as precondition: a Deployment made since under the same name is never touched."""
        uid = str((deployment.get("metadata") or {}).get("uid") or "")
        self.apps.delete_namespaced_deployment(
            ref.name,
            ref.namespace,
            body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=uid), propagation_policy="Background"),
            _request_timeout=DEFAULT_REQUEST_TIMEOUT_SECONDS,
        )

    def _event(self, ref: MemberCopy, message: str) -> None:
        now = datetime.now(UTC)
        self.core.create_namespaced_event(
            ref.namespace,
            client.CoreV1Event(
                metadata=client.V1ObjectMeta(generate_name=f"{ref.name}."),
                involved_object=client.V1ObjectReference(
                    api_version=ref.api_version, kind=ref.kind, name=ref.name, namespace=ref.namespace
                ),
                reason=EVENT_JOBMANAGER_STOPPED,
                message=message[:1024],
                type="Warning",
                source=client.V1EventSource(component="failover-relay"),
                first_timestamp=now,
                last_timestamp=now,
                count=1,
            ),
            _request_timeout=DEFAULT_REQUEST_TIMEOUT_SECONDS,
        )

    def _get(self, ref: MemberCopy) -> Mapping[str, Any] | None:
        group, _, version = ref.api_version.partition("/")
        try:
            obj = self.objects.get_namespaced_custom_object(
                group,
                version,
                ref.namespace,
                PLURALS[ref.kind],
                ref.name,
                _request_timeout=DEFAULT_REQUEST_TIMEOUT_SECONDS,
            )
        except ApiException as error:
            if error.status == 404:
                return None
            raise
        return obj if isinstance(obj, dict) else None

    def _suspend(self, ref: MemberCopy, resource_version: str) -> None:
        """Merge-patch `spec.job.state`, on the version read (409 if it changed: decided again at the next poll)."""
        group, _, version = ref.api_version.partition("/")
        self.objects.patch_namespaced_custom_object(
            group,
            version,
            ref.namespace,
            PLURALS[ref.kind],
            ref.name,
            {"metadata": {"resourceVersion": resource_version}, "spec": {"job": {"state": SUSPENDED}}},
            _request_timeout=DEFAULT_REQUEST_TIMEOUT_SECONDS,
        )
