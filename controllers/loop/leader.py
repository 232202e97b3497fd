"""Lease-based leader election (`coordination.k8s.io/v1`), after client-go's `tools/leaderelection`.

Every replica serves the webhook; only the holder of the Lease reconciles. The holder renews every `retry_period`;
a candidate takes the Lease over only when it has seen the same renewTime for longer than `lease_duration` by its
*own* clock (client-go's observedTime rule), so clock skew between replicas cannot cause two leaders. A leader that
cannot renew within `renew_deadline` steps down before its Lease can expire for the others. On a clean stop the
leader releases the Lease (empty holder, 1 s duration), so a successor takes over at once instead of after 15 s.

Every Lease call carries a request timeout of max(renew_deadline / 2, 1 s), as controller-runtime bounds its
leader-election client (pkg/leaderelection: `restClient.Timeout`), and a renewal attempt is abandoned when the renew
deadline passes, so a hung apiserver connection cannot keep a leader from stepping down. On stop the renewal is
cancelled and the call it has in flight is awaited before the release, which is retried on a conflict while the
Lease still names us: otherwise the release races the renewal and fails with 409, and the next replica waits a
whole lease duration.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any, TypeVar

import structlog
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from failover.core.names import object_key

log = structlog.get_logger("failover_relay.leader")

# client-go's defaults for controllers: 15 s lease, 10 s renew deadline, 2 s retry period.
LEASE_DURATION = timedelta(seconds=15)
RENEW_DEADLINE = timedelta(seconds=10)
RETRY_PERIOD = timedelta(seconds=2)
# A failing Lease call is logged at the first failure and then once a minute with the count, not every retry period.
FAILURE_LOG_SECONDS = 60.0
# Attempts of a release that meets a conflict (our own last renewal landing after its read).
RELEASE_ATTEMPTS = 5

T = TypeVar("T")


def request_timeout(renew_deadline: timedelta) -> float:
    """Seconds allowed to one Lease call: controller-runtime's max(RenewDeadline/2, 1 s)."""
    return max(renew_deadline.total_seconds() / 2, 1.0)


@dataclass(frozen=True)
class LeaseRecord:
    holder: str | None
    renew_time: datetime | None
    duration_seconds: int
    transitions: int


@dataclass(frozen=True)
class Observation:
    """The last record we saw and when (by our clock) we first saw it."""

    record: LeaseRecord
    seen_at: float


def may_acquire(record: LeaseRecord | None, identity: str, observed: Observation | None, now: float) -> bool:
    """Whether `identity` may write itself as holder now (pure: the whole election rule)."""
    if record is None or not record.holder or record.holder == identity:
        return True
    if observed is None or observed.record != record:
        return False  # a record we have not watched for a whole lease duration yet
    return now - observed.seen_at > record.duration_seconds


