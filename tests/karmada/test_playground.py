"""`make playground` (tests/karmada/playground.py), on the tier's control plane: its operator player runs the copy
Karmada makes, checkpoints it, and fails it when asked; the commands it prints, run as printed, make Karmada and the
relay move the job to the other member from its newest checkpoint, and show the move in `status`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.karmada.outages import stateful_cluster_policy
from tests.karmada.playground import FAIL_ANNOTATION, OperatorPlayer, instructions
from tests.karmada.workloads import FLINK, FlinkJob, restore_path
from tests.karmada_env import KARMADA, KarmadaEnv, resource_path
from tests.reporting import report

pytestmark = pytest.mark.karmada

TOLERATION_SECONDS = 5


def printed(text: str, starts: str) -> str:
    """The command the playground printed that starts with `starts`, its continuation lines joined."""
    [command] = [c for c in re.split(r"\n\s*\n", text.replace("\\\n", " ")) if c.strip().startswith(starts)]
    return " ".join(command.split())


def test_the_playground_fails_its_job_over_as_it_says(
    karmada_env: KarmadaEnv, namespace: str, request: pytest.FixtureRequest
) -> None:
    env = karmada_env
    job = FlinkJob(env, namespace, "wordcount")
    job.create(
        stateful_cluster_policy("wordcount", namespace, job.name, env.members, toleration_seconds=TOLERATION_SECONDS)
    )
    first = job.wait_placed()
    player = OperatorPlayer(job, checkpoint_seconds=1)
    player.start()
    try:
        first_run = env.wait_until(lambda: player.runs.get(first), 30, f"the player running the copy on {first}")
        env.wait_until(lambda: player.checkpoints.get(first_run, 0) >= 2, 30, "two checkpoints of the first run")
        text = instructions(env, job, member_relays=False, toleration_seconds=TOLERATION_SECONDS)
        shell = {
            **os.environ,
            "KARMADA_KUBECONFIG": str(env.kubeconfig(KARMADA)),
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        }
        subprocess.run(["bash", "-c", printed(text, "kubectl")], env=shell, check=True, capture_output=True)

        second, copy = job.wait_restored_outside(first, timeout=TOLERATION_SECONDS + 60)
        second_run = env.wait_until(lambda: player.runs.get(second), 30, f"the player running the copy on {second}")
        newest = player.checkpoints[first_run]  # the player stopped checkpointing the failing run
        assert restore_path(copy) == job.state_dir / first_run / f"chk-{newest}"
        assert second_run != first_run
        template = env.api(KARMADA).get(resource_path(FLINK, "flinkdeployments", job.name, namespace)) or {}
        assert FAIL_ANNOTATION not in ((template.get("metadata") or {}).get("annotations") or {}), "consumed"
        status = printed(text, "failover-relay status").replace(" --watch", "")
        shown = subprocess.run(["bash", "-c", status], env=shell, check=True, capture_output=True, text=True).stdout
        assert f"placed on: {second}" in shown and "HISTORY AT" in shown and f"chk-{newest}" in shown
    finally:
        player.stop()
    report(request, "karmada", f"playground: {first} -> {second}, restored {first_run[:8]}/chk-{newest}")
