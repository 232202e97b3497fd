"""Kubernetes Events on the objects the relay changes, so `kubectl describe` tells an operator what happened: the
loop's, and the member relay's on the copies it acts on (controllers/member/member_fence.py).

An Event of the loop is written beside the reconcile that asked for it, not in its way: a reconcile queues it
(`record`) and goes on to its next write (in a storm, written in line, the Event of each released Work would be one
of a release's four round trips). At most `EVENT_WRITERS` are written at once, in the order they were asked for. The
member relay, which has no loop, writes its few in line (`write`), on asyncio's threads.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from functools import partial
from typing import Any

import structlog
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from controllers.access.client import Calls
from controllers.access.kube import DEFAULT_REQUEST_TIMEOUT_SECONDS
from failover.core.api import RESOURCES_BY_KIND
from failover.core.decision import MAX_MESSAGE_LENGTH, Event
from failover.core.names import ObjectRef, key_of

COMPONENT = "failover-relay"
# Events of cluster-scoped objects (ClusterResourceBinding, WorkloadRebalancer) go to "default", as kubectl expects.
CLUSTER_SCOPED_EVENT_NAMESPACE = "default"
# A condition that lasts (a cluster unhealthy without propagateDeps) yields the same event on every reconcile;
# one per object, reason and message within this window is enough for `kubectl describe`.
EVENT_REPEAT_SECONDS = 600.0
# Events written at once: Events are one per decision that changed something, so two keep up with the workers'
# writes while leaving the API calls (`Calls`) to the writes that decide a failover.
EVENT_WRITERS = 2

log = structlog.get_logger("failover_relay.events")


class EventRecorder:
    """Writes the decisions' Events, each (object, reason, message) at most once within `EVENT_REPEAT_SECONDS`.
    `host` names the writer (source.host, reportingInstance); `calls` are the loop's threads (None: asyncio's)."""

    def __init__(
        self,
        api_client: client.ApiClient,
        host: str,
        calls: Calls | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.api = client.CoreV1Api(api_client)
        self.host = host
        self.calls = calls
        self.clock = clock
        self._recent: dict[tuple[str, str, str, str], float] = {}
        self._slots: asyncio.Semaphore | None = None
        self._writing: set[asyncio.Task[None]] = set()

    async def record(self, subject: Mapping[str, Any], events: Iterable[Event]) -> None:
        """The Events of one decision about ``subject`` (or about the object each Event names)."""
        for event in events:
            regarding = subject if event.regarding is None else reference_object(event.regarding)
            key = (str(regarding.get("kind")), key_of(regarding), event.reason, event.message)
            now = self.clock()
            if now - self._recent.get(key, -EVENT_REPEAT_SECONDS) < EVENT_REPEAT_SECONDS:
                continue
            self._recent[key] = now
            if len(self._recent) > 10_000:
                self._recent = {k: t for k, t in self._recent.items() if now - t < EVENT_REPEAT_SECONDS}
            log.info("event", kind=key[0], object=key[1], type=event.type, reason=event.reason, message=event.message)
            self._write_later(regarding, event.type, event.reason, event.message)

    async def written(self) -> None:
        """Until every Event asked for so far is written (or given up)."""
        while self._writing:
            await asyncio.gather(*self._writing, return_exceptions=True)

    def drop_pending(self) -> None:
        """Give up the Events not written yet: a replica whose term ended writes nothing more. One whose call is
        already on its thread may still land."""
        for task in list(self._writing):
            task.cancel()

    def _write_later(self, obj: Mapping[str, Any], event_type: str, reason: str, message: str) -> None:
        task = asyncio.get_running_loop().create_task(self._write_in_turn(obj, event_type, reason, message))
        self._writing.add(task)
        task.add_done_callback(self._writing.discard)

    async def _write_in_turn(self, obj: Mapping[str, Any], event_type: str, reason: str, message: str) -> None:
        if self._slots is None:
            self._slots = asyncio.Semaphore(EVENT_WRITERS)
        async with self._slots:
            await self.write(obj, event_type, reason, message)

    async def write(self, obj: Mapping[str, Any], event_type: str, reason: str, message: str) -> None:
        """Best effort: an Event that cannot be written is logged, never a reason to fail a reconcile."""
        body = self.event_for(obj, event_type, reason, message, datetime.now(UTC))
        create = partial(
            self.api.create_namespaced_event,
            event_namespace(obj),
            body,
            _request_timeout=DEFAULT_REQUEST_TIMEOUT_SECONDS,
        )
        try:
            await (self.calls.run("event", create) if self.calls is not None else asyncio.to_thread(create))
        except (ApiException, HTTPError, OSError) as error:
            log.warning("event_not_recorded", reason=reason, error=getattr(error, "reason", None) or repr(error))

    def event_for(
        self, obj: Mapping[str, Any], event_type: str, reason: str, message: str, now: datetime
    ) -> client.CoreV1Event:
        metadata = obj.get("metadata") or {}
        return client.CoreV1Event(
            metadata=client.V1ObjectMeta(
                name=f"{metadata.get('name', 'object')}.{uuid.uuid4().hex[:16]}", namespace=event_namespace(obj)
            ),
            involved_object=client.V1ObjectReference(
                api_version=obj.get("apiVersion"),
                kind=obj.get("kind"),
                name=metadata.get("name"),
                namespace=metadata.get("namespace"),
                uid=metadata.get("uid"),
                resource_version=metadata.get("resourceVersion"),
            ),
            reason=reason,
            message=message[:MAX_MESSAGE_LENGTH],
            type=event_type,
            source=client.V1EventSource(component=COMPONENT, host=self.host),
            first_timestamp=now,
            last_timestamp=now,
            count=1,
            reporting_component=COMPONENT,
            reporting_instance=self.host,
        )


def event_namespace(obj: Mapping[str, Any]) -> str:
    """Where the Event about ``obj`` goes: its namespace, or a fixed one for a cluster-scoped object."""
    namespace = (obj.get("metadata") or {}).get("namespace")
    return str(namespace) if namespace else CLUSTER_SCOPED_EVENT_NAMESPACE


def reference_object(ref: ObjectRef) -> dict[str, Any]:
    """A stand-in object for an Event about ``ref``: what `involvedObject` needs."""
    metadata = {"name": ref.name, **({"namespace": ref.namespace} if ref.namespace else {})}
    if ref.uid:
        metadata["uid"] = ref.uid
    resource = RESOURCES_BY_KIND.get(ref.kind)
    return {"apiVersion": resource.api_version if resource else "", "kind": ref.kind, "metadata": metadata}
