"""`caches_synced` comes when every informer's first list is done, also when one outlives the sync timeout
(controllers/manager.py `wait_synced`): a replica's time to know every object, before it campaigns for the Lease.
The informers wait for their first list on the event loop, not on threads (controllers/loop/informer.py
`wait_synced`)."""

from __future__ import annotations

import asyncio
import io
import json
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from controllers import manager
from controllers.loop.informer import Informer


class Listing:
    """An informer whose first list is done `after` seconds from now."""

    def __init__(self, name: str, after: float) -> None:
        self.name, self.synced = name, asyncio.Event()
        asyncio.get_running_loop().call_later(after, self.synced.set)

    async def wait_synced(self, timeout: float) -> bool:  # noqa: ASYNC109  as controllers.loop.informer.Informer's
        try:
            await asyncio.wait_for(self.synced.wait(), timeout)
        except TimeoutError:
            return False
        return True


class SlowList:
    """A list call that answers an empty list once released, and a watch that lasts until the test ends."""

    def __init__(self) -> None:
        self.released, self.ended = threading.Event(), threading.Event()

    def __call__(self, **kwargs: Any) -> Any:
        if kwargs.get("watch"):
            self.ended.wait()
            raise OSError("the test ended")
        self.released.wait()
        return {"items": [], "metadata": {"resourceVersion": "1"}}


@pytest.fixture
def slow_list() -> Iterator[SlowList]:
    listing = SlowList()
    yield listing
    listing.released.set()
    listing.ended.set()


async def test_a_slow_first_list_is_named_and_caches_synced_waits_for_it(
    json_lines: io.StringIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(manager, "SYNC_TIMEOUT_SECONDS", 0.2)
    monkeypatch.setattr(manager, "SYNC_POLL_SECONDS", 0.05)
    started = time.monotonic()
    await manager.wait_synced([Listing("clusters", 0), Listing("resourcebindings", 0.6)])  # type: ignore[list-item]
    waited = time.monotonic() - started
    lines = [json.loads(line) for line in json_lines.getvalue().splitlines()]
    assert [(line["event"], line.get("waiting")) for line in lines] == [
        ("caches_sync_slow", ["resourcebindings"]),
        ("caches_synced", None),
    ]
    assert 0.6 <= waited < 2


async def test_first_lists_within_the_timeout_log_only_caches_synced(json_lines: io.StringIO) -> None:
    await manager.wait_synced([Listing("clusters", 0), Listing("works", 0.05)])  # type: ignore[list-item]
    assert [json.loads(line)["event"] for line in json_lines.getvalue().splitlines()] == ["caches_synced"]


async def test_informers_waiting_for_their_first_list_leave_the_default_executor_free(slow_list: SlowList) -> None:
    """More waiting informers than asyncio's default executor has threads (min(32, CPUs + 4)): with a thread per
    wait, the loop's other calls on that executor would wait for the slowest first list."""
    loop = asyncio.get_running_loop()
    informers = [
        Informer(f"r{n}", slow_list, lambda key: None, loop) for n in range(min(32, (os.cpu_count() or 1) + 5))
    ]
    for informer in informers:
        informer.start()
    try:
        waits = asyncio.gather(*(informer.wait_synced(30) for informer in informers))
        await asyncio.sleep(0.1)
        assert await asyncio.wait_for(asyncio.to_thread(lambda: "answered"), 5) == "answered"
        slow_list.released.set()
        assert all(await waits)
    finally:
        for informer in informers:
            informer.stop()
