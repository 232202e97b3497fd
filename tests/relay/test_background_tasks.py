"""A background task of the relay that ends by itself takes readiness with it and is logged with its cause
(relay/serve.py `supervised`); one cancelled at shutdown does neither. And an outage is said once, with its end
(controllers/access/outage.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import structlog

from controllers.access.outage import Outage
from relay.serve import supervised
from webhook.health import Readiness


def readiness() -> Readiness:
    return Readiness("127.0.0.1", 0, Path("missing-ca.crt"), lambda: None)


async def test_a_task_that_ends_by_itself_makes_the_relay_unready_and_says_why() -> None:
    ready = readiness()

    async def watcher() -> None:
        raise ConnectionError("the member's apiserver refused\nthe connection")

    with structlog.testing.capture_logs() as logs:
        task = supervised(asyncio.create_task(watcher()), "fence-watcher", ready)
        await asyncio.gather(task, return_exceptions=True)
        await asyncio.sleep(0)  # the done callback runs on the next turn
    assert await ready.problems() == (
        "fence-watcher stopped: ConnectionError: the member's apiserver refused the connection",
    )
    [line] = [line for line in logs if line["event"] == "background_task_stopped"]
    assert (line["task"], line["log_level"]) == ("fence-watcher", "error") and isinstance(
        line["exc_info"], ConnectionError
    )


async def test_a_task_cancelled_at_shutdown_is_no_problem() -> None:
    ready = readiness()
    task = supervised(asyncio.create_task(asyncio.sleep(60)), "reconcile-loop", ready)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await asyncio.sleep(0)
    assert ready.stopped_tasks == {}


def test_an_outage_is_said_once_and_its_end_with_how_long_it_lasted() -> None:
    clock = [0.0]
    with structlog.testing.capture_logs() as logs:
        outage = Outage(structlog.get_logger("test"), "storage_failed", "storage_again", clock=lambda: clock[0])
        outage.succeeded()  # no outage: nothing to say
        for _ in range(3):
            outage.failed(error="OSError")
            clock[0] += 2
        outage.succeeded()
        outage.succeeded()
    assert [(line["event"], line["log_level"]) for line in logs] == [
        ("storage_failed", "warning"),
        ("storage_failed", "debug"),
        ("storage_failed", "debug"),
        ("storage_again", "info"),
    ]
    assert logs[-1]["seconds"] == 6.0 and not outage.ongoing
