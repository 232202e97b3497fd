"""`failover-relay readiness` against real Karmada: the healthy set-up of docs/operations.md reports ok, and each
condition broken one at a time, the way operators break it, is reported as a problem naming the cause:
karmada-controller-manager left running its graceful-eviction controller, a policy without statePreservation, a
caBundle of the wrong CA in the webhook configurations (owned by GitOps, so the relay's sync leaves it), a
FlinkDeployment that deletes its checkpoints on cancellation, no restorable state, and a member whose relay no
longer reaches the checkpoint storage. Karmada's own components are the judge: the controllers its metrics say run,
the binding its detector rewrites from the policy, the Work its binding controller renders, the apiserver's calls to
the webhooks."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import time
from typing import Any

import pytest

from tests.karmada.outages import grant_fencing_in_members, taint_not_ready_clusters
from tests.karmada.workloads import (
    FLINK,
    POLICIES,
    FlinkJob,
    new_job_id,
    relay_command,
    stateful_policy,
)
from tests.karmada_env import KARMADA, REPO_ROOT, KarmadaEnv, resource_path
from tests.karmada_env.karmada import RELAY_CONTROLLERS, RELAY_GATES
from tests.processes import LOOPBACK, free_port

pytestmark = pytest.mark.karmada

# Where the test leaves the tables of the healthy set-up and of two broken ones, when set: real samples to quote.
CAPTURE_ENV = "FAILOVER_RELAY_READINESS_CAPTURE"
HEARTBEAT_STALE_SECONDS = 3 * 30  # failover.fence.control_plane: three missed heartbeats of 30 s
JOB = {
    "args": [],
    "jarURI": "local:///opt/flink/examples/streaming/StateMachineExample.jar",
    "parallelism": 2,
    "state": "running",
    "upgradeMode": "savepoint",
}
RETENTION = "execution.checkpointing.externalized-checkpoint-retention"


def readiness(env: KarmadaEnv, *args: str) -> tuple[int, dict[str, Any]]:
    result = subprocess.run(
        relay_command(env, "readiness", *args, "-o", "json"),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
    )
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


def capture(env: KarmadaEnv, when: str, args: tuple[str, ...]) -> None:
    """The table as a user sees it, appended to $FAILOVER_RELAY_READINESS_CAPTURE when set."""
    if target := os.environ.get(CAPTURE_ENV):
        table = subprocess.run(
            relay_command(env, "readiness", *args), capture_output=True, text=True, timeout=120, cwd=REPO_ROOT
        )
        with open(target, "a") as file:
            file.write(f"# {when} (exit {table.returncode})\n{table.stdout}\n")


def findings(report: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Every finding by its check's name (a workload's prefixed `workload:`)."""
    found = {finding["check"]: finding for finding in report["controlPlane"]}
    for entry in report["workloads"]:
        found |= {f"workload:{finding['check']}": finding for finding in entry["checks"]}
    return found


def wait_finding(
    env: KarmadaEnv, args: tuple[str, ...], check: str, status: str, timeout: float = 60
) -> dict[str, str]:
    """Run the check until `check` has `status` (Karmada propagates a policy or template change in its own time)."""
    return env.wait_until(
        lambda: (f := findings(readiness(env, *args)[1]).get(check)) and f["status"] == status and f,
        timeout,
        f"readiness saying {check} {status}",
        interval=1,
    )


