"""What the binding pipeline's steps are tested with instead of an apiserver: a client holding objects in memory with
the apiserver's write semantics (resourceVersion preconditions answered 409, a failed JSON patch `test` 422, a Work
deleted with its last finalizer, a member delete's uid precondition), the loop's own `Cache` filled as if its
informers had listed, and a recorder that keeps the Events. The end-to-end tests (tests/e2e) run the same code
against a real kube-apiserver.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import jsonpatch
from kubernetes.client.exceptions import ApiException
from prometheus_client import CollectorRegistry

from controllers.loop.cache import Cache, binding_cached_form, work_cached_form
from controllers.loop.informer import Informer
from controllers.loop.loop_metrics import LoopMetrics
from controllers.reconcilers.binding_reconciler import BindingReconciler
from controllers.reconcilers.loop_parts import LoopParts
from controllers.reconcilers.restore_watch import RestoreWatch
from controllers.reconcilers.storage_fence import StorageFence
from failover.core.api import (
    CLUSTER_PROPAGATION_POLICIES,
    CLUSTER_RESOURCE_BINDINGS,
    CLUSTERS,
    PROPAGATION_POLICIES,
    RESOURCE_BINDINGS,
    RESOURCES_BY_KIND,
    WORKLOAD_REBALANCERS,
    WORKS,
    Resource,
)
from failover.core.decision import Event
from failover.core.loop_settings import DecisionSettings
from failover.core.names import ObjectRef, key_of, object_key
from failover.core.work import MemberCopy
from failover.reconcile.record_keeping import merged

CACHED = (RESOURCE_BINDINGS, CLUSTER_RESOURCE_BINDINGS, WORKLOAD_REBALANCERS, CLUSTERS, WORKS)
CACHED = (*CACHED, PROPAGATION_POLICIES, CLUSTER_PROPAGATION_POLICIES)


def api_error(status: int, reason: str) -> ApiException:
    error = ApiException(status=status, reason=reason)
    error.body = f'{{"reason": "{reason}"}}'
    return error


@dataclass
class FakeKarmada:
    """The calls of `controllers.access.client.KarmadaClient`, on objects held here by (kind, key)."""

    objects: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    # Objects on member clusters by (cluster, apiVersion, kind, namespace, name), and the clusters whose apiserver
    # answers through the cluster proxy.
    members: dict[tuple[str, str, str, str, str], dict[str, Any]] = field(default_factory=dict)
    answering: set[str] = field(default_factory=set)
    calls: list[tuple[str, str]] = field(default_factory=list)
    _version: int = 100

    def put(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Store `obj` as the apiserver would (a new resourceVersion); returns what is stored."""
        stored = copy.deepcopy(dict(obj))
        self._version += 1
        stored.setdefault("metadata", {})["resourceVersion"] = str(self._version)
        self.objects[(stored["kind"], key_of(stored))] = stored
        return copy.deepcopy(stored)

    def put_member(self, cluster: str, obj: Mapping[str, Any]) -> None:
        meta = obj["metadata"]
        self.members[(cluster, obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"])] = dict(obj)

    def stored(self, kind: str, key: str) -> dict[str, Any] | None:
        return self.objects.get((kind, key))

    def resource(self, kind: str) -> Resource:
        return RESOURCES_BY_KIND[kind]

    def _current(self, ref: ObjectRef) -> dict[str, Any]:
        found = self.objects.get((ref.kind, object_key(ref.namespace, ref.name)))
        if found is None:
            raise api_error(404, "NotFound")
        return found

    def _stored_after(self, ref: ObjectRef, result: dict[str, Any]) -> dict[str, Any]:
        meta = result.get("metadata") or {}
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            del self.objects[(ref.kind, object_key(ref.namespace, ref.name))]  # deleted with its last finalizer
            return copy.deepcopy(result)
        return self.put(result)

    async def get(self, ref: ObjectRef) -> dict[str, Any]:
        self.calls.append(("get", str(ref)))
        return copy.deepcopy(self._current(ref))

    async def patch(self, ref: ObjectRef, merge_patch: Mapping[str, Any]) -> dict[str, Any]:
        self.calls.append(("patch", str(ref)))
        current = self._current(ref)
        wanted = (merge_patch.get("metadata") or {}).get("resourceVersion")
        if wanted is not None and wanted != current["metadata"]["resourceVersion"]:
            raise api_error(409, "Conflict")
        return self._stored_after(ref, merged(copy.deepcopy(current), merge_patch))

    async def json_patch(self, ref: ObjectRef, operations: list[dict[str, Any]]) -> dict[str, Any]:
        self.calls.append(("json_patch", str(ref)))
        result = copy.deepcopy(self._current(ref))
        for operation in operations:
            if operation["op"] == "test" and _missing_tested_as_null(result, operation):
                continue  # as evanphx/json-patch v4 in the kube-apiserver (failover/reconcile/preconditions.py)
            try:
                result = jsonpatch.apply_patch(result, [operation])
            except (jsonpatch.JsonPatchTestFailed, jsonpatch.JsonPatchConflict, jsonpatch.JsonPointerException):
                raise api_error(422, "Invalid") from None
        return self._stored_after(ref, result)

    async def patch_status(self, ref: ObjectRef, merge_patch: Mapping[str, Any]) -> dict[str, Any]:
        return await self.patch(ref, merge_patch)

    async def create(self, kind: str, obj: Mapping[str, Any]) -> dict[str, Any]:
        self.calls.append(("create", kind))
        if (kind, key_of(obj)) in self.objects:
            raise api_error(409, "AlreadyExists")
        return self.put({"kind": kind, **obj})

    async def delete(self, ref: ObjectRef, resource_version: str | None = None) -> None:
        self.calls.append(("delete", str(ref)))
        self._current(ref)
        del self.objects[(ref.kind, object_key(ref.namespace, ref.name))]

    async def member_answers(self, cluster: str, remember_seconds: float) -> bool:
        self.calls.append(("member_probe", cluster))
        return cluster in self.answering

    def _member_key(self, copy_: MemberCopy) -> tuple[str, str, str, str, str]:
        return (copy_.cluster, copy_.api_version, copy_.kind, copy_.namespace, copy_.name)

    async def get_member(self, copy_: MemberCopy) -> dict[str, Any]:
        self.calls.append(("member_get", copy_.cluster))
        if copy_.cluster not in self.answering:
            raise OSError("connection refused")
        found = self.members.get(self._member_key(copy_))
        if found is None:
            raise api_error(404, "NotFound")
        return copy.deepcopy(found)

    async def delete_member(self, copy_: MemberCopy, uid: str) -> None:
        self.calls.append(("member_delete", copy_.cluster))
        found = self.members.get(self._member_key(copy_))
        if found is None:
            raise api_error(404, "NotFound")
        if found["metadata"].get("uid", "") != uid:
            raise api_error(409, "Conflict")
        del self.members[self._member_key(copy_)]


def _missing_tested_as_null(obj: Any, operation: Mapping[str, Any]) -> bool:
    """A `test` of an absent member with the value null, while its parent exists: the apiserver lets it pass."""
    if operation.get("value") is not None:
        return False
    pointer = jsonpatch.JsonPointer(operation["path"])
    try:
        parent = jsonpatch.JsonPointer.from_parts(pointer.parts[:-1]).resolve(obj)
    except jsonpatch.JsonPointerException:
        return False
    return isinstance(parent, dict) and pointer.parts[-1] not in parent


class KeptEvents:
    """The `EventRecorder` calls: the Events asked for, by the name of the object they are about."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Event]] = []

    async def record(self, subject: Mapping[str, Any], events: Iterable[Event]) -> None:
        self.events.extend((str((subject.get("metadata") or {}).get("name")), event) for event in events)

    def reasons(self) -> list[str]:
        return [event.reason for _, event in self.events]


def never_listed(**_: object) -> object:
    raise AssertionError("the informers are not started here")


def filled_cache(fake: FakeKarmada) -> Cache:
    """The loop's cache as its informers would hold the fake's objects once listed: every resource synced, Works
    indexed by binding, each in the form the loop caches it."""
    cache = Cache()
    forms = {WORKS.kind: work_cached_form, RESOURCE_BINDINGS.kind: binding_cached_form}
    forms[CLUSTER_RESOURCE_BINDINGS.kind] = binding_cached_form
    for resource in CACHED:
        informer = Informer(resource.plural, never_listed, lambda key: None, asyncio.get_running_loop())
        form = forms.get(resource.kind, lambda obj: obj)
        informer.cache = {
            key: form(copy.deepcopy(obj)) for (kind, key), obj in fake.objects.items() if kind == resource.kind
        }
        informer.synced.set()
        cache.add(resource, informer)
    for kind, key in list(fake.objects):
        if kind == WORKS.kind:
            cache.work_changed(key)
    return cache


@dataclass
class Loop:
    """A binding reconciler on a fake apiserver, with its metrics and the Events it asked for."""

    fake: FakeKarmada
    cache: Cache
    parts: LoopParts
    reconciler: BindingReconciler
    events: KeptEvents
    metrics: LoopMetrics


def loop(
    fake: FakeKarmada,
    now: datetime,
    settings: DecisionSettings | None = None,
    storage_fence: StorageFence | None = None,
    kind: str = RESOURCE_BINDINGS.kind,
    restore_watch: RestoreWatch | None = None,
    metrics: LoopMetrics | None = None,
) -> Loop:
    """The binding reconciler of `kind` over `fake` (its cache filled from it now), its clock stopped at `now`;
    `metrics` carries the metrics of an earlier loop over (a gauge across reconciles)."""
    metrics = metrics or LoopMetrics(CollectorRegistry())
    events = KeptEvents()
    cache = filled_cache(fake)
    parts = LoopParts(
        fake,  # type: ignore[arg-type]
        cache,
        events,  # type: ignore[arg-type]
        settings or DecisionSettings(),
        metrics,
        storage_fence=storage_fence,
        restore_watch=restore_watch,
        clock=lambda: now,
    )
    return Loop(fake, cache, parts, BindingReconciler(kind, parts), events, metrics)
