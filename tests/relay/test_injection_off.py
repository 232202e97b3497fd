"""`serve` without a checkpoint root (what `make run` starts): savepoint injection is off, and a moved Flink copy
(one carrying the failover job id) is told so in the answer's warnings and the log, instead of a silent `allowed`."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from relay.serve import RelayServer
from relay.settings import Settings
from tests.admission_reviews import admission_review

LABEL = "application.karmada.io/failover-jobid"
JOB = "0123456789abcdef0123456789abcdef"


def flink_deployment(labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkDeployment",
        "metadata": {"name": "job", "namespace": "flink", "labels": labels},
        "spec": {"image": "flink:1.20", "flinkVersion": "v1_20", "job": {"jarURI": "local:///job.jar"}},
    }


async def test_a_moved_copy_is_warned_that_it_starts_empty_when_injection_is_off(
    aiohttp_client: Any, tmp_path: Path, json_lines: io.StringIO
) -> None:
    settings = Settings(port=0, cert_dir=tmp_path / "certs")
    relay = RelayServer(replace(settings, savepoint=replace(settings.savepoint, work_labels=False)))
    [line] = [json.loads(line) for line in json_lines.getvalue().splitlines() if "savepoint_injection_off" in line]
    assert line["level"] == "warning" and "checkpointRoot" in line["reason"]
    client = await aiohttp_client(relay.server.application())

    moved = await client.post("/mutate", json=admission_review(flink_deployment({LABEL: JOB})))
    response = (await moved.json())["response"]
    assert response["allowed"] is True and "patch" not in response
    [warning] = response["warnings"]
    assert "no savepoint.checkpointRoot" in warning and JOB in warning

    plain = await client.post("/mutate", json=admission_review(flink_deployment({"app": "job"})))
    assert "warnings" not in json.loads(await plain.text())["response"]