def test_readiness_reports_the_healthy_setup_ok_and_each_broken_condition_as_a_problem(
    karmada_env: KarmadaEnv, namespace: str
) -> None:
    env = karmada_env
    metrics = f"--metrics-bind-address={LOOPBACK}:{free_port()}"
    metrics_url = f"http://{metrics.rpartition('=')[2]}/metrics"
    job = FlinkJob(env, namespace)
    policy = stateful_policy("flink", namespace, job.name, env.members, toleration_seconds=10)
    failover = policy["spec"]["failover"]
    failover["cluster"] = {"purgeMode": "Directly", "statePreservation": failover["application"]["statePreservation"]}
    job.create(policy, spec={"job": JOB}, flink_configuration={"execution.checkpointing.interval": "10s"})
    member, run = job.wait_placed(), new_job_id()
    job.run_healthy(member, run)
    job.write_checkpoints(run, completed=(1, 2))
    args = (f"{namespace}/{job.name}", "--controller-manager-metrics", metrics_url)
    away = next(m for m in env.members if m != member)
    grant_fencing_in_members(env)
    try:
        with taint_not_ready_clusters(env):
            for each in env.members:
                env.start_member_relay(each)
            env.restart_controller_manager(RELAY_CONTROLLERS, RELAY_GATES, (metrics,))

            # The healthy set-up: everything ok, with the numbers people plan with.
            code, report = readiness(env, *args)
            found = findings(report)
            # Only the members this test runs relays on: a Pull member an earlier test joined has none.
            others = {name for name in found if name.startswith("member-relay/")} - {
                f"member-relay/{m}" for m in env.members
            }
            not_ok = {name: f for name, f in found.items() if f["status"] != "ok" and name not in others}
            assert code == 0 and not not_ok, not_ok
            [entry] = report["workloads"]
            assert entry["rpo"]["path"].endswith("/chk-2") and entry["rpo"]["stateAgeSeconds"] < 60
            assert entry["rpo"]["checkpointIntervalSeconds"] == 10
            assert entry["rto"]["failingJobSeconds"] == 10 and entry["rto"]["deadClusterSeconds"] > 30
            capture(env, "the healthy set-up", args)

            # A member whose relay writes to another storage than the job's: the control plane sees its heartbeat
            # age. Broken first, read last: a heartbeat is stale after three missed periods.
            env.stop_member_relay(away, uninstall=False)
            broken_storage_at = time.monotonic()
            elsewhere = env.checkpoint_root.parent / "elsewhere"
            elsewhere.mkdir(exist_ok=True)
            env.start_member_relay(away, checkpoint_root=str(elsewhere))

            # karmada-controller-manager with its graceful-eviction controller left on.
            env.restart_controller_manager("*,-applicationFailover,-workloadRebalancer", RELAY_GATES, (metrics,))
            code, report = readiness(env, *args)
            controllers = findings(report)["karmada-controllers"]
            assert code == 1 and controllers["status"] == "problem", controllers
            assert "gracefulEviction" in controllers["evidence"] and "Turning off" in controllers["fix"]
            capture(env, "graceful eviction left on", args)
            env.restart_controller_manager(RELAY_CONTROLLERS, RELAY_GATES, (metrics,))

            # A policy whose cluster failover keeps no state: Karmada's detector copies it into the binding.
            policy_path = resource_path(POLICIES, "propagationpolicies", "flink", namespace)
            env.api(KARMADA).patch(policy_path, {"spec": {"failover": {"cluster": {"statePreservation": None}}}})
            found = wait_finding(env, args, "workload:policy", "problem")
            assert "failover.cluster has no statePreservation" in found["evidence"]
            env.api(KARMADA).patch(
                policy_path,
                {"spec": {"failover": {"cluster": {"statePreservation": failover["cluster"]["statePreservation"]}}}},
            )
            wait_finding(env, args, "workload:policy", "ok")

            # The FlinkDeployment deletes its checkpoints on cancellation: Karmada renders it into the Work.
            template = resource_path(FLINK, "flinkdeployments", job.name, namespace)
            env.api(KARMADA).patch(template, {"spec": {"flinkConfiguration": {RETENTION: "DELETE_ON_CANCELLATION"}}})
            found = wait_finding(env, args, "workload:flink-state", "problem")
            assert "DELETE_ON_CANCELLATION" in found["evidence"]
            env.api(KARMADA).patch(template, {"spec": {"flinkConfiguration": {RETENTION: None}}})
            wait_finding(env, args, "workload:flink-state", "ok")

            # No restorable state.
            moved = job.state_dir.with_name(f"{job.state_dir.name}-moved")
            shutil.move(job.state_dir, moved)
            try:
                code, report = readiness(env, *args)
                state = findings(report)["workload:restorable-state"]
                assert code == 1 and state["status"] == "problem" and "from empty" in state["evidence"], state
            finally:
                shutil.move(moved, job.state_dir)

            # A caBundle of the wrong CA (Karmada's own, pasted by mistake), where GitOps owns the configurations
            # and the relay does not sync them: the apiserver cannot call the relay.
            env.restart_relay({"server": {"caBundleSync": False}})
            wrong = base64.b64encode((env.pki / "ca.crt").read_bytes()).decode()
            saved = _set_ca_bundles(env, wrong)
            try:
                code, report = readiness(env, *args)
                found = findings(report)
                for check in ("validating-webhook", "mutating-webhook"):
                    assert found[check]["status"] == "problem", found[check]
                    assert "x509" in found[check]["evidence"] or "certificate" in found[check]["evidence"]
                assert code == 1
                capture(env, "a caBundle of the wrong CA", args)
            finally:
                _set_ca_bundles(env, saved)
                env.restart_relay()

            # The member relay whose storage is not the job's, now that its heartbeat is stale.
            time.sleep(max(0.0, HEARTBEAT_STALE_SECONDS + 5 - (time.monotonic() - broken_storage_at)))
            code, report = readiness(env, *args)
            found = findings(report)[f"member-relay/{away}"]
            assert code == 1 and found["status"] == "problem" and "cannot reach the storage" in found["evidence"]
            env.stop_member_relay(away, uninstall=False)
            env.start_member_relay(away)
            assert findings(readiness(env, *args)[1])[f"member-relay/{away}"]["status"] == "ok"
    finally:
        for each in env.members:
            env.stop_member_relay(each)
        env.restart_controller_manager()
        job.delete()


def _set_ca_bundles(env: KarmadaEnv, bundle: str | dict[str, list[str]]) -> dict[str, list[str]]:
    """Write `bundle` into every webhook of the relay's two configurations (a dict: each configuration's bundles as
    `_set_ca_bundles` returned them); return what was there."""
    saved: dict[str, list[str]] = {}
    for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        path = f"/apis/admissionregistration.k8s.io/v1/{kind}/failover-relay"
        configuration = env.api(KARMADA).get(path) or {}
        webhooks = configuration.get("webhooks") or []
        saved[kind] = [webhook["clientConfig"].get("caBundle", "") for webhook in webhooks]
        patch = [
            {
                "op": "replace",
                "path": f"/webhooks/{index}/clientConfig/caBundle",
                "value": bundle if isinstance(bundle, str) else bundle[kind][index],
            }
            for index in range(len(webhooks))
        ]
        env.api(KARMADA).patch(path, patch, "json")
    return saved
