"""Every line a review causes carries its uid, also the lines written on the lookup threads (webhook/blocking.py)."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import structlog

from failover.core.api import FLINK_DEPLOYMENT
from failover.core.verdict import ALLOWED, Verdict
from tests.admission_reviews import admission_review
from webhook.blocking import BlockingPool
from webhook.handlers import AdmissionHandlers
from webhook.health import Readiness
from webhook.review import AdmissionRequest
from webhook.server import AdmissionServer

log = structlog.get_logger("failover_relay.test")


@pytest.fixture
async def pool() -> AsyncIterator[BlockingPool]:
    lookup_pool = BlockingPool(1)
    yield lookup_pool
    lookup_pool.shutdown()


def flink_deployment(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkDeployment",
        "metadata": {"name": name, "namespace": "flink"},
        "spec": {},
    }


async def test_a_line_logged_on_a_pool_thread_during_a_review_carries_its_uid(
    aiohttp_client: Any, json_lines: io.StringIO, pool: BlockingPool
) -> None:
    async def looks_up(request: AdmissionRequest) -> Verdict:
        def look_up() -> None:  # as the savepoint lookup runs, on a pool thread
            log.info("looked_up", object=request.name)

        await pool.submit(look_up)
        return ALLOWED

    readiness = Readiness(host="127.0.0.1", port=0, ca_file=None, certificate_not_after=lambda: None)
    server = AdmissionServer(
        AdmissionHandlers(mutators={FLINK_DEPLOYMENT: looks_up}), readiness, max_body_bytes=256 * 1024
    )
    client = await aiohttp_client(server.application())
    reviews = [admission_review(flink_deployment(name)) for name in ("first", "second")]
    for review in reviews:  # one connection, one task: the second review must not see the first's uid
        async with client.post("/mutate", json=review) as response:
            assert response.status == 200 and (await response.json())["response"]["allowed"] is True

    lines = [json.loads(line) for line in json_lines.getvalue().splitlines()]
    looked_up = {line["object"]: line["uid"] for line in lines if line["event"] == "looked_up"}
    assert looked_up == {"first": reviews[0]["request"]["uid"], "second": reviews[1]["request"]["uid"]}
