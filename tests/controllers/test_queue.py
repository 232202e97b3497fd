"""The work queue's promises: one entry per key, no key processed twice at once, nothing lost, backoff."""

from __future__ import annotations

import asyncio

import pytest

from controllers.loop.queue import BASE_RETRY_SECONDS, ShutDown, WorkQueue
from tests.controllers.queues import drain


async def test_adding_a_key_many_times_queues_it_once() -> None:
    queue = WorkQueue()
    for _ in range(10):
        queue.add("ns/a")
    queue.add("ns/b")
    assert await drain(queue) == ["ns/a", "ns/b"]


async def test_a_key_added_first_goes_before_the_others_once() -> None:
    queue = WorkQueue()
    for key in ("ns/a", "ns/b", "ns/c"):
        queue.add(key)
    queue.add("ns/urgent", first=True)
    queue.add("ns/later", first=True)
    queue.add("ns/b", first=True)  # already queued: stays where it is, once
    assert await drain(queue) == ["ns/urgent", "ns/later", "ns/a", "ns/b", "ns/c"]


async def test_a_key_added_while_processing_comes_back_after_done() -> None:
    queue = WorkQueue()
    queue.add("k")
    key = await queue.get()
    queue.add("k")
    assert len(queue) == 0  # not handed to a second worker
    queue.done(key)
    assert await drain(queue) == ["k"]


async def test_add_after_delays_and_the_earliest_schedule_wins() -> None:
    queue = WorkQueue()
    queue.add_after("k", 10)
    queue.add_after("k", 0.02)
    queue.add_after("k", 5)
    assert len(queue) == 0 and queue.waiting == 1
    key = await asyncio.wait_for(queue.get(), 1)
    assert key == "k"
    queue.done(key)
    await asyncio.sleep(0.05)
    assert len(queue) == 0 and queue.waiting == 0


async def test_rate_limited_retries_back_off_exponentially_until_forget() -> None:
    queue = WorkQueue()
    loop = asyncio.get_running_loop()
    for attempt in range(4):
        started = loop.time()
        queue.add_rate_limited("k")
        key = await asyncio.wait_for(queue.get(), 1)
        assert loop.time() - started >= BASE_RETRY_SECONDS * 2**attempt * 0.9
        queue.done(key)
    assert queue.retries("k") == 4
    queue.forget("k")
    assert queue.retries("k") == 0


async def test_shut_down_wakes_idle_workers() -> None:
    queue = WorkQueue()
    worker = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    await queue.shut_down()
    with pytest.raises(ShutDown):
        await asyncio.wait_for(worker, 1)
    queue.add("ignored")
    assert len(queue) == 0


async def test_concurrent_workers_never_share_a_key() -> None:
    queue = WorkQueue()
    active: set[str] = set()
    overlaps = 0
    handled = 0

    async def worker() -> None:
        nonlocal overlaps, handled
        while True:
            try:
                key = await queue.get()
            except ShutDown:
                return
            overlaps += key in active
            active.add(key)
            await asyncio.sleep(0.001)
            active.discard(key)
            handled += 1
            queue.done(key)

    workers = [asyncio.create_task(worker()) for _ in range(4)]
    for round_ in range(50):
        for key in ("a", "b", "c"):
            queue.add(key)
        await asyncio.sleep(0.0005 * (round_ % 3))
    while len(queue):  # noqa: ASYNC110  WorkQueue has no drained event to wait on; its length is the signal
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.02)
    await queue.shut_down()
    await asyncio.gather(*workers)
    assert overlaps == 0
    assert 3 <= handled <= 150
