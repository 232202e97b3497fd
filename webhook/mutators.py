"""Savepoint injection on `/mutate`: the async adapter between an AdmissionRequest and `failover.state.savepoint`.

The storage lookup blocks (fsspec), so it runs on a small thread pool under a hard deadline below the webhook's
timeout: the apiserver must get our answer, not its own timeout. A lookup that overruns is abandoned, not cancelled
(a thread cannot be), so concurrent admissions of the same job share one lookup instead of piling up threads on a
hung storage, and a bounded pool keeps a hung storage from taking more than `LOOKUP_THREADS` threads. The pool's
threads are daemons: `concurrent.futures` joins its workers at interpreter exit, which would let a hung storage
hold up a shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, NamedTuple

import structlog

from failover.core.api import GroupKind
from failover.core.verdict import ALLOWED, Verdict
from failover.state.checkpoints import CheckpointStore, LookupCache, LookupResult, Outcome
from failover.state.profiles import InjectionProfile
from failover.state.restore import RestoreQuery, carried_path_belongs, find_restore_point
from failover.state.savepoint import (
    CARRIED_FORWARD,
    DEFAULT_FAILURE_MODE,
    LOOKUP_CACHE_TTL_SECONDS,
    LOOKUP_DEADLINE_SECONDS,
    injection_off_verdict,
    injection_verdict,
    plan_lookup,
)
from webhook.blocking import BlockingPool
from webhook.handlers import Mutator
from webhook.metrics import AdmissionMetrics
from webhook.review import AdmissionRequest

# A lookup is a listing and one or two stats; four threads serve far more admissions than failovers produce, and
# bound what a hung storage can hold.
LOOKUP_THREADS = 4

log = structlog.get_logger("failover_relay.savepoint")


class Injection(NamedTuple):
    """What `SavepointMutator.decide` concluded for one object."""

    verdict: Verdict
    result: LookupResult
    outcome: str
    cached: bool


class SavepointMutator:
    """Injects the newest restorable state into objects of one profile's kind.

    `store` is the configured root (where a workload that names no directory of its own is looked up);
    `allowed_roots` are further roots a workload's own directories may lie in. `late_restore` opts in to the
    redeploy of a deployed job whose path arrives late (failover/state/savepoint.py)."""

    def __init__(
        self,
        profile: InjectionProfile,
        store: CheckpointStore,
        *,
        executor: BlockingPool,
        deadline: float = LOOKUP_DEADLINE_SECONDS,
        failure_mode: str = DEFAULT_FAILURE_MODE,
        cache: LookupCache | None = None,
        metrics: AdmissionMetrics | None = None,
        clock: Callable[[], float] = time.monotonic,
        allowed_roots: Sequence[CheckpointStore] = (),
        late_restore: bool = False,
    ) -> None:
        self.profile = profile
        self.store = store
        self.roots = (store, *allowed_roots)
        self.late_restore = late_restore
        self.executor = executor
        self.deadline = deadline
        self.failure_mode = failure_mode
        self.cache = cache if cache is not None else LookupCache(ttl=0)
        self.metrics = metrics
        self.clock = clock
        self._in_flight: dict[tuple[RestoreQuery, str | None], asyncio.Future[LookupResult]] = {}

    async def __call__(self, request: AdmissionRequest) -> Verdict:
        obj = request.object
        if obj is None or request.version != self.profile.version:
            return ALLOWED
        namespace = request.namespace or _namespace_of(obj)
        started = time.perf_counter()
        decided = await self.decide(obj, request.operation, request.old_object, namespace)
        if decided is None:
            return ALLOWED
        verdict = decided.verdict
        if decided.cached:  # the review's own `admission_review` line carries outcome and path (its audit)
            return verdict
        log.info(
            "savepoint_lookup",
            kind=request.kind,
            object=request.display_name,
            operation=request.operation,
            dry_run=request.dry_run,
            outcome=decided.outcome,
            path=decided.result.path,
            reason=decided.result.reason or None,
            job_id=decided.result.job_id or None,
            fallback=decided.result.fallback or None,
            warnings=len(verdict.warnings),
            cached=decided.cached,
            failure_mode=self.failure_mode,
            patched=bool(verdict.patch),
            denied=not verdict.allowed,
            latency_ms=round((time.perf_counter() - started) * 1000, 3),
        )
        return verdict

    async def decide(
        self, obj: Mapping[str, Any], operation: str, old_object: Mapping[str, Any] | None, namespace: str
    ) -> Injection | None:
        """Plan, look up (or carry forward) and decide for one object of this profile, counting the outcome; None
        when the object is not for injection. Shared by this mutator and the Work mutator's manifests."""
        plan = plan_lookup(self.profile, obj, operation, old_object, namespace)
        if plan.skip:
            return None
        cached = False
        if plan.result is not None:
            result = plan.result
        else:
            assert plan.query is not None
            result, cached = await self.lookup(plan.query, plan.carried)
        outcome = CARRIED_FORWARD if result.source == CARRIED_FORWARD else result.outcome.value
        if self.metrics is not None:
            self.metrics.count_savepoint_lookup(outcome)
        verdict = injection_verdict(
            self.profile,
            obj,
            result,
            self.failure_mode,
            namespace,
            operation=operation,
            old_object=old_object,
            late_restore=self.late_restore,
            warnings=plan.warnings,
        )
        return Injection(verdict, result, outcome, cached)

    async def lookup(self, query: RestoreQuery, carried: str | None = None) -> tuple[LookupResult, bool]:
        """The lookup result and whether it came from the cache; a timeout is a result too, never an exception."""
        key = (query, carried)
        cached = self.cache.get(key, self.clock())
        if cached is not None:
            return cached, True
        future = self._in_flight.get(key)
        if future is None:
            future = self._start(key)
        try:
            return await asyncio.wait_for(asyncio.shield(future), self.deadline), False
        except TimeoutError:
            return LookupResult(Outcome.TIMEOUT, reason=f"checkpoint lookup timed out after {self.deadline:g}s"), False

    async def overrun(self) -> list[LookupResult]:
        """The results of lookups still running past their deadline, once they end: what a "timed out" was (a
        refused endpoint is retried by botocore and s3fs for about 10 s before it says so). Bound it with
        `asyncio.timeout`; the lookups that end within the bound are those reported."""
        running = list(self._in_flight.values())
        ended: list[LookupResult] = []
        for future in running:
            with contextlib.suppress(Exception):
                ended.append(await asyncio.shield(future))
        return ended

    def _start(self, key: tuple[RestoreQuery, str | None]) -> asyncio.Future[LookupResult]:
        # The lookup's lines carry the uid of the review that started it; reviews sharing it name the same job.
        future = self.executor.submit(self._find, *key)
        self._in_flight[key] = future
        started = time.perf_counter()

        def finished(done: asyncio.Future[LookupResult]) -> None:
            self._in_flight.pop(key, None)
            if done.cancelled() or done.exception() is not None:
                return
            result = done.result()
            self.cache.put(key, result, self.clock())
            seconds = time.perf_counter() - started
            if seconds > self.deadline:  # its reviews were answered "timed out" (a warning each): this says why
                log.info(
                    "savepoint_lookup_overran",
                    job_id=key[0].job_ids[0].value,
                    seconds=round(seconds, 3),
                    deadline_seconds=self.deadline,
                    outcome=result.outcome.value,
                    path=result.path,
                    reason=result.reason or None,
                )

        future.add_done_callback(finished)
        return future

    def _find(self, query: RestoreQuery, carried: str | None) -> LookupResult:
        """Keep the carried path when it still belongs to the job (it also checks links), else look up afresh."""
        try:
            if carried is not None and carried_path_belongs(carried, self.roots, query):
                return LookupResult(Outcome.FOUND, carried, CARRIED_FORWARD)
            result = find_restore_point(self.roots, self.profile.layouts, self.profile.savepoint_layouts, query)
            if carried is not None and not result.reason:
                result = replace(result, reason="the previous admission's path is not this job's state in the roots")
            return result
        except Exception as error:  # a backend raising something unforeseen is a storage error, not a 500
            log.exception("savepoint_lookup_failed", job_id=query.job_ids[0].value)
            return LookupResult(Outcome.STORAGE_ERROR, reason=f"storage error: {type(error).__name__}")


