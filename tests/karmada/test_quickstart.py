"""docs/quickstart.md, run: every `sh` block of the page, in order, against the tier's Karmada control plane, with a
real failover in the middle (the test plays the Flink operator) so that the page's `failover-relay status` is run
while it happens, and its `failover-relay readiness` once the job runs. Blocks marked `quickstart-test: skip` need a
host cluster with nodes; there are exactly SKIPPED_BLOCKS of them, the karmada-controller-manager flags the page names
are those the tier's process runs with (read from /proc), and the tier's relay runs with the page's configuration file
and nothing else but the tier's own keys (tests/karmada_env/relay_config.py, TIER_RELAY_KEYS), so the page cannot
drift from what is tested. The page's last block reads the restored copy from its member: it must print the path the
relay gave it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.crd_sources import flink_deployment_crd
from tests.karmada.outages import TAINT_POLICY_FILE
from tests.karmada.workloads import POLICIES, FlinkJob, new_job_id
from tests.karmada_env import (
    KARMADA,
    REPO_ROOT,
    TIER_RELAY_KEYS,
    KarmadaEnv,
    quickstart_relay_config,
    resource_path,
)
from tests.reporting import report

pytestmark = pytest.mark.karmada

QUICKSTART = REPO_ROOT / "docs" / "quickstart.md"
MARKER = re.compile(r"<!-- quickstart-test: (\w+)")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.MULTILINE | re.DOTALL)
SKIPPED_BLOCKS = 5
NAMESPACE, NAME = "streaming", "wordcount"  # as the page spells them
TOLERATION_SECONDS = 30  # the page's policy


@dataclass(frozen=True)
class Block:
    language: str
    text: str
    marker: str  # "", "skip" or "env"


def blocks(page: str) -> list[Block]:
    """The fenced blocks of the page, each with the `quickstart-test` marker on the line before it, if any."""
    found = []
    for match in FENCE.finditer(page):
        before = page[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = MARKER.match(before)
        found.append(Block(match.group(1), match.group(2), marker.group(1) if marker else ""))
    return found


def run(block: Block, environment: dict[str, str]) -> str:
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block.text],
        cwd=REPO_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, f"{block.text}\nexit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def process_args(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")


def test_the_quick_start_runs_as_written(karmada_env: KarmadaEnv, request: pytest.FixtureRequest) -> None:
    env = karmada_env
    page = blocks(QUICKSTART.read_text())
    shell = [block for block in page if block.language == "sh"]
    assert sum(block.marker == "skip" for block in shell) == SKIPPED_BLOCKS

    # The page's variables, for this control plane; the names must be those the page exports.
    [exports] = [block for block in shell if block.marker == "env"]
    values = {
        "KARMADA_KUBECONFIG": str(env.kubeconfig(KARMADA)),
        "CHECKPOINTS": f"file://{env.checkpoint_root}",
        "RELAY_URL": env.relay_url,
        "RELAY_CA": str(env.relay_cert_dir / "ca.crt"),
        "FLINK_DEPLOYMENT_CRD": str(flink_deployment_crd()),
    }
    assert set(re.findall(r"^export (\w+)=", exports.text, re.MULTILINE)) == set(values)
    environment = {
        **os.environ,
        **values,
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
    }

    # The karmada-controller-manager flags the page names are those the tier runs.
    [flags] = [block for block in page if block.language == "text" and "--controllers=" in block.text]
    running = process_args(env.pids()["karmada-controller-manager"])
    named = flags.text.split()
    assert sorted(named) == sorted(arg for arg in running if arg.split("=")[0] in {f.split("=")[0] for f in named})
    # And karmada-webhook's.
    [webhook_flags] = [
        block for block in page if block.language == "text" and "--allow-no-execute-taint-policy" in block.text
    ]
    running = process_args(env.pids()["karmada-webhook"])
    assert set(webhook_flags.text.split()) <= set(running)

    # The relay runs with the page's configuration file: every key of it, and no other but the tier's own.
    running = yaml.safe_load(env.relay_config_file.read_text())
    if without(running, TIER_RELAY_KEYS) != without(quickstart_relay_config(), TIER_RELAY_KEYS):
        env.start_relay()  # an earlier test left its overrides: back to what the page says
        running = yaml.safe_load(env.relay_config_file.read_text())
    assert without(running, TIER_RELAY_KEYS) == without(quickstart_relay_config(), TIER_RELAY_KEYS)

    job = FlinkJob(env, NAMESPACE, NAME)
    outputs = []
    restored_path = ""
    try:
        for block in shell:
            if block.marker:
                continue
            if "failover-relay readiness" in block.text:
                outputs.append(("readiness, before anything fails", _ready(env, job, block, environment)))
            elif "failover-relay status" in block.text:
                outputs.append(("Unhealthy, before the eviction", _during_toleration(env, job, block, environment)))
                after, restored_path = _after_failover(env, job, block, environment)
                outputs.append(("after the failover", after))
            elif "initialSavepointPath" in block.text:
                assert restored_path, "the page reads the restored copy after the failover"
                assert run(block, environment).strip() == restored_path
            else:
                run(block, environment)
    finally:
        karmada = env.api(KARMADA)
        if karmada.get(resource_path("flink.apache.org/v1beta1", "flinkdeployments", NAME, NAMESPACE)):
            job.delete()
        karmada.delete(resource_path(POLICIES, "propagationpolicies", NAME, NAMESPACE))
        # The page's ClusterTaintPolicy, which the tests that stop a member apply themselves (every member is Ready
        # here, so deleting it leaves no taint behind: tests/karmada/outages.py `taint_not_ready_clusters`).
        taint_policy = yaml.safe_load(TAINT_POLICY_FILE.read_text())["metadata"]["name"]
        karmada.delete(resource_path(POLICIES, "clustertaintpolicies", taint_policy))
    assert len(outputs) == 3, "the page runs failover-relay readiness and status once each"
    assert restored_path.endswith("/chk-7"), "the new copy restores the newest completed checkpoint"
    report(
        request,
        "karmada",
        "quick start ran as written; its status during the failover:\n"
        + "\n".join(f"# {when}\n{output}" for when, output in outputs),
    )


def _ready(env: KarmadaEnv, job: FlinkJob, block: Block, environment: dict[str, str]) -> str:
    """The job runs and has checkpointed: the check finds no problem (the page's job is `upgradeMode: stateless`, and
    no member relay runs here: warnings) and gives the numbers to plan with."""
    first = job.wait_placed()
    run_id = new_job_id()
    job.run_healthy(first, run_id)
    job.write_checkpoints(run_id, completed=(1,))
    output = run(block, environment)
    assert " 0 problem" in output and f"{run_id}/chk-1" in output, output
    assert "RPO" in output and "RTO  dead cluster" in output and "RTO  failing job" in output, output
    return output


def _during_toleration(env: KarmadaEnv, job: FlinkJob, block: Block, environment: dict[str, str]) -> str:
    """The job runs, checkpoints, then fails on its member: status shows when the loop will evict it."""
    first = job.wait_placed()
    run_id = new_job_id()
    job.run_healthy(first, run_id)
    job.write_checkpoints(run_id, completed=(6, 7))
    job.report_unhealthy(first, run_id)
    job.wait_health(first, "Unhealthy")
    output = env.wait_until(
        lambda: (out := run(block, environment)) and "(in " in out and out, 30, "status naming the eviction time"
    )
    assert f"placed on: {first}" in output and "Unhealthy" in output and "no eviction in flight" in output
    assert f"{run_id}/chk-7" in output
    return output


def _after_failover(env: KarmadaEnv, job: FlinkJob, block: Block, environment: dict[str, str]) -> tuple[str, str]:
    """The loop evicted it after tolerationSeconds; the new copy restored: status shows the task and the move.
    Returns that output and the restore path the new copy was given."""
    first = job.placed_on()[0]
    second, restored = job.wait_restored_outside(first, timeout=TOLERATION_SECONDS + 60)
    path = restored["spec"]["job"]["initialSavepointPath"]
    output = env.wait_until(
        lambda: (
            (out := run(block, environment)) and "HISTORY AT" in out and path in out.split("HISTORY AT", 1)[1] and out
        ),
        30,
        "status with the move and its restore path",
    )
    assert f"placed on: {second}" in output and "EVICTION FROM" in output and "ApplicationFailure" in output
    assert "(restoring)" in output, "the new copy is left its restore grace, and status says so"
    return output, path


def without(config: dict[str, Any], keys: set[tuple[str, str]]) -> dict[str, Any]:
    """`config` without the (section, key) pairs in `keys`, and without sections left empty."""
    kept = {
        section: {k: v for k, v in values.items() if (section, k) not in keys} for section, values in config.items()
    }
    return {section: values for section, values in kept.items() if values}
