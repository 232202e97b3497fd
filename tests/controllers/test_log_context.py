"""Every line a reconcile causes names its controller and key (controllers/loop/controller.py binds them per
reconcile)."""

from __future__ import annotations

import asyncio
import io
import json

import structlog
from prometheus_client import CollectorRegistry

from controllers.loop.controller import Controller
from controllers.loop.loop_metrics import LoopMetrics

log = structlog.get_logger("failover_relay.test")


def records(stream: io.StringIO) -> dict[str, dict]:
    return {record["event"]: record for record in map(json.loads, stream.getvalue().splitlines())}


async def test_lines_logged_in_a_reconcile_and_its_thread_hops_carry_the_key(json_lines: io.StringIO) -> None:
    reconciled = asyncio.Event()

    async def reconcile(key: str) -> None:
        log.info("on_the_loop")
        await asyncio.to_thread(log.info, "in_a_thread")  # as the client's API calls run
        reconciled.set()

    controller = Controller("resourcebindings", reconcile, LoopMetrics(CollectorRegistry()), workers=1)
    controller.queue.add("ns/a")
    running = asyncio.create_task(controller.run())
    try:
        await asyncio.wait_for(reconciled.wait(), 5)
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
    log.info("after")

    lines = records(json_lines)
    for event in ("on_the_loop", "in_a_thread"):
        assert lines[event]["controller"] == "resourcebindings" and lines[event]["key"] == "ns/a"
    assert "key" not in lines["after"]


async def test_a_failed_reconciles_line_carries_the_key(json_lines: io.StringIO) -> None:
    raised = asyncio.Event()

    async def reconcile(key: str) -> None:
        raised.set()  # the worker logs the failure before it next waits, so before this test resumes
        raise RuntimeError("a bug")

    controller = Controller("clusters", reconcile, LoopMetrics(CollectorRegistry()), workers=1)
    controller.queue.add("member1")
    running = asyncio.create_task(controller.run())
    try:
        await asyncio.wait_for(raised.wait(), 5)
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)

    crashed = records(json_lines)["reconcile_crashed"]
    assert crashed["controller"] == "clusters" and crashed["key"] == "member1"
