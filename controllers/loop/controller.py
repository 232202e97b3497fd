"""One controller: a work queue, and workers that reconcile one key at a time.

The informers that fill the queue belong to the loop (controllers/manager.py): one informer per resource, whose
events may queue keys of several controllers (a Cluster's readiness queues the bindings on it).

A reconcile function gets a key and returns when to look again (or None). Raising requeues the key with backoff;
`Conflict` (409: someone wrote the object since we read it) retries at once with fresh data, which is how optimistic
concurrency is meant to be used. Metrics record every outcome (controllers/loop/loop_metrics.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Hashable
from datetime import timedelta

import structlog
import structlog.contextvars
from kubernetes.client.exceptions import ApiException

from controllers.access.kube import conflict
from controllers.loop.loop_metrics import LoopMetrics
from controllers.loop.queue import ShutDown, WorkQueue

Reconcile = Callable[[str], Awaitable[timedelta | None]]

log = structlog.get_logger("failover_relay.controller")


class Controller:
    def __init__(self, name: str, reconcile: Reconcile, metrics: LoopMetrics, workers: int = 2) -> None:
        self.name = name
        self.reconcile = reconcile
        self.metrics = metrics
        self.workers = workers
        self.queue = WorkQueue()

    async def run(self) -> None:
        """Until cancelled: reconcile every key queued."""
        try:
            tasks = [
                asyncio.create_task(self._work(), name=f"{self.name}-worker-{index}") for index in range(self.workers)
            ]
            await asyncio.gather(*tasks)
        finally:
            await self.queue.shut_down()

    async def _work(self) -> None:
        while True:
            try:
                key = await self.queue.get()
            except ShutDown:
                return
            self.metrics.depth.labels(self.name).set(len(self.queue) + self.queue.waiting)
            started = time.perf_counter()
            # Every line the reconcile causes names the key: bound in this worker task's own context, which the
            # reconcile's thread hops (asyncio.to_thread: API calls, events) copy.
            with structlog.contextvars.bound_contextvars(controller=self.name, key=key):
                result = await self._reconcile(key)
            self.metrics.reconciles.labels(self.name, result).inc()
            self.metrics.latency.labels(self.name).observe(time.perf_counter() - started)
            # A reconcile with nothing to write never waits, and neither does `get` on a full queue: without this a
            # worker runs through thousands of such keys in one go while the answers of the others' API calls wait,
            # and a new leader's expired tolerations are acted on at the pace of its first pass over every binding.
            await asyncio.sleep(0)

    async def _reconcile(self, key: Hashable) -> str:
        """Reconcile `key` and queue it again as its outcome asks; the outcome's metric label."""
        try:
            requeue_after = await self.reconcile(str(key))
        except ApiException as error:
            if conflict(error):
                self.queue.add_after(key, 0.05)
                log.info("reconcile_conflict", detail=str(error.body or error.reason)[:300])  # which object, and why
                return "conflict"
            log.warning("reconcile_failed", status=error.status, reason=error.reason, retries=self.queue.retries(key))
            self.queue.add_rate_limited(key)
            return "api-error"
        except Exception as error:  # a bug must not stop the loop; the key is retried with backoff
            log.exception("reconcile_crashed", error=repr(error))
            self.queue.add_rate_limited(key)
            return "error"
        else:
            self.queue.forget(key)
            if requeue_after is not None:
                self.queue.add_after(key, max(requeue_after.total_seconds(), 0.001))
            return "ok"
        finally:
            self.queue.done(key)