class LeaderElector:
    def __init__(
        self,
        api: client.CoordinationV1Api,
        namespace: str,
        name: str,
        identity: str,
        clock: Callable[[], float] | None = None,
        lease_duration: timedelta = LEASE_DURATION,
        renew_deadline: timedelta = RENEW_DEADLINE,
        retry_period: timedelta = RETRY_PERIOD,
    ) -> None:
        self.api, self.namespace, self.name, self.identity = api, namespace, name, identity
        self.lease_duration, self.renew_deadline, self.retry_period = lease_duration, renew_deadline, retry_period
        self.request_timeout = request_timeout(renew_deadline)
        # Read from the worker thread of the API calls as well, so not the event loop's clock.
        self._clock = clock or time.monotonic
        self._observed: Observation | None = None
        self._in_flight: asyncio.Future[bool] | None = None
        # The Lease's calls on a thread of their own: on asyncio's default executor (6 threads on 2 cores) a renewal
        # could queue behind whatever else the process runs there, and a leader that misses its renew deadline
        # steps down. One at a time is all the Lease needs; each call ends within `request_timeout`.
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="lease")
        self.is_leader = False
        # The Lease's unbroken run of failed calls: when it began, how many, when last logged (`_failed`).
        self._failing: tuple[float, int, float] | None = None

    async def run(self, lead: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Campaign forever; while leader, run `lead()` and cancel it when leadership is lost. Cancel to stop."""
        task: asyncio.Task[None] | None = None
        renewing: asyncio.Task[None] | None = None
        try:
            while True:
                await self._acquire()
                task = asyncio.create_task(lead(), name="reconcile-as-leader")
                renewing = asyncio.create_task(self._keep_renewing(), name="lease-renewal")
                done, _ = await asyncio.wait({task, renewing}, return_when=asyncio.FIRST_COMPLETED)
                await _cancel_and_wait(task, renewing)
                self.is_leader = False
                for finished in done:
                    if not finished.cancelled() and finished.exception() is not None:
                        log.error("leader_task_failed", task=finished.get_name(), exc_info=finished.exception())
                log.warning("leadership_lost", lease=object_key(self.namespace, self.name), identity=self.identity)
        finally:
            # The renewal first, and the call it has in flight: only then does is_leader say who holds the Lease,
            # and only then can the release not be overtaken by our own renewal.
            await _cancel_and_wait(task, renewing)
            await self._settle()
            if self.is_leader:
                await self.release()

    async def _acquire(self) -> None:
        while not await self.try_acquire_or_renew():  # noqa: ASYNC110  polls the apiserver's Lease, no local Event to wait on
            await asyncio.sleep(self.retry_period.total_seconds())
        log.info("leadership_acquired", lease=object_key(self.namespace, self.name), identity=self.identity)

    async def _keep_renewing(self) -> None:
        deadline = self.renew_deadline.total_seconds()
        last_renewal = self._clock()
        while True:
            await asyncio.sleep(self.retry_period.total_seconds())
            try:
                # client-go renews under a context that ends at the renew deadline: a call still hanging then is
                # given up and the leader steps down.
                async with asyncio.timeout(max(deadline - (self._clock() - last_renewal), 0.0)):
                    renewed = await self.try_acquire_or_renew()
            except TimeoutError:
                renewed = False
            if renewed:
                last_renewal = self._clock()
            elif self._clock() - last_renewal > deadline:
                return

    async def try_acquire_or_renew(self) -> bool:
        # The attempt is its own task, shielded from the caller's cancellation, so that a stop (or the renew
        # deadline) can wait for its outcome instead of leaving a write to land behind the release.
        attempt = asyncio.ensure_future(self._attempt())
        self._in_flight = attempt
        return await asyncio.shield(attempt)

    async def _attempt(self) -> bool:
        try:
            acquired = await self._call(self._try_acquire_or_renew)
        except (ApiException, HTTPError, OSError) as error:
            self._failed(getattr(error, "reason", None) or type(error).__name__)
            acquired = False
        else:
            if self._failing is not None:
                began, failures, _ = self._failing
                log.info("lease_update_recovered", failures=failures, seconds=round(self._clock() - began, 1))
                self._failing = None
        self.is_leader = acquired
        return acquired

    def _failed(self, error: object) -> None:
        """A failed Lease call, logged at its first and then once per FAILURE_LOG_SECONDS with the count: with the
        apiserver down a call fails every retry period, for as long as the outage lasts."""
        now = self._clock()
        began, failures, logged = self._failing or (now, 0, now - FAILURE_LOG_SECONDS)
        failures += 1
        if now - logged >= FAILURE_LOG_SECONDS:
            log.warning("lease_update_failed", error=error, failures=failures, seconds=round(now - began, 1))
            logged = now
        self._failing = (began, failures, logged)

    async def _call(self, function: Callable[[], T]) -> T:
        """`function()` on the Lease's thread, in a copy of the caller's context (as `asyncio.to_thread`)."""
        context = contextvars.copy_context()
        return await asyncio.get_running_loop().run_in_executor(self._thread, partial(context.run, function))

    async def _settle(self) -> None:
        """Wait (at most one request timeout and a second) for the Lease call in flight, if any."""
        attempt = self._in_flight
        if attempt is not None and not attempt.done():
            await asyncio.wait({attempt}, timeout=self.request_timeout + 1.0)

    async def release(self) -> None:
        for attempt in range(1, RELEASE_ATTEMPTS + 1):
            try:
                released = await self._call(self._release)
            except ApiException as error:
                if error.status == 409 and attempt < RELEASE_ATTEMPTS:
                    log.info("lease_release_conflict", attempt=attempt)  # re-read: is it still ours?
                    continue
                log.warning("lease_release_failed", error=error.reason or str(error.status))
                break
            except (HTTPError, OSError) as error:
                log.warning("lease_release_failed", error=getattr(error, "reason", None) or type(error).__name__)
                break
            if released:
                log.info("leadership_released", lease=object_key(self.namespace, self.name), identity=self.identity)
            break
        self.is_leader = False

    def _try_acquire_or_renew(self) -> bool:
        now = datetime.now(UTC)
        duration = int(self.lease_duration.total_seconds())
        try:
            lease = self.api.read_namespaced_lease(self.name, self.namespace, _request_timeout=self.request_timeout)
        except ApiException as error:
            if error.status != 404:
                raise
            body = client.V1Lease(
                metadata=client.V1ObjectMeta(name=self.name, namespace=self.namespace),
                spec=client.V1LeaseSpec(
                    holder_identity=self.identity,
                    lease_duration_seconds=duration,
                    acquire_time=now,
                    renew_time=now,
                    lease_transitions=0,
                ),
            )
            return _conflict_is_false(
                lambda: self.api.create_namespaced_lease(self.namespace, body, _request_timeout=self.request_timeout)
            )
        record = _record_of(lease.spec)
        if self._observed is None or self._observed.record != record:
            self._observed = Observation(record, self._clock())
        if not may_acquire(record, self.identity, self._observed, self._clock()):
            return False
        spec = lease.spec or client.V1LeaseSpec()
        if record.holder != self.identity:
            spec.acquire_time = now
            spec.lease_transitions = record.transitions + 1
        spec.holder_identity = self.identity
        spec.lease_duration_seconds = duration
        spec.renew_time = now
        lease.spec = spec
        return _conflict_is_false(
            lambda: self.api.replace_namespaced_lease(
                self.name, self.namespace, lease, _request_timeout=self.request_timeout
            )
        )

    def _release(self) -> bool:
        """Empty the holder if it is still us; False when the Lease is no longer ours (nothing to release)."""
        lease = self.api.read_namespaced_lease(self.name, self.namespace, _request_timeout=self.request_timeout)
        if lease.spec is None or lease.spec.holder_identity != self.identity:
            return False
        lease.spec.holder_identity = None
        lease.spec.lease_duration_seconds = 1
        lease.spec.renew_time = datetime.now(UTC)
        self.api.replace_namespaced_lease(self.name, self.namespace, lease, _request_timeout=self.request_timeout)
        return True


async def _cancel_and_wait(*tasks: asyncio.Task[None] | None) -> None:
    running = [task for task in tasks if task is not None]
    for task in running:
        task.cancel()
    await asyncio.gather(*running, return_exceptions=True)


def _record_of(spec: Any) -> LeaseRecord:
    if spec is None:
        return LeaseRecord(None, None, int(LEASE_DURATION.total_seconds()), 0)
    return LeaseRecord(
        spec.holder_identity, spec.renew_time, spec.lease_duration_seconds or 15, spec.lease_transitions or 0
    )


def _conflict_is_false(write: Callable[[], Any]) -> bool:
    """Another replica wrote first (409 on update, 409 AlreadyExists on create): we are not the leader."""
    try:
        write()
    except ApiException as error:
        if error.status == 409:
            return False
        raise
    return True
