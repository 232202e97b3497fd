"""The peer: our validation and savepoint mutation written as kopf handlers, served by kopf's own WebhookServer.

    python bench/kopf_server.py PORT CERT KEY CHECKPOINT_ROOT      # runs in bench/.venv, where kopf is installed

`kopf run` cannot serve webhooks without a cluster: it logs in first, and its webhook-server task waits until the
resource observer has scanned the cluster's API discovery. So this drives the same pieces the reactor's
`spawn_tasks` wires (kopf/_core/reactor/running.py): `admission_webhook_server` with
`functools.partial(serve_admission_request, ...)`, with the two resources' discovery pre-filled in `Insights` and the
cluster-bound tasks (login, observers, peering, webhook-configuration managers) left out. The per-request path is
kopf's unchanged: `WebhookServer._serve` → `serve_admission_request` → handler → `build_response`. Logging is
`kopf run --log-format=json`'s (one "Webhook ... succeeded." line per request plus aiohttp's access log).
"""

from __future__ import annotations

import asyncio
import functools
import sys
from pathlib import Path
from typing import Any

import kopf
from kopf._cogs.aiokits import aiovalues
from kopf._cogs.structs import references
from kopf._core.engines import admission, indexing
from kopf._core.reactor import inventory

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from failover.admission.policy import validate_policy
from failover.core.api import FLINK_DEPLOYMENT
from failover.state.checkpoints import DEFAULT_LAYOUT, LookupCache, open_store
from failover.state.profiles import load_profiles
from failover.state.restore import find_restore_point
from failover.state.savepoint import FAIL_OPEN, injection_verdict, plan_lookup

LABEL = "application.karmada.io/failover-jobid"
# The relay's defaults (relay/settings/declarations.py SavepointSettings), so both servers do the same work per review.
LOOKUP_DEADLINE_SECONDS = 2.0
CACHE_TTL_SECONDS = 10.0

PROFILE = load_profiles([], label=LABEL, layouts=(DEFAULT_LAYOUT,))[FLINK_DEPLOYMENT]
CACHE = LookupCache(CACHE_TTL_SECONDS)
STORE = None  # set in main(): the checkpoint root is an argument

PROPAGATION_POLICIES = references.Resource(
    group="policy.karmada.io",
    version="v1alpha1",
    plural="propagationpolicies",
    kind="PropagationPolicy",
    singular="propagationpolicy",
    namespaced=True,
    preferred=True,
    verbs=frozenset({"create", "delete", "get", "list", "patch", "update", "watch"}),
)
FLINK_DEPLOYMENTS = references.Resource(
    group="flink.apache.org",
    version="v1beta1",
    plural="flinkdeployments",
    kind="FlinkDeployment",
    singular="flinkdeployment",
    namespaced=True,
    preferred=True,
    verbs=frozenset({"create", "delete", "get", "list", "patch", "update", "watch"}),
)


@kopf.on.validate("policy.karmada.io", "v1alpha1", "propagationpolicies", id="validate")
async def validate(body: kopf.Body, warnings: list[str], **_: Any) -> None:
    verdict = validate_policy(dict(body))
    warnings.extend(verdict.warnings)
    if not verdict.allowed:
        raise kopf.AdmissionError(verdict.message, code=422)


@kopf.on.mutate("flink.apache.org", "v1beta1", "flinkdeployments", id="mutate")
async def mutate(
    body: kopf.Body, old: kopf.Body | None, operation: str, patch: kopf.Patch, warnings: list[str], **_: Any
) -> None:
    obj = dict(body)
    namespace = body.metadata.namespace or ""
    plan = plan_lookup(PROFILE, obj, operation, dict(old) if old is not None else None, namespace)
    if plan.skip:
        return
    result = plan.result
    if result is None:
        key = plan.query
        loop = asyncio.get_running_loop()
        result = CACHE.get(key, loop.time())
        if result is None:
            result = await asyncio.wait_for(
                asyncio.to_thread(find_restore_point, (STORE,), PROFILE.layouts, PROFILE.savepoint_layouts, plan.query),
                LOOKUP_DEADLINE_SECONDS,
            )
            CACHE.put(key, result, loop.time())
    verdict = injection_verdict(
        PROFILE,
        obj,
        result,
        FAIL_OPEN,
        namespace,
        operation=operation,
        old_object=dict(old) if old is not None else None,
        warnings=plan.warnings,
    )
    warnings.extend(verdict.warnings)
    if not verdict.allowed:
        raise kopf.AdmissionError(verdict.message, code=422)
    # kopf takes a merge patch and computes the JSONPatch itself; our ops only add or replace whole values.
    for op in verdict.patch:
        parts = [part.replace("~1", "/").replace("~0", "~") for part in op["path"].split("/")[1:]]
        node = patch
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = op["value"]


async def serve(port: int, cert: str, key: str) -> None:
    settings = kopf.OperatorSettings()
    settings.admission.server = kopf.WebhookServer(addr="127.0.0.1", port=port, certfile=cert, pkeyfile=key)
    settings.admission.managed = None
    registry = kopf.get_default_registry()  # where the decorators above registered the handlers
    insights = references.Insights()
    insights.webhook_resources.update({PROPAGATION_POLICIES, FLINK_DEPLOYMENTS})
    insights.ready_resources.set()
    indexers = indexing.OperatorIndexers()
    webhookfn = functools.partial(
        admission.serve_admission_request,
        settings=settings,
        registry=registry,
        insights=insights,
        memories=inventory.ResourceMemories(),
        memobase=kopf.Memo(),
        indices=indexers.indices,
    )
    await admission.admission_webhook_server(
        settings=settings, registry=registry, insights=insights, webhookfn=webhookfn, container=aiovalues.Container()
    )


def main() -> None:
    global STORE
    port, cert, key, checkpoint_root = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    STORE = open_store(checkpoint_root)
    kopf.configure(log_format=kopf.LogFormat.JSON)  # as `kopf run --log-format=json`
    asyncio.run(serve(port, cert, key))


if __name__ == "__main__":
    main()
