"""The reconcilers' one client: async calls on Karmada objects by `ObjectRef`, and on member objects by proxy.

The `kubernetes` client blocks, so every call runs in a thread; every call has the request timeout of
`controllers.kube.CustomObjects`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from kubernetes import client

from controllers.kube import DEFAULT_REQUEST_TIMEOUT_SECONDS, CustomObjects
from controllers.members import MemberProxy
from failover.core.api import (
    CLUSTER_RESOURCE_BINDINGS,
    CLUSTERS,
    RESOURCE_BINDINGS,
    WORKLOAD_REBALANCERS,
    WORKS,
    Resource,
)
from failover.core.names import ObjectRef, object_key
from failover.reconcile.fencing import MemberCopy

RESOURCES = (RESOURCE_BINDINGS, CLUSTER_RESOURCE_BINDINGS, WORKLOAD_REBALANCERS, CLUSTERS, WORKS)


class KarmadaClient:
    def __init__(self, api_client: client.ApiClient, timeout: float = DEFAULT_REQUEST_TIMEOUT_SECONDS) -> None:
        self.objects = {resource.kind: CustomObjects(api_client, resource, timeout) for resource in RESOURCES}
        self.members = MemberProxy(api_client, timeout)

    def resource(self, kind: str) -> Resource:
        return self.objects[kind].resource

    async def get(self, ref: ObjectRef) -> dict[str, Any]:
        return await asyncio.to_thread(self.objects[ref.kind].get, _key(ref))

    async def patch(self, ref: ObjectRef, merge_patch: Mapping[str, Any]) -> dict[str, Any]:
        return await asyncio.to_thread(self.objects[ref.kind].patch, _key(ref), merge_patch)

    async def patch_status(self, ref: ObjectRef, merge_patch: Mapping[str, Any]) -> dict[str, Any]:
        return await asyncio.to_thread(self.objects[ref.kind].patch_status, _key(ref), merge_patch)

    async def create(self, kind: str, obj: Mapping[str, Any]) -> dict[str, Any]:
        return await asyncio.to_thread(self.objects[kind].create, obj)

    async def delete(self, ref: ObjectRef, resource_version: str | None = None) -> None:
        await asyncio.to_thread(self.objects[ref.kind].delete, _key(ref), resource_version)

    async def member_answers(self, cluster: str, remember_seconds: float) -> bool:
        return await asyncio.to_thread(self.members.answers, cluster, remember_seconds)

    async def get_member(self, copy: MemberCopy) -> dict[str, Any]:
        return await asyncio.to_thread(self.members.get, copy)

    async def delete_member(self, copy: MemberCopy, uid: str) -> None:
        await asyncio.to_thread(self.members.delete, copy, uid)


def _key(ref: ObjectRef) -> str:
    return object_key(ref.namespace, ref.name)