def savepoint_mutators(
    profiles: Mapping[GroupKind, InjectionProfile],
    store: CheckpointStore,
    *,
    executor: BlockingPool | None = None,
    deadline: float = LOOKUP_DEADLINE_SECONDS,
    failure_mode: str = DEFAULT_FAILURE_MODE,
    cache_ttl: float = LOOKUP_CACHE_TTL_SECONDS,
    metrics: AdmissionMetrics | None = None,
    allowed_roots: Sequence[CheckpointStore] = (),
    late_restore: bool = False,
) -> dict[GroupKind, Mutator]:
    """One mutator per profile, for `AdmissionHandlers(mutators=...)`; they share the thread pool."""
    pool = executor or lookup_pool()
    return {
        group_kind: SavepointMutator(
            profile,
            store,
            executor=pool,
            deadline=deadline,
            failure_mode=failure_mode,
            cache=LookupCache(cache_ttl),
            metrics=metrics,
            allowed_roots=allowed_roots,
            late_restore=late_restore,
        )
        for group_kind, profile in profiles.items()
    }


def _namespace_of(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata")
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    return namespace if isinstance(namespace, str) else ""


def lookup_pool() -> BlockingPool:
    """The pool the savepoint lookups share."""
    return BlockingPool(LOOKUP_THREADS, "checkpoint-lookup")


def injection_off_mutators(profiles: Mapping[GroupKind, InjectionProfile]) -> dict[GroupKind, Mutator]:
    """`/mutate` without a checkpoint root: nothing to inject, and a moved copy is told so (`injection_off_verdict`)."""

    def mutator(profile: InjectionProfile) -> Mutator:
        async def mutate(request: AdmissionRequest) -> Verdict:
            if request.object is None or request.version != profile.version:
                return ALLOWED
            return injection_off_verdict(profile, request.object)

        return mutate

    return {kind: mutator(profile) for kind, profile in profiles.items()}
