"""Waiting in the end-to-end tests for what the relay's loop does to the apiserver's objects."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any


async def eventually(
    read: Callable[[], Awaitable[Any] | Any],
    accept: Callable[[Any], bool],
    timeout: float = 30.0,  # noqa: ASYNC109  own deadline: on expiry it fails with the last value read
) -> Any:
    """`read()`'s value (awaited when it is a coroutine) once `accept` takes it, read again every 0.2 s; after `timeout`
    seconds an AssertionError with the last value read."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = read()
        if asyncio.iscoroutine(value):
            value = await value
        if accept(value):
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"condition not met within {timeout} s; last value: {value!r}"[:3000])
        await asyncio.sleep(0.2)
