"""Kubernetes Events on the objects the loop changes, so `kubectl describe` tells an operator what happened."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

import structlog
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from controllers.kube import DEFAULT_REQUEST_TIMEOUT_SECONDS

COMPONENT = "failover-relay"
# Events of cluster-scoped objects (ClusterResourceBinding, WorkloadRebalancer) go to "default", as kubectl expects.
CLUSTER_SCOPED_EVENT_NAMESPACE = "default"
MAX_MESSAGE_LENGTH = 1024

log = structlog.get_logger("failover_relay.events")


class EventRecorder:
    def __init__(self, api_client: client.ApiClient, host: str) -> None:
        self.api = client.CoreV1Api(api_client)
        self.host = host

    async def record(self, obj: Mapping[str, Any], event_type: str, reason: str, message: str) -> None:
        """Best effort: an Event that cannot be written is logged, never a reason to fail a reconcile."""
        body = self.event_for(obj, event_type, reason, message, datetime.now(timezone.utc))
        try:
            await asyncio.to_thread(self.api.create_namespaced_event, body.metadata.namespace, body,
                                    _request_timeout=DEFAULT_REQUEST_TIMEOUT_SECONDS)
        except (ApiException, HTTPError, OSError) as error:
            log.warning("event_not_recorded", reason=reason, error=getattr(error, "reason", None) or repr(error))

    def event_for(self, obj: Mapping[str, Any], event_type: str, reason: str, message: str,
                  now: datetime) -> client.CoreV1Event:
        metadata = obj.get("metadata") or {}
        namespace = metadata.get("namespace") or CLUSTER_SCOPED_EVENT_NAMESPACE
        return client.CoreV1Event(
            metadata=client.V1ObjectMeta(name=f"{metadata.get('name', 'object')}.{uuid.uuid4().hex[:16]}",
                                         namespace=namespace),
            involved_object=client.V1ObjectReference(
                api_version=obj.get("apiVersion"), kind=obj.get("kind"), name=metadata.get("name"),
                namespace=metadata.get("namespace"), uid=metadata.get("uid"),
                resource_version=metadata.get("resourceVersion")),
            reason=reason, message=message[:MAX_MESSAGE_LENGTH], type=event_type,
            source=client.V1EventSource(component=COMPONENT, host=self.host),
            first_timestamp=now, last_timestamp=now, count=1,
            reporting_component=COMPONENT, reporting_instance=self.host)
