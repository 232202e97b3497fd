"""Workers take turns: one running through reconciles that never wait does not hold back another's API answer
(controllers/loop/controller.py)."""

from __future__ import annotations

import asyncio

from prometheus_client import CollectorRegistry

from controllers.loop.controller import Controller
from controllers.loop.loop_metrics import LoopMetrics


async def test_an_answer_is_taken_in_between_reconciles_that_never_wait() -> None:
    loop = asyncio.get_running_loop()
    quiet: list[str] = []
    answered_after: list[int] = []
    all_done = asyncio.Event()

    async def reconcile(key: str) -> None:
        if key == "writes":
            answer = loop.create_future()
            loop.call_soon(answer.set_result, None)  # the API's answer, delivered by the event loop as a thread's is
            await answer
            answered_after.append(len(quiet))
        else:
            quiet.append(key)  # a healthy binding: decided on the cache, nothing to write
        if len(quiet) == 1000 and answered_after:
            all_done.set()

    controller = Controller("bindings", reconcile, LoopMetrics(CollectorRegistry()), workers=2)
    controller.queue.add("writes", first=True)
    for index in range(1000):
        controller.queue.add(f"healthy-{index}")
    running = asyncio.create_task(controller.run())
    try:
        await asyncio.wait_for(all_done.wait(), 30)
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
    assert answered_after[0] <= 2  # not after the other worker's thousand
