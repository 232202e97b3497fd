"""A controller's work queue read out in the tests: what it holds, in the order its workers would get it."""

from __future__ import annotations

from controllers.loop.queue import WorkQueue


async def drain(queue: WorkQueue) -> list[object]:
    """Every key `queue` holds, each taken and marked done."""
    keys = []
    while len(queue):
        key = await queue.get()
        keys.append(key)
        queue.done(key)
    return keys
