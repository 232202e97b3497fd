"""The member relay's fence watcher (`serve --member --fence-cluster NAME`): every `fence.pollSeconds` read this
cluster's fence records from the checkpoint storage, suspend the copies they name, and acknowledge each record once
its copies are stopped (decisions: failover/fence/member_relay.py `decide_member_fence`; docs/design.md, "The
storage fence").

It acts on records alone: no record, nothing is ever suspended, whatever happens to the control plane. An outage of
the storage or of its own cluster's apiserver is said once (controllers/access/outage.py) and tried again at every poll,
for as long as it lasts: the watcher outlives it. The records last read stay in force for the webhook
(webhook/fence_mutator.py), so a storage blip never lets a fenced copy run again. Anything else that goes wrong is a
bug: it ends the watcher, and with it the relay's readiness (relay/serve.py `supervised`).

Everything it reaches is the shared access of `controllers/access`: the records through `fence_store`, the copies of
the kinds the fence suspends through `kube.CustomObjects` of the catalogue (`MemberObjects`), its Events through
`events.EventRecorder`, its metrics declared in `fence_metrics`. Its wiring (settings, the task) is the program's:
relay/fence_watcher.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import structlog
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from prometheus_client import Counter
from urllib3.exceptions import HTTPError

from controllers.access.events import EventRecorder
from controllers.access.fence_metrics import MemberFenceMetrics
from controllers.access.fence_store import ClusterFences, FenceStorageError, FenceStore, on_storage
from controllers.access.kube import DEFAULT_REQUEST_TIMEOUT_SECONDS, CustomObjects, not_found
from controllers.access.outage import Outage
from failover.core import binding as b
from failover.core.api import group_kind_of
from failover.core.decision import WARNING
from failover.core.names import object_key
from failover.core.work import MemberCopy
from failover.fence.control_plane import HEARTBEAT_SECONDS
from failover.fence.fence_files import SUSPENDED, FenceAck, FenceRecord, Heartbeat
from failover.fence.member_relay import (
    SUSPENDABLE,
    decide_member_fence,
    has_jobmanager,
    operator_suspended,
    suspendable,
)
from failover.state.jobmanager import JobManager, jobmanager_selector, owned_by

log = structlog.get_logger("failover_relay.member_fence")

EVENT_JOBMANAGER_STOPPED = "JobManagerStopped"
# A call to the member's apiserver that failed: refused (a status), or not answered at all.
FAILED_CALLS = (ApiException, HTTPError, OSError)

Copies = dict[MemberCopy, Mapping[str, Any] | None]


class MemberObjects:
    """The member cluster's own objects, with its own credentials: the copies of the kinds the fence suspends
    (`CustomObjects` of the catalogue, one per kind), and a FlinkDeployment's JobManager (its Deployment and pods,
    built-in kinds that `CustomObjects` does not serve). Blocking, each call with the request timeout; the watcher
    calls them on a thread."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self.copies = {resource.group_kind: CustomObjects(api_client, resource) for resource in SUSPENDABLE}
        self.apps, self.core = client.AppsV1Api(api_client), client.CoreV1Api(api_client)

    def get(self, ref: MemberCopy) -> dict[str, Any] | None:
        """The copy as its cluster holds it; None when there is none."""
        try:
            return self._of(ref).get(object_key(ref.namespace, ref.name))
        except ApiException as error:
            if not_found(error):
                return None
            raise

    def suspend(self, ref: MemberCopy, resource_version: str) -> None:
        """Merge-patch `spec.job.state`, on the version read (409 if it changed: decided again at the next poll)."""
        self._of(ref).patch(
            object_key(ref.namespace, ref.name),
            {"metadata": {"resourceVersion": resource_version}, "spec": {"job": {"state": SUSPENDED}}},
        )

    def _of(self, ref: MemberCopy) -> CustomObjects:
        return self.copies[group_kind_of(ref.api_version, ref.kind)]

    def jobmanager(self, ref: MemberCopy, obj: Mapping[str, Any]) -> JobManager:
        """The copy's JobManager: the Deployment named after it that it owns, and the pods of its selector."""
        try:
            found = self.apps.read_namespaced_deployment(
                ref.name, ref.namespace, _request_timeout=DEFAULT_REQUEST_TIMEOUT_SECONDS
            )
            deployment = self.apps.api_client.sanitize_for_serialization(found)
        except ApiException as error:
            if not not_found(error):
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

    def delete_deployment(self, ref: MemberCopy, deployment: Mapping[str, Any]) -> None:
        """Delete with its uid as precondition: a Deployment made since under the same name is never touched."""
        uid = str(b.metadata(deployment).get("uid") or "")
        self.apps.delete_namespaced_deployment(
            ref.name,
            ref.namespace,
            body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=uid), propagation_policy="Background"),
            _request_timeout=DEFAULT_REQUEST_TIMEOUT_SECONDS,
        )


