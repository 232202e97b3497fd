"""The one way to write a binding: with the precondition its decision read. Every writer goes through here: the binding
pipeline (`BindingWrites`), the Cluster controller and the rebalancer (`write_binding`), the `drill` command
(`write_binding_now`); the `drain` command writes its Cluster taint the same way (`write_on_version_now`). A decision
says what to change and on what it decided (`failover.core.decision.BindingPatch`: the resourceVersion it read; or the
fields it read, `failover/reconcile/preconditions.py`); the precondition is put on the wire here, as
controller-runtime's `client.MergeFromWithOptimisticLock` puts the resourceVersion into the patch it sends, and never by
a decision.

In the pipeline, each decision is made on the latest known binding (the cache's, then what the last write or read
returned) and written with a precondition on the version it was decided on: the resourceVersion, or, for a decision that
says which fields it read (`reads`, failover/reconcile/preconditions.py), a JSON patch testing those fields, which a
change elsewhere in the binding does not fail. So a stale cache or a second replica can never append a second eviction
task. A cache that is up to date costs no GET; when the precondition fails (the cache lagged, or someone wrote since),
the decision is made once more on a fresh GET and written with that resourceVersion; a 409 then requeues the key
(controllers/loop/controller.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import structlog
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from prometheus_client import Counter

from controllers.access.client import KarmadaClient
from controllers.access.kube import CustomObjects, conflict, precondition_failed, with_identity
from failover.core.api import RESOURCES_BY_KIND, Resource
from failover.core.binding import resource_version
from failover.core.decision import BindingPatch
from failover.core.names import ObjectRef, object_key
from failover.reconcile.preconditions import Path, guarded_patch

log = structlog.get_logger("failover_relay.reconcile")

D = TypeVar("D")


class OwnWrites:
    """The binding each of our writes produced, until the informer's cache has it. A reconcile queued by our own write
    (the Work it released was deleted, the binding changed) often runs before the watch event of that write arrives:
    deciding on the version the write replaced, it asked for the same write again, which then failed its
    precondition and cost a read (client-go's `MutationCache` solves the same)."""

    def __init__(self) -> None:
        self._replaced: dict[str, set[object]] = {}
        self._latest: dict[str, dict[str, Any]] = {}

    def record(self, key: str, before: Mapping[str, Any], after: dict[str, Any]) -> None:
        self._replaced.setdefault(key, set()).add(resource_version(before))
        self._latest[key] = after

    def latest(self, key: str, cached: dict[str, Any] | None) -> dict[str, Any] | None:
        """`cached`, or our newer write while the cache still holds a version one of our writes replaced."""
        if key not in self._latest:
            return cached
        if cached is not None and resource_version(cached) in self._replaced[key]:
            return self._latest[key]
        del self._latest[key], self._replaced[key]  # caught up, gone, or written since by someone else
        return cached


def with_precondition(patch: Mapping[str, Any], version: object) -> dict[str, Any]:
    """`patch` with the resourceVersion it was decided on: the apiserver answers 409 if the object moved on. A write
    without a version would be unconditional: refused here, so that no writer can send one by mistake."""
    if not version:
        raise ValueError("a binding write needs the resourceVersion its decision read")
    metadata = dict(patch.get("metadata") or {})
    metadata["resourceVersion"] = version
    return {**patch, "metadata": metadata}


def conditional(patch: Mapping[str, Any], obj: Mapping[str, Any]) -> dict[str, Any]:
    """`patch` on the resourceVersion of `obj`, the object it was decided on."""
    return with_precondition(patch, resource_version(obj))


async def write_binding(karmada: KarmadaClient, change: BindingPatch) -> dict[str, Any]:
    """Write `change` from the loop, on the resourceVersion its decision read: the binding as written, or
    ApiException (409 when the binding moved on since the decision; the caller decides again on a fresh read)."""
    written = await karmada.patch(change.binding, with_precondition(change.patch, change.version))
    return with_identity(written, karmada.resource(change.binding.kind))


def write_binding_now(api_client: client.ApiClient, change: BindingPatch) -> dict[str, Any]:
    """`write_binding` for a command, which blocks: the same precondition, on the command's own API client."""
    key = object_key(change.binding.namespace, change.binding.name)
    return write_on_version_now(api_client, RESOURCES_BY_KIND[change.binding.kind], key, change.patch, change.version)


def write_on_version_now(
    api_client: client.ApiClient, resource: Resource, key: str, patch: Mapping[str, Any], version: object
) -> dict[str, Any]:
    """A command's merge patch of any object of `resource` (`drain`'s taint on a Cluster), on the resourceVersion its
    decision read: the object as written, or ApiException (409 when it moved on since)."""
    written = CustomObjects(api_client, resource).patch(key, with_precondition(patch, version))
    return with_identity(written, resource)


class BindingWrites:
    """The successive writes of one reconcile to one binding (`binding` is the latest version known)."""

    def __init__(
        self,
        client: KarmadaClient,
        ref: ObjectRef,
        binding: dict[str, Any],
        key: str,
        own: OwnWrites,
        failed: Counter,
    ) -> None:
        self.client, self.ref, self.binding, self.key = client, ref, binding, key
        self.resource = client.resource(ref.kind)
        self.own, self.failed = own, failed  # LoopMetrics.precondition_failures
        self.fresh = False  # `binding` was read from, or written to, the apiserver in this reconcile

    async def apply(
        self,
        decide: Callable[[dict[str, Any]], D],
        patch_of: Callable[[D], Mapping[str, Any] | None] = lambda decision: getattr(decision, "patch", None),
        reads: Callable[[dict[str, Any], D], Iterable[Path]] | None = None,
    ) -> D:
        """Decide on the binding and write the decision's patch (`patch_of`, by default its `patch`), with a test of
        the fields `reads` says the decision read, else with the resourceVersion; once more on a fresh GET when the
        precondition fails."""
        decision = decide(self.binding)
        patch = patch_of(decision)
        if patch and reads is not None:
            operations = guarded_patch(self.binding, patch, reads(self.binding, decision))
            try:
                self._written(self.binding, await self.client.json_patch(self.ref, operations))
                return decision
            except ApiException as error:
                if not precondition_failed(error):
                    raise
                self._failed(error)
        elif patch and not self.fresh:
            try:
                await self.write(patch)
                return decision
            except ApiException as error:
                if not conflict(error):
                    raise
                self._failed(error)
        if patch and not self.fresh:
            await self.reread()
            decision = decide(self.binding)
        patch = patch_of(decision)
        if patch:
            await self.write(patch)
        return decision

    async def write(self, patch: Mapping[str, Any]) -> None:
        """A merge patch on the resourceVersion of `binding` (409 when the binding moved on since)."""
        self._written(self.binding, await self.client.patch(self.ref, conditional(patch, self.binding)))

    async def reread(self) -> dict[str, Any]:
        """The binding as the apiserver holds it now: the word a decision that must not act on the cache alone (a
        fence record) waits for. Later decisions of this reconcile are made on it."""
        self.binding = with_identity(await self.client.get(self.ref), self.resource)
        self.fresh = True
        return self.binding

    def _written(self, before: Mapping[str, Any], after: Mapping[str, Any]) -> None:
        self.binding = with_identity(after, self.resource)
        self.fresh = True
        self.own.record(self.key, before, self.binding)

    def _failed(self, error: ApiException) -> None:
        self.failed.inc()
        log.info("precondition_failed", binding=str(self.ref), status=error.status, detail=str(error.body)[:200])
        self.fresh = False
