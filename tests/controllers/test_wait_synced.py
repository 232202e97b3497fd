"""`caches_synced` comes when every informer's first list is done, also when one outlives the sync timeout
(controllers/manager.py `wait_synced`): a new leader's time to know every object, as docs/benchmarks.md times it."""

from __future__ import annotations

import asyncio
import io
import json
import threading
import time

import pytest

from controllers import manager


class Listing:
    """An informer whose first list is done `after` seconds from now."""

    def __init__(self, name: str, after: float) -> None:
        self.name, self.synced = name, threading.Event()
        threading.Timer(after, self.synced.set).start()

    async def wait_synced(self, timeout: float) -> bool:  # noqa: ASYNC109  as controllers.informer.Informer's
        return await asyncio.to_thread(self.synced.wait, timeout)


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
