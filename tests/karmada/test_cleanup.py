"""The harness leaves nothing behind when the test process is interrupted (Ctrl-C) or killed outright: no process
still running, no port still bound. A smaller environment (one member, no relay) in a child Python process."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

from tests.karmada_env import LOOPBACK, REPO_ROOT, KarmadaEnv
from tests.processes import interruptible

pytestmark = pytest.mark.karmada

SCRIPT = """
import json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from tests.crd_sources import KarmadaTree
from tests.karmada_env import KarmadaEnv
env = KarmadaEnv(KarmadaTree(Path(sys.argv[2])), Path(sys.argv[3]), members=("member1",), relay=False)
env.start()
print(json.dumps({"pids": env.pids(), "ports": env.ports(), "root": str(env.root)}), flush=True)
time.sleep(600)
"""
GONE_WITHIN_SECONDS = 20


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie has exited; it only waits for its (new) parent to reap it.
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"


def _bound(port: int) -> bool:
    """Whether something still listens there. SO_REUSEADDR, as servers bind: connections of the stopped process
    left in TIME_WAIT do not keep the port from a new listener."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((LOOPBACK, port))
        except OSError:
            return True
    return False


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "kill-9"])
def test_nothing_survives_the_test_process(karmada_env: KarmadaEnv, signum: int) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(REPO_ROOT), str(karmada_env.tree.root), str(karmada_env.envtest_binaries)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=interruptible,
    )
    try:
        line = child.stdout.readline() if child.stdout else ""
        assert line, f"the environment did not start:\n{child.stderr.read() if child.stderr else ''}"
        started = json.loads(line)
        pids, ports = started["pids"], started["ports"]
        assert {"etcd", "karmada-apiserver", "member1", "karmada-controller-manager"} <= set(pids)

        child.send_signal(signum)
        child.wait(timeout=60)
        deadline = time.monotonic() + GONE_WITHIN_SECONDS
        while time.monotonic() < deadline and (
            any(_alive(pid) for pid in pids.values()) or any(_bound(port) for port in ports.values())
        ):
            time.sleep(0.2)

        assert [name for name, pid in pids.items() if _alive(pid)] == []
        assert [name for name, port in ports.items() if _bound(port)] == []
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if "started" in locals():
            shutil.rmtree(started["root"], ignore_errors=True)
