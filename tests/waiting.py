"""Waiting until something is so, by polling it: the one sync and the one async way the tests wait.

A test never sleeps for a fixed time to let something happen; it states what it waits for and how long it may take.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

POLL_SECONDS = 0.1
# The async tests' pace: each read is an API call of the loop under test's own apiserver.
EVENTUALLY_POLL_SECONDS = 0.2
EVENTUALLY_SECONDS = 30.0

T = TypeVar("T")


def wait_until(condition: Callable[[], T], timeout: float, what: str, interval: float = POLL_SECONDS) -> T:
    """Call ``condition`` until it returns something truthy and return that; TimeoutError naming ``what``."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise TimeoutError(f"not within {timeout:.0f} s: {what}")
        time.sleep(interval)


async def eventually(
    read: Callable[[], Awaitable[Any] | Any],
    accept: Callable[[Any], bool],
    timeout: float = EVENTUALLY_SECONDS,  # noqa: ASYNC109  own deadline: on expiry it fails with the last value read
) -> Any:
    """`read()`'s value (awaited when it is a coroutine) once `accept` takes it, read again every
    ``EVENTUALLY_POLL_SECONDS``; after `timeout` seconds an AssertionError with the last value read."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = read()
        if asyncio.iscoroutine(value):
            value = await value
        if accept(value):
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"condition not met within {timeout} s; last value: {value!r}"[:3000])
        await asyncio.sleep(EVENTUALLY_POLL_SECONDS)
