"""The reconcilers' one client: async calls on Karmada objects by `ObjectRef`, and on member objects by proxy.

The `kubernetes` client blocks, so every call runs in a thread of the loop's own `Calls`; every call has the
request timeout of `controllers.access.kube.CustomObjects`.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, TypeVar

from kubernetes import client
from prometheus_client import Histogram

from controllers.access.kube import DEFAULT_REQUEST_TIMEOUT_SECONDS, CustomObjects
from controllers.access.members import MemberProxy
from failover.core.api import RESOURCES_BY_KIND, Resource
from failover.core.names import ObjectRef, object_key
from failover.core.work import MemberCopy

T = TypeVar("T")


class Calls:
    """The loop's blocking API calls, on threads of its own: one per call that can be in flight at once (each worker's
    and the Events written beside them), so none waits for a thread. On asyncio's default executor they queued
    behind whatever else holds its min(32, CPUs + 4) threads (6 on 2 cores), such as the webhook's request parsing
    in `serve`. Every call has a deadline (`controllers.access.kube`), so a shutdown waits for a
    thread at most that long."""

    def __init__(self, threads: int, seconds: Histogram) -> None:
        self.executor = ThreadPoolExecutor(threads, thread_name_prefix="api-call")
        self.seconds = seconds  # LoopMetrics.api_calls

    async def run(self, call: str, function: Callable[..., T], *args: Any) -> T:
        """`function(*args)` on a thread, in a copy of the caller's context (as `asyncio.to_thread`): the log lines
        it writes name the reconcile's key. `call` names it in the histogram."""
        context = contextvars.copy_context()
        started = time.perf_counter()
        try:
            return await asyncio.get_running_loop().run_in_executor(
                self.executor, partial(context.run, function, *args)
            )
        finally:
            self.seconds.labels(call).observe(time.perf_counter() - started)

    def shutdown(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)


class KarmadaClient:
    def __init__(
        self, api_client: client.ApiClient, calls: Calls, timeout: float = DEFAULT_REQUEST_TIMEOUT_SECONDS
    ) -> None:
        # Every kind of the catalogue, by kind (as `ObjectRef` names an object), as the binding writes and the Events
        # look a kind up: no second list of what the loop may reach.
        self.objects = {
            kind: CustomObjects(api_client, resource, timeout) for kind, resource in RESOURCES_BY_KIND.items()
        }
        self.members = MemberProxy(api_client, timeout)
        self.calls = calls

    def resource(self, kind: str) -> Resource:
        return self.objects[kind].resource

    async def get(self, ref: ObjectRef) -> dict[str, Any]:
        return await self.calls.run("get", self.objects[ref.kind].get, _key(ref))

    async def patch(self, ref: ObjectRef, merge_patch: Mapping[str, Any]) -> dict[str, Any]:
        return await self.calls.run("patch", self.objects[ref.kind].patch, _key(ref), merge_patch)

    async def json_patch(self, ref: ObjectRef, operations: list[dict[str, Any]]) -> dict[str, Any]:
        return await self.calls.run("json_patch", self.objects[ref.kind].json_patch, _key(ref), operations)

    async def patch_status(self, ref: ObjectRef, merge_patch: Mapping[str, Any]) -> dict[str, Any]:
        return await self.calls.run("patch_status", self.objects[ref.kind].patch_status, _key(ref), merge_patch)

    async def create(self, kind: str, obj: Mapping[str, Any]) -> dict[str, Any]:
        return await self.calls.run("create", self.objects[kind].create, obj)

    async def delete(self, ref: ObjectRef, resource_version: str | None = None) -> None:
        await self.calls.run("delete", self.objects[ref.kind].delete, _key(ref), resource_version)

    async def member_answers(self, cluster: str, remember_seconds: float) -> bool:
        return await self.calls.run("member_probe", self.members.answers, cluster, remember_seconds)

    async def get_member(self, copy: MemberCopy) -> dict[str, Any]:
        return await self.calls.run("member_get", self.members.get, copy)

    async def delete_member(self, copy: MemberCopy, uid: str) -> None:
        await self.calls.run("member_delete", self.members.delete, copy, uid)


def _key(ref: ObjectRef) -> str:
    return object_key(ref.namespace, ref.name)
