"""Leader election against a real kube-apiserver: a leader whose apiserver stops answering (its calls go to an address
that accepts connections and never replies) steps down within the renew deadline, and a stopped leader always releases
its Lease, so the next leader need not wait out its lease duration."""

from __future__ import annotations

import asyncio
import copy
import random
import socket
import threading
import time
from collections.abc import Iterator
from datetime import timedelta

import pytest
from kubernetes import client, config

from controllers.loop.leader import LeaderElector
from tests.envtest import ControlPlane

pytestmark = pytest.mark.envtest

RENEW_DEADLINE = timedelta(seconds=2)


def coordination_api(control_plane: ControlPlane) -> client.CoordinationV1Api:
    return client.CoordinationV1Api(config.new_client_from_config(config_file=str(control_plane.kubeconfig_path)))


class Leading:
    """A `lead()` for `LeaderElector.run` that says when it started and when it was stopped (leadership lost)."""

    def __init__(self) -> None:
        self.leading = asyncio.Event()
        self.stepped_down = asyncio.Event()

    async def __call__(self) -> None:
        self.leading.set()
        try:
            await asyncio.Event().wait()
        finally:
            self.stepped_down.set()


def short_elector(api: client.CoordinationV1Api, namespace: str, name: str) -> LeaderElector:
    """A leader that must renew within 2 s (lease 3 s, a try every 0.25 s)."""
    return LeaderElector(
        api,
        namespace,
        name,
        "replica-a",
        lease_duration=timedelta(seconds=3),
        renew_deadline=RENEW_DEADLINE,
        retry_period=timedelta(milliseconds=250),
    )


@pytest.fixture
def black_hole() -> Iterator[str]:
    """An address whose server completes TCP connects (the kernel's backlog) and then never answers."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=64)
    yield f"https://127.0.0.1:{listener.getsockname()[1]}"
    listener.close()


async def test_a_leader_whose_apiserver_hangs_steps_down_within_the_renew_deadline(
    control_plane: ControlPlane, namespace: str, black_hole: str
) -> None:
    api = coordination_api(control_plane)
    elector = short_elector(api, namespace, "hang-test")
    lead = Leading()
    campaign = asyncio.create_task(elector.run(lead))
    try:
        async with asyncio.timeout(10):
            await lead.leading.wait()
        await asyncio.sleep(0.5)  # a few renewals first
        # From now on every call is accepted and never answered. (A new client: the kubeconfig's token refresh
        # hook would set the host back before each call.)
        hung = copy.copy(api.api_client.configuration)
        hung.refresh_api_key_hook = None
        hung.host = black_hole
        api.api_client = client.ApiClient(hung)
        frozen_at = time.monotonic()
        async with asyncio.timeout(15):  # without bounds the hung renewal never returns
            await lead.stepped_down.wait()
        took = time.monotonic() - frozen_at
        assert took < RENEW_DEADLINE.total_seconds() + 1.5, f"stepped down {took:.1f} s after the apiserver hung"
    finally:
        campaign.cancel()
        await asyncio.gather(campaign, return_exceptions=True)


async def test_a_stopped_leader_always_releases_its_lease(control_plane: ControlPlane, namespace: str) -> None:
    api = coordination_api(control_plane)
    held_after_stop = []
    for round_ in range(25):
        # Renewing every 20 ms, a renewal is nearly always in flight when the stop comes.
        elector = LeaderElector(
            api, namespace, "release-test", f"replica-{round_}", retry_period=timedelta(milliseconds=20)
        )

        async def lead() -> None:
            await asyncio.Event().wait()

        campaign = asyncio.create_task(elector.run(lead))
        async with asyncio.timeout(10):
            while not elector.is_leader:  # noqa: ASYNC110  is_leader is a plain attribute, the elector has no event
                await asyncio.sleep(0.01)
        await asyncio.sleep(random.uniform(0, 0.2))
        campaign.cancel()
        await asyncio.gather(campaign, return_exceptions=True)
        holder = (await asyncio.to_thread(api.read_namespaced_lease, "release-test", namespace)).spec.holder_identity
        if holder is not None:
            held_after_stop.append(round_)
            break  # the next replica would wait a whole lease duration
    assert not held_after_stop, f"the Lease stayed held after the stop in rounds {held_after_stop}"


async def test_a_leader_keeps_its_lease_while_the_default_executor_is_full(
    control_plane: ControlPlane, namespace: str
) -> None:
    """The renewal has a thread of its own: asyncio's default executor held by blocking waits (informers' sync waits
    and other `asyncio.to_thread` users do that) for longer than the renew deadline does not make the leader step
    down. At 50,000 bindings a leader lost its Lease during a relist (docs/benchmarks.md)."""
    elector = short_elector(coordination_api(control_plane), namespace, "busy-executor-test")
    lead = Leading()
    campaign = asyncio.create_task(elector.run(lead))
    release = threading.Event()
    try:
        async with asyncio.timeout(10):
            await lead.leading.wait()
        loop = asyncio.get_running_loop()
        # More blocking waits than the default executor has threads, each as long as two renew deadlines.
        blocked = [loop.run_in_executor(None, release.wait, 10) for _ in range(64)]
        await asyncio.sleep(2 * RENEW_DEADLINE.total_seconds())
        assert not lead.stepped_down.is_set(), "the leader stepped down while the default executor was full"
        assert elector.is_leader
        release.set()
        await asyncio.gather(*blocked)
    finally:
        release.set()
        campaign.cancel()
        await asyncio.gather(campaign, return_exceptions=True)
