"""The old copies of a binding on member clusters: the one collaborator that touches them. A held Work is released
(its execution finalizer removed) or handed to a Pull cluster's agent (its binding labels removed), and a copy is
deleted from its member through Karmada's cluster proxy, after a probe when the member is not Ready. What to do is
decided in failover/fence/old_copy.py; this does it and says how it went.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import Enum
from typing import Any

import structlog
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from controllers.access.client import KarmadaClient
from controllers.access.events import EventRecorder
from controllers.access.kube import conflict, not_found
from controllers.loop.loop_metrics import LoopMetrics
from failover.core.api import WORKS
from failover.core.cluster import is_ready
from failover.core.decision import NORMAL, Event, clip_message
from failover.core.names import ObjectRef, key_of, object_key
from failover.core.work import MemberCopy, applied_by
from failover.fence.old_copy import EVENT_FENCED_COPY, WorkRelease

log = structlog.get_logger("failover_relay.reconcile")


class Released(Enum):
    """How a release went."""

    NOT_YET = "not-yet"  # its copies could not be deleted first (the member does not answer, or refused)
    MISSING = "missing"  # the Work was gone already
    RELEASED = "released"  # the Work lost the execution finalizer (or was handed to the agent)
    DELETED = "deleted"  # ...and that was its last finalizer: the apiserver deleted it


class OldCopies:
    def __init__(
        self, client: KarmadaClient, recorder: EventRecorder, metrics: LoopMetrics, probe_seconds: float
    ) -> None:
        self.client, self.recorder, self.metrics = client, recorder, metrics
        self.probe_seconds = probe_seconds  # how long a member's answer to the probe is remembered

    async def release(
        self, binding: Mapping[str, Any], release: WorkRelease, clusters: Mapping[str, Mapping[str, Any]]
    ) -> Released:
        """Delete `release.delete_first` from the member, then patch the Work: remaining finalizers on the version it
        was decided on, and the labels `unlabel` names removed."""
        if release.delete_first and not await self.delete(binding, release.delete_first, clusters):
            return Released.NOT_YET
        work = ObjectRef(WORKS.kind, release.name, release.namespace)
        metadata: dict[str, Any] = {"finalizers": list(release.finalizers), "resourceVersion": release.resource_version}
        if release.unlabel:
            metadata["labels"] = dict.fromkeys(release.unlabel)
        try:
            await self.client.patch(work, {"metadata": metadata})
        except ApiException as error:
            if not_found(error):
                return Released.MISSING
            raise
        self.metrics.works_released.labels(release.why).inc()
        log.info(
            "work_released",
            binding=key_of(binding),
            work=str(work),
            cluster=release.cluster,
            why=release.why,
            deleted_copies=len(release.delete_first),
        )
        return Released.RELEASED if release.finalizers else Released.DELETED

    async def delete(
        self, binding: Mapping[str, Any], copies: Iterable[MemberCopy], clusters: Mapping[str, Mapping[str, Any]]
    ) -> bool:
        """Delete old copies through the cluster proxy; True when all are gone or are not ours to delete. A member
        whose cluster is not Ready is asked first whether it answers at all (remembered per cluster)."""
        for copy in copies:
            if not is_ready(clusters.get(copy.cluster)) and not await self.client.member_answers(
                copy.cluster, self.probe_seconds
            ):
                return False
            if not await self._delete(binding, copy):
                return False
        return True

    async def _delete(self, binding: Mapping[str, Any], copy: MemberCopy) -> bool:
        """Delete one old copy with its uid as precondition; True when it is gone or is not ours to delete."""
        where = {"cluster": copy.cluster, "object": object_key(copy.namespace, copy.name)}
        try:
            member_object = await self.client.get_member(copy)
            if not applied_by(member_object, copy):
                log.warning("member_copy_not_ours", **where, work=copy.work)
                return True
            uid = str((member_object.get("metadata") or {}).get("uid") or "")
            await self.client.delete_member(copy, uid)
        except ApiException as error:
            if not_found(error) or conflict(error):  # gone, or replaced by another object since the GET
                return True
            log.warning("member_copy_delete_failed", **where, status=error.status, reason=error.reason)
            return False
        except (HTTPError, OSError, LookupError) as error:
            log.warning("member_copy_delete_failed", **where, error=type(error).__name__, detail=str(error)[:200])
            return False
        self.metrics.copies_deleted.inc()
        log.info("member_copy_deleted", **where, work=copy.work)
        message = f"deleted the old copy {copy.kind} {object_key(copy.namespace, copy.name)} from {copy.cluster}"
        await self.recorder.record(binding, (Event(NORMAL, EVENT_FENCED_COPY, clip_message(message)),))
        return True