class MemberFenceWatcher:
    def __init__(
        self,
        cluster: str,
        fences: FenceStore,
        objects: MemberObjects,
        events: EventRecorder,
        metrics: MemberFenceMetrics,
        poll_seconds: float,
        on_records: Callable[[Iterable[FenceRecord]], None],
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.cluster, self.fences, self.poll_seconds = cluster, fences, poll_seconds
        self.objects, self.events, self.metrics = objects, events, metrics
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
        read = await self._read(record)
        if read is None:
            return
        copies, jobmanagers = read
        self.apiserver.succeeded(member_cluster=self.cluster)
        decision = decide_member_fence(record, copies, jobmanagers, acknowledged, self.clock())
        for ref in decision.stop_jobmanager:
            await self._stop_jobmanager(record, ref, copies[ref] or {}, jobmanagers[ref])
        for ref in decision.suspend:
            await self._suspend(record, ref, copies[ref] or {})
        if decision.acknowledge is not None:
            await self._acknowledge(record, decision.acknowledge)

    async def _read(self, record: FenceRecord) -> tuple[Copies, dict[MemberCopy, JobManager]] | None:
        """Each copy of the record a suspension can stop, as its cluster's apiserver holds it (a copy no suspension
        stops is never read: decide_member_fence waits on it, and the timer fences), and the JobManager of each the
        operator reports suspended that runs one; None when a read failed (said, and tried at the next poll)."""
        copies: Copies = {}
        for ref in filter(suspendable, record.copies):
            try:
                copies[ref] = await asyncio.to_thread(self.objects.get, ref)
            except FAILED_CALLS as error:
                self._failed("read", record, ref, error)
                return None
        jobmanagers: dict[MemberCopy, JobManager] = {}
        for ref, obj in copies.items():
            if obj is not None and has_jobmanager(ref) and operator_suspended(obj):
                try:
                    jobmanagers[ref] = await asyncio.to_thread(self.objects.jobmanager, ref, obj)
                except FAILED_CALLS as error:
                    self._failed("read-jobmanager", record, ref, error)
                    return None
        return copies, jobmanagers

    async def _change(
        self, counted: Counter, call: str, record: FenceRecord, ref: MemberCopy, change: Callable[[], None]
    ) -> bool:
        """`change` (a write to the member's apiserver) on a thread, `counted` by result; True when it was made. A
        failure is said: the next poll decides again."""
        try:
            await asyncio.to_thread(change)
        except FAILED_CALLS as error:
            counted.labels(self.cluster, "error").inc()
            self._failed(call, record, ref, error)
            return False
        counted.labels(self.cluster, "success").inc()
        return True

    async def _suspend(self, record: FenceRecord, ref: MemberCopy, obj: Mapping[str, Any]) -> None:
        suspend = partial(self.objects.suspend, ref, str(b.metadata(obj).get("resourceVersion")))
        if not await self._change(self.metrics.suspensions, "suspend", record, ref, suspend):
            return
        log.info(
            "fence_copy_suspended",
            member_cluster=self.cluster,
            fence_id=record.fence_id,
            kind=ref.kind,
            object=f"{ref.namespace}/{ref.name}",
            binding=record.binding,
        )

    async def _acknowledge(self, record: FenceRecord, ack: FenceAck) -> None:
        try:
            written = await on_storage(self.fences.write_ack, ack)
        except FenceStorageError as failed:  # written at the next poll
            self.metrics.acknowledgements.labels(self.cluster, "error").inc()
            log.warning(
                "fence_acknowledgement_failed", member_cluster=self.cluster, fence_id=record.fence_id, **failed.fields
            )
            return
        if not written:
            return
        self.metrics.acknowledgements.labels(self.cluster, "success").inc()
        log.info(
            "fence_acknowledgement_written",
            member_cluster=self.cluster,
            fence_id=record.fence_id,
            copies=ack.copy_states(),
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

    async def _stop_jobmanager(
        self, record: FenceRecord, ref: MemberCopy, obj: Mapping[str, Any], jobmanager: JobManager
    ) -> None:
        """Delete the JobManager Deployment the operator left up after the suspension (FLINK-41262), and say so in
        the log and in an Event on the copy (`obj`, as read)."""
        delete = partial(self.objects.delete_deployment, ref, jobmanager.deployment or {})
        if not await self._change(self.metrics.jobmanagers_stopped, "stop-jobmanager", record, ref, delete):
            return
        log.warning(
            "fence_jobmanager_stopped",
            member_cluster=self.cluster,
            fence_id=record.fence_id,
            object=f"{ref.namespace}/{ref.name}",
            pods=list(jobmanager.running_pods),
        )
        message = (
            f"failover-relay: the operator reported {ref.kind} {ref.name} suspended but left its JobManager running"
            f" (FLINK-41262); deleted Deployment {ref.name} so the job cannot run again beside its new copy (fence"
            f" {record.fence_id})"
        )
        await self.events.write(obj, WARNING, EVENT_JOBMANAGER_STOPPED, message)  # the stop stands if it is lost
