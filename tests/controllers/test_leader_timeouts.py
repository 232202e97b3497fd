"""Leader election against an apiserver that accepts connections and never answers (a real socket, no fake API):
every Lease call gives up after max(RenewDeadline/2, 1 s), and a stop does not hang on it."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest
from kubernetes import client
from structlog.testing import capture_logs

from controllers.loop.leader import LeaderElector, request_timeout


@pytest.fixture
def black_hole() -> Iterator[str]:
    """An address whose server completes TCP connects and then says nothing."""
    # Never accepted: the kernel completes the connects (up to the backlog) and nothing ever answers.
    listener = socket.create_server(("127.0.0.1", 0), backlog=64)
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    listener.close()


def elector_for(
    url: str, renew_deadline: timedelta = timedelta(seconds=2), clock: Callable[[], float] | None = None
) -> LeaderElector:
    configuration = client.Configuration()
    configuration.host = url
    configuration.retries = 0
    api = client.CoordinationV1Api(client.ApiClient(configuration))
    return LeaderElector(
        api,
        "default",
        "failover-relay",
        "replica-a",
        clock=clock,
        renew_deadline=renew_deadline,
        retry_period=timedelta(milliseconds=200),
    )


def test_the_request_timeout_is_controller_runtimes() -> None:
    assert request_timeout(timedelta(seconds=10)) == 5.0
    assert request_timeout(timedelta(seconds=1)) == 1.0


async def test_a_lease_call_that_gets_no_answer_gives_up_after_the_request_timeout(black_hole: str) -> None:
    elector = elector_for(black_hole)
    started = time.monotonic()
    async with asyncio.timeout(10):  # without a request timeout the call would hang for ever
        assert await elector.try_acquire_or_renew() is False
    assert time.monotonic() - started < elector.request_timeout + 1.5


async def test_a_stop_while_campaigning_against_a_hung_apiserver_is_bounded(black_hole: str) -> None:
    elector = elector_for(black_hole)

    async def lead() -> None:
        raise AssertionError("never leader against a black hole")

    campaign = asyncio.create_task(elector.run(lead))
    await asyncio.sleep(0.3)
    started = time.monotonic()
    campaign.cancel()
    async with asyncio.timeout(10):
        await asyncio.gather(campaign, return_exceptions=True)
    assert time.monotonic() - started < elector.request_timeout + 2
    assert not elector.is_leader


async def test_an_apiserver_that_refuses_is_logged_once_a_minute_with_the_count() -> None:
    closed = socket.create_server(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{closed.getsockname()[1]}"
    closed.close()  # connections to it are refused at once
    now = [1000.0]
    elector = elector_for(url, clock=lambda: now[0])
    with capture_logs() as logs:
        for _ in range(40):  # 80 s of retry periods of 2 s
            assert await elector.try_acquire_or_renew() is False
            now[0] += 2.0
    failed = [line for line in logs if line["event"] == "lease_update_failed"]
    assert [(line["failures"], line["seconds"]) for line in failed] == [(1, 0.0), (31, 60.0)]
