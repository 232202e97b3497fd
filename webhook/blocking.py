"""Blocking calls (storage lookups, API reads) off the event loop, on a bounded set of daemon threads.

Why not `loop.run_in_executor`: `concurrent.futures` joins its workers at interpreter exit, which would let a hung
storage hold up a shutdown, and its pool grows to its maximum under a hung storage. Here a call that overruns its
deadline is abandoned (a thread cannot be cancelled) and holds one of a fixed number of threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import queue
import threading
from collections.abc import Callable
from typing import Any


class BlockingPool:
    """A fixed set of daemon threads running blocking calls; results are delivered to the caller's event loop."""

    def __init__(self, threads: int, name: str = "blocking-call") -> None:
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True) for i in range(threads)]
        for thread in self._threads:
            thread.start()

    def submit(self, function: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
        """Run `function(*args)` on a pool thread, in a copy of the caller's context (as `asyncio.to_thread` does):
        what the caller bound for its log lines (a review's uid) is on the lines the call writes too."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._jobs.put((loop, future, contextvars.copy_context(), function, args))
        return future

    def shutdown(self) -> None:
        """Stop idle threads; one stuck in a call ends with the process."""
        for _ in self._threads:
            self._jobs.put(None)

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            loop, future, context, function, args = job
            try:
                outcome, error = context.run(function, *args), None
            except BaseException as raised:  # noqa: BLE001  the call's failure, whatever it is, goes to the awaiting coroutine
                outcome, error = None, raised
            with contextlib.suppress(RuntimeError):  # the loop closed while we were waiting
                loop.call_soon_threadsafe(_settle, future, outcome, error)


def _settle(future: asyncio.Future[Any], outcome: Any, error: BaseException | None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(outcome)
