"""List-then-watch of one resource into a local cache, with re-list on `410 Gone` and a periodic resync.

The `kubernetes` client is synchronous, so the list/watch loop runs in a daemon thread and hands every change to the
event loop with `call_soon_threadsafe`; the cache itself is changed only from that thread and read from the loop
as whole-object snapshots (dict assignment is atomic under the GIL).

Why each piece:
- the watch restarts from the last seen resourceVersion (bookmarks keep it fresh), so a normal timeout costs nothing;
- `410 Gone` (the version was compacted, e.g. after an apiserver restart or a long partition) means events were lost:
  re-list, diff against the cache, and report every key that changed or disappeared;
- other errors (apiserver down) back off and retry without ever giving up;
- the resync reports every cached key again, so a reconcile that was lost to a bug or a crash is retried.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import structlog
from kubernetes import watch
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from controllers.access.outage import Outage
from failover.core.names import key_of

WATCH_TIMEOUT_SECONDS = 290  # the apiserver closes watches after --min-request-timeout (1800 s) at the latest
# Objects per page of a list (client-go's reflector pages by 500 too); an expired continue token is a 410, relisted.
LIST_PAGE_SIZE = 500
RETRY_MIN_SECONDS = 0.5
RETRY_MAX_SECONDS = 30.0
# The resync period, the one every informer of the loop uses. A resync lists nothing (it re-reports the cache), so
# it costs one cache-only reconcile per object; the period bounds how long a reconcile lost to a bug or a crash
# waits for its retry. Nothing time-based waits for it: a decision that expires later (a toleration, a grace period)
# requeues its key for that moment itself. Five minutes keeps the cost small for thousands of bindings.
RESYNC_SECONDS = 300.0

log = structlog.get_logger("failover_relay.informer")

ListFunction = Callable[..., Mapping[str, Any]]
ChangeHandler = Callable[[str], None]


class Informer:
    def __init__(
        self,
        name: str,
        list_function: ListFunction,
        on_change: ChangeHandler,
        loop: asyncio.AbstractEventLoop,
        resync_seconds: float = RESYNC_SECONDS,
        transform: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None,
    ) -> None:
        self.name = name
        self._list = list_function
        self._on_change = on_change
        self._loop = loop
        self._resync_seconds = resync_seconds
        self._transform = transform or _cached_form
        self.cache: dict[str, Mapping[str, Any]] = {}
        self.synced = threading.Event()
        self._synced_on_loop = asyncio.Event()  # the same fact for the loop's waiters, set through call_soon_threadsafe
        self._stopping = threading.Event()
        self._watch: watch.Watch | None = None
        self._thread = threading.Thread(target=self._run, name=f"informer-{name}", daemon=True)
        # An outage of the apiserver is said once per informer, with its end (`watch_resumed`).
        self._outage = Outage(log, "watch_failed", "watch_resumed")

    def get(self, key: str) -> Mapping[str, Any] | None:
        return self.cache.get(key)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop listing and watching, and drop the cache. The thread may linger in a watch read until the next event
        (bookmarks come about once a minute), holding this informer; the cached objects are freed now all the same,
        by reference counting, though their pages were frozen (`settle_long_lived`)."""
        self._stopping.set()
        if self._watch is not None:
            self._watch.stop()
        self.cache = {}

    async def wait_synced(self, timeout: float) -> bool:  # noqa: ASYNC109  False at the timeout, which is no failure
        """Whether the first list is in the cache within `timeout`. It waits on the loop, not on a thread: seven
        informers waiting on asyncio's default executor (six threads on two cores) held every thread of it for as
        long as the slowest list."""
        try:
            await asyncio.wait_for(self._synced_on_loop.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def _run(self) -> None:
        delay = RETRY_MIN_SECONDS
        resource_version: str | None = None
        next_resync = time.monotonic() + self._resync_seconds
        while not self._stopping.is_set():
            try:
                if resource_version is None:
                    resource_version = self._relist()
                    self._outage.succeeded(resource=self.name)
                resource_version = self._watch_from(resource_version, next_resync)
                self._outage.succeeded(resource=self.name)
                delay = RETRY_MIN_SECONDS
            except ApiException as error:
                if error.status == 410:
                    log.info("watch_expired", resource=self.name)
                    resource_version = None
                    continue
                self._outage.failed(resource=self.name, status=error.status, reason=error.reason)
                self._stopping.wait(delay)
                delay = min(delay * 2, RETRY_MAX_SECONDS)
            except (HTTPError, OSError, ValueError) as error:
                if self._stopping.is_set():  # stop() cut the watch short: not a failure
                    return
                self._outage.failed(resource=self.name, error=type(error).__name__, detail=str(error)[:300])
                self._stopping.wait(delay)
                delay = min(delay * 2, RETRY_MAX_SECONDS)
            if time.monotonic() >= next_resync:
                next_resync = time.monotonic() + self._resync_seconds
                for key in list(self.cache):
                    self._notify(key)

    def _relist(self) -> str:
        """List every object, page by page as client-go's reflector does (`LIST_PAGE_SIZE`): one unpaginated LIST of
        20,000 Karmada v1.19 bindings (130 MB of JSON) outlived the apiserver's 60 s request timeout on a loaded
        two-core machine, and it is held in memory whole before the first object is decoded.

        Each listed object that changed replaces its cached version as its page comes, so a relist after a `410`
        holds one copy of every object, not the old cache beside the new one (which doubles the RSS of 50,000 bindings,
        docs/benchmarks.md); the keys the list no longer has are dropped at its end. Readers meanwhile
        see each object whole, at least as new as before. A relist reports each change as it replaces it, so one cut
        short (an expired continue token is a `410` too) loses no report; the first list reports every key once it
        is complete, when the cache is synced."""
        first = not self.synced.is_set()
        started = time.monotonic()
        listed: set[str] = set()
        changed = 0
        token: str | None = None
        while True:
            listing = self._list(limit=LIST_PAGE_SIZE, _continue=token) if token else self._list(limit=LIST_PAGE_SIZE)
            for item in listing.get("items") or ():
                key = key_of(item)
                listed.add(key)
                if _version(self.cache.get(key)) != _version(item):
                    self.cache[key] = self._transform(item)
                    changed += 1
                    if not first:
                        self._notify(key)
            settle_long_lived()
            token = (listing.get("metadata") or {}).get("continue")
            if not token:
                break
        gone = [key for key in self.cache if key not in listed]
        for key in gone:
            self.cache.pop(key, None)
        log.info(
            "listed",
            resource=self.name,
            first=first,
            objects=len(listed),
            changed=changed,
            gone=len(gone),
            seconds=round(time.monotonic() - started, 3),
        )
        if first:
            self.synced.set()
            self._call_on_loop(self._synced_on_loop.set)
        for key in listed if first else gone:
            self._notify(key)
        return str((listing.get("metadata") or {}).get("resourceVersion") or "")

    def _watch_from(self, resource_version: str, until: float) -> str:
        timeout = max(1, min(WATCH_TIMEOUT_SECONDS, int(until - time.monotonic()) + 1))
        self._watch = watch.Watch()
        try:
            for event in self._watch.stream(
                self._list,
                resource_version=resource_version,
                allow_watch_bookmarks=True,
                timeout_seconds=timeout,
                _request_timeout=timeout + 10,
            ):
                if self._stopping.is_set():
                    break
                kind, obj = event["type"], event["object"]
                if kind == "ERROR":
                    code = obj.get("code") if isinstance(obj, dict) else None
                    raise ApiException(status=code or 500, reason=str(obj.get("message", ""))[:200])
                version = (obj.get("metadata") or {}).get("resourceVersion")
                if version:
                    resource_version = str(version)
                if kind == "BOOKMARK":
                    continue
                key = key_of(obj)
                if kind == "DELETED":
                    self.cache.pop(key, None)
                else:
                    self.cache[key] = self._transform(obj)
                self._notify(key)
        finally:
            self._watch = None
        return resource_version

    def _notify(self, key: str) -> None:
        self._call_on_loop(self._on_change, key)

    def _call_on_loop(self, callback: Callable[..., None], *args: Any) -> None:
        try:
            self._loop.call_soon_threadsafe(callback, *args)
        except RuntimeError:  # the loop is closed: we are shutting down
            self._stopping.set()


def settle_long_lived() -> None:
    """Take what is alive now out of the cyclic collector's sight (`gc.freeze`), after collecting the young
    generations so that little garbage is frozen with it. A listed page is long-lived: the cache holds it until a
    watch event replaces an object, and reference counting frees the replaced one, frozen or not. Unfrozen, every
    full collection walks the whole cache (millions of dicts and lists at 50,000 bindings), more often the more it
    grows: decoding and caching 50,000 v1.19 bindings takes 15.8 s with the collector as it comes and 4.1 s with each
    page frozen, against 3.6 s without a collector (`python bench/informer_gc.py`, docs/benchmarks.md).

    Whatever else is alive is frozen with the page: a caller whose own cycles may be frozen so (the loop's term,
    controllers/manager.py) compares `freezes()` before and after."""
    global _freezes
    gc.collect(1)
    gc.freeze()
    # Two informers' threads may count at once and one count be lost; the count still moves, which is all it says.
    _freezes += 1


_freezes = 0


def freezes() -> int:
    """How many times `settle_long_lived` has frozen what was alive in this process."""
    return _freezes


def _cached_form(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """The object without metadata.managedFields: no decision reads them, and they are often half its size."""
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict) or "managedFields" not in metadata:
        return obj
    return {**obj, "metadata": {k: v for k, v in metadata.items() if k != "managedFields"}}


def _version(obj: Mapping[str, Any] | None) -> str | None:
    return None if obj is None else (obj.get("metadata") or {}).get("resourceVersion")
