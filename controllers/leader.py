"""Lease-based leader election (`coordination.k8s.io/v1`), after client-go's `tools/leaderelection`.

Every replica serves the webhook; only the holder of the Lease reconciles. The holder renews every `retry_period`;
a candidate takes the Lease over only when it has seen the same renewTime for longer than `lease_duration` by its
*own* clock (client-go's observedTime rule), so clock skew between replicas cannot cause two leaders. A leader that
cannot renew within `renew_deadline` steps down before its Lease can expire for the others. On a clean stop the
leader releases the Lease (empty holder, 1 s duration), so a successor takes over at once instead of after 15 s.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import structlog
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

log = structlog.get_logger("failover_relay.leader")

# client-go's defaults for controllers: 15 s lease, 10 s renew deadline, 2 s retry period.
LEASE_DURATION = timedelta(seconds=15)
RENEW_DEADLINE = timedelta(seconds=10)
RETRY_PERIOD = timedelta(seconds=2)


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
        # Read from the worker thread of the API calls as well, so not the event loop's clock.
        self._clock = clock or time.monotonic
        self._observed: Observation | None = None
        self.is_leader = False

    async def run(self, lead: Callable[[], Awaitable[None]]) -> None:
        """Campaign forever; while leader, run `lead()` and cancel it when leadership is lost. Cancel to stop."""
        try:
            while True:
                await self._acquire()
                task = asyncio.create_task(lead(), name="reconcile-as-leader")
                renewing = asyncio.create_task(self._keep_renewing(), name="lease-renewal")
                done, _ = await asyncio.wait({task, renewing}, return_when=asyncio.FIRST_COMPLETED)
                for pending in (task, renewing):
                    pending.cancel()
                await asyncio.gather(task, renewing, return_exceptions=True)
                self.is_leader = False
                for finished in done:
                    if not finished.cancelled() and finished.exception() is not None:
                        log.error("leader_task_failed", task=finished.get_name(), error=repr(finished.exception()))
                log.warning("leadership_lost", lease=f"{self.namespace}/{self.name}", identity=self.identity)
        finally:
            if self.is_leader:
                await self.release()

    async def _acquire(self) -> None:
        while not await self.try_acquire_or_renew():
            await asyncio.sleep(self.retry_period.total_seconds())
        log.info("leadership_acquired", lease=f"{self.namespace}/{self.name}", identity=self.identity)

    async def _keep_renewing(self) -> None:
        last_renewal = self._clock()
        while True:
            await asyncio.sleep(self.retry_period.total_seconds())
            if await self.try_acquire_or_renew():
                last_renewal = self._clock()
            elif self._clock() - last_renewal > self.renew_deadline.total_seconds():
                return

    async def try_acquire_or_renew(self) -> bool:
        try:
            acquired = await asyncio.to_thread(self._try_acquire_or_renew)
        except (ApiException, HTTPError, OSError) as error:
            log.warning("lease_update_failed", error=getattr(error, "reason", None) or type(error).__name__)
            acquired = False
        self.is_leader = acquired
        return acquired

    async def release(self) -> None:
        try:
            await asyncio.to_thread(self._release)
            log.info("leadership_released", lease=f"{self.namespace}/{self.name}", identity=self.identity)
        except (ApiException, HTTPError, OSError) as error:
            log.warning("lease_release_failed", error=getattr(error, "reason", None) or type(error).__name__)
        self.is_leader = False

    def _try_acquire_or_renew(self) -> bool:
        now = datetime.now(timezone.utc)
        duration = int(self.lease_duration.total_seconds())
        try:
            lease = self.api.read_namespaced_lease(self.name, self.namespace)
        except ApiException as error:
            if error.status != 404:
                raise
            body = client.V1Lease(
                metadata=client.V1ObjectMeta(name=self.name, namespace=self.namespace),
                spec=client.V1LeaseSpec(holder_identity=self.identity, lease_duration_seconds=duration,
                                        acquire_time=now, renew_time=now, lease_transitions=0))
            return _conflict_is_false(lambda: self.api.create_namespaced_lease(self.namespace, body))
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
        return _conflict_is_false(lambda: self.api.replace_namespaced_lease(self.name, self.namespace, lease))

    def _release(self) -> None:
        lease = self.api.read_namespaced_lease(self.name, self.namespace)
        if lease.spec is None or lease.spec.holder_identity != self.identity:
            return
        lease.spec.holder_identity = None
        lease.spec.lease_duration_seconds = 1
        lease.spec.renew_time = datetime.now(timezone.utc)
        self.api.replace_namespaced_lease(self.name, self.namespace, lease)


def _record_of(spec: Any) -> LeaseRecord:
    if spec is None:
        return LeaseRecord(None, None, int(LEASE_DURATION.total_seconds()), 0)
    return LeaseRecord(spec.holder_identity, spec.renew_time, spec.lease_duration_seconds or 15,
                       spec.lease_transitions or 0)


def _conflict_is_false(write: Callable[[], Any]) -> bool:
    """Another replica wrote first (409 on update, 409 AlreadyExists on create): we are not the leader."""
    try:
        write()
    except ApiException as error:
        if error.status == 409:
            return False
        raise
    return True
