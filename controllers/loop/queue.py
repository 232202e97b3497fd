"""A rate-limited work queue of object keys, with client-go's workqueue semantics on asyncio.

- A key is queued at most once however often it is added (de-duplication): ten watch events for one binding cause
  one reconcile that sees the latest object.
- A key being processed is never handed to a second worker; if it is added meanwhile, it is queued again when the
  first worker calls `done`, so no change is lost.
- Failures are retried with per-key exponential backoff (5 ms doubling up to 5 min, like client-go's default
  controller rate limiter); `forget` resets a key's backoff after a success.
- `add(key, first=True)` puts a key before the others (the first ones among themselves in their order): when a new
  leader queues every key of its cache, the bindings that may need a write (an expired toleration) must not wait
  behind every healthy one;
- `add_after` schedules a key for later (requeue-after from a decision, e.g. when a toleration expires).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Hashable

BASE_RETRY_SECONDS = 0.005
MAX_RETRY_SECONDS = 300.0


class ShutDown(Exception):
    """`get` on a queue that was shut down and is empty: the worker should return."""


class WorkQueue:
    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        self._queue: deque[Hashable] = deque()
        self._first: deque[Hashable] = deque()  # keys added with first=True, in their order, served before _queue
        self._queued: set[Hashable] = set()
        self._processing: set[Hashable] = set()
        self._dirty: set[Hashable] = set()
        self._failures: dict[Hashable, int] = {}
        self._timers: dict[Hashable, tuple[float, asyncio.TimerHandle]] = {}
        self._ready = asyncio.Condition()
        self._shutting_down = False
        self._clock = clock or asyncio.get_running_loop().time

    def __len__(self) -> int:
        return len(self._first) + len(self._queue)

    @property
    def waiting(self) -> int:
        """Keys scheduled for later (delayed or backing off)."""
        return len(self._timers)

    def add(self, key: Hashable, first: bool = False) -> None:
        """Queue `key` (at the front with `first`: a key that may need a write goes before thousands that do not)."""
        if self._shutting_down:
            return
        if key in self._processing:
            self._dirty.add(key)
            return
        if key in self._queued:
            return
        self._queued.add(key)
        (self._first if first else self._queue).append(key)
        asyncio.get_running_loop().create_task(self._notify())

    def add_after(self, key: Hashable, delay: float) -> None:
        """Add `key` after `delay` seconds; an earlier pending schedule for the same key wins."""
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(key)
            return
        due = self._clock() + delay
        pending = self._timers.get(key)
        if pending is not None:
            if pending[0] <= due:
                return
            pending[1].cancel()
        handle = asyncio.get_running_loop().call_later(delay, self._fire, key)
        self._timers[key] = (due, handle)

    def add_rate_limited(self, key: Hashable) -> None:
        """Retry `key` after its backoff; each call doubles the next one until `forget`."""
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        self.add_after(key, min(BASE_RETRY_SECONDS * (2**failures), MAX_RETRY_SECONDS))

    def retries(self, key: Hashable) -> int:
        return self._failures.get(key, 0)

    def forget(self, key: Hashable) -> None:
        self._failures.pop(key, None)

    async def get(self) -> Hashable:
        async with self._ready:
            while not self._first and not self._queue:
                if self._shutting_down:
                    raise ShutDown
                await self._ready.wait()
            key = (self._first or self._queue).popleft()
            self._queued.discard(key)
            self._processing.add(key)
            return key

    def done(self, key: Hashable) -> None:
        self._processing.discard(key)
        if key in self._dirty:
            self._dirty.discard(key)
            self.add(key)

    async def shut_down(self) -> None:
        self._shutting_down = True
        for _, handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        async with self._ready:
            self._ready.notify_all()

    def _fire(self, key: Hashable) -> None:
        self._timers.pop(key, None)
        self.add(key)

    async def _notify(self) -> None:
        async with self._ready:
            self._ready.notify()
