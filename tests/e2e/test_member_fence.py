"""The member relay's fence watcher against a real kube-apiserver (`serve --member --fence-cluster`): a fence record
in the checkpoint storage suspends exactly the copy it names, the relay's `/mutate` keeps that copy suspended when the
Work's manifest is applied again (Karmada's drift correction), and the acknowledgement is written once the operator
reports the job stopped; the watcher lives through an outage of the storage and of its own apiserver, says each once,
and fences the next record after them. The apiserver plays the member cluster; the test writes the record as the
control plane relay does and plays the Flink operator's status report (the real-Karmada tier runs both relays:
tests/karmada/test_partition.py)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from kubernetes import client, config

from controllers.access.fence_store import FenceStore
from failover.core.work import PERMANENT_ID_LABEL, MemberCopy
from failover.fence.fence_files import FenceRecord
from failover.state.checkpoints import open_store
from tests.e2e.objects import apply, flink_deployment, get, warnings_of
from tests.e2e.relay_process import RelayProcess
from tests.envtest import ControlPlane
from tests.flink_jobmanager import jobmanager_deployment, jobmanager_pod

pytestmark = pytest.mark.envtest

FENCE_ID = "0b7e3f5c-3c1e-4c55-9d2b-6a4c1e2f9a10"
AFTER_STORAGE_ID = "5d2c1b0a-1111-4222-8333-444455556666"
AFTER_APISERVER_ID = "6e3d2c1b-2222-4333-8444-555566667777"
POLL_SECONDS = 0.5  # fence.pollSeconds, set low to keep the test short (default 2)
POLLS = 3 * POLL_SECONDS  # three of the watcher's polls


def applied_copy(name: str, namespace: str, permanent_id: str, work: str) -> dict:
    """A FlinkDeployment as Karmada's execution controller applies it for Work `work` on member1."""
    copy = flink_deployment(name, namespace, labels={PERMANENT_ID_LABEL: permanent_id}, state="running")
    copy["metadata"]["annotations"] = {"work.karmada.io/name": work, "work.karmada.io/namespace": "karmada-es-member1"}
    return copy


def wait_for(read: Callable[[], object], accept: Callable[[object], bool], what: str, timeout: float = 30) -> object:
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if accept(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: last {value!r}")
        time.sleep(0.2)


def test_a_fence_record_suspends_its_copy_keeps_it_suspended_and_is_acknowledged_once(
    registered_relay: Callable[..., RelayProcess], control_plane: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    root = tmp_path / "checkpoints"
    root.mkdir()
    config_file = tmp_path / "relay.yaml"
    config_file.write_text(f"fence:\n  pollSeconds: {POLL_SECONDS}\n")
    member_relay = registered_relay(
        serve_args=[
            "--config",
            str(config_file),
            "--member",
            "--fence-cluster",
            "member1",
            "--fence-kubeconfig",
            str(control_plane.kubeconfig_path),
            "--checkpoint-root",
            str(root),
        ],
        manifest_args=["--fence"],
    )
    fenced = applied_copy("orders", namespace, FENCE_ID, "orders-7c9d")
    # Another Work's copy (the workload back on this cluster has a new permanent id): never touched.
    back = applied_copy("payments", namespace, "9f0e2d1c-0000-4000-8000-000000000001", "payments-1a2b")
    for copy in (fenced, back):
        assert apply(control_plane, copy).returncode == 0
    time.sleep(POLLS)
    assert get(control_plane, "flinkdeployment", "orders", namespace)["spec"]["job"]["state"] == "running"

    fences = FenceStore(open_store(str(root)))
    refs = tuple(
        MemberCopy("member1", "flink.apache.org/v1beta1", "FlinkDeployment", namespace, n, "orders-7c9d")
        for n in ("orders", "payments")
    )
    fences.write_record(
        FenceRecord(FENCE_ID, "member1", "orders-7c9d", f"ResourceBinding {namespace}/orders", refs, datetime.now(UTC))
    )
    wait_for(
        lambda: get(control_plane, "flinkdeployment", "orders", namespace)["spec"]["job"]["state"],
        lambda state: state == "suspended",
        "the fenced copy suspended",
    )
    # The operator has not reported the job stopped: no acknowledgement yet.
    time.sleep(POLLS)
    assert fences.read("member1").acks == {}
    assert get(control_plane, "flinkdeployment", "payments", namespace)["spec"]["job"]["state"] == "running"

    # Karmada applies the Work's manifest again (drift correction): the relay's /mutate keeps the copy suspended.
    result = apply(control_plane, fenced)
    assert result.returncode == 0, result.stderr
    assert any("kept suspended" in warning for warning in warnings_of(result))
    assert get(control_plane, "flinkdeployment", "orders", namespace)["spec"]["job"]["state"] == "suspended"
    result = apply(control_plane, back)
    assert not any("kept suspended" in warning for warning in warnings_of(result))
    assert get(control_plane, "flinkdeployment", "payments", namespace)["spec"]["job"]["state"] == "running"

    # The operator runs the copy's JobManager: a Deployment owned by the FlinkDeployment and its pod.
    api_client = config.new_client_from_config(config_file=str(control_plane.kubeconfig_path))
    api = client.CustomObjectsApi(api_client)
    apps, core = client.AppsV1Api(api_client), client.CoreV1Api(api_client)
    orders = get(control_plane, "flinkdeployment", "orders", namespace)
    apps.create_namespaced_deployment(namespace, jobmanager_deployment("orders", orders["metadata"]["uid"]))
    pod = core.create_namespaced_pod(namespace, jobmanager_pod("orders")).metadata.name
    core.patch_namespaced_pod_status(pod, namespace, {"status": {"phase": "Running"}})

    # The Flink operator stops the job with a savepoint and says so in the status, but leaves the JobManager up, as
    # operator 1.16 does after a savepoint suspend without HA (FLINK-41262): the relay deletes its Deployment, says
    # so, and acknowledges nothing while the pod still runs.
    savepoint = f"file://{root}/{namespace}/savepoints/savepoint-0b7e3f-000000000001"
    api.patch_namespaced_custom_object_status(
        "flink.apache.org",
        "v1beta1",
        namespace,
        "flinkdeployments",
        "orders",
        {
            "status": {
                "lifecycleState": "SUSPENDED",
                "jobStatus": {"state": "FINISHED", "upgradeSavepointPath": savepoint},
            }
        },
    )
    wait_for(
        lambda: apps.list_namespaced_deployment(namespace).items, lambda found: not found, "the JobManager stopped"
    )
    # The Event is written after the delete, so it may land a moment after the Deployment is gone.
    events = wait_for(
        lambda: core.list_namespaced_event(namespace, field_selector="reason=JobManagerStopped").items,
        bool,
        "the JobManagerStopped Event",
    )
    assert [(event.involved_object.kind, event.involved_object.name) for event in events] == [
        ("FlinkDeployment", "orders")
    ]
    time.sleep(POLLS)
    assert fences.read("member1").acks == {}  # its pod still runs: not stopped yet
    core.delete_namespaced_pod(pod, namespace, grace_period_seconds=0)  # as the kubelet, then GC
    acks = wait_for(lambda: fences.read("member1").acks, lambda found: FENCE_ID in found, "the acknowledgement")
    ack = acks[FENCE_ID]
    assert ack.savepoint == savepoint
    # The other copy is another Work's: acknowledged as absent, never suspended.
    assert [(acked.copy.name, acked.state) for acked in ack.copies] == [("orders", "suspended"), ("payments", "absent")]
    ack_file = root / ".failover-relay" / "fences" / "member1" / f"{FENCE_ID}.ack.json"
    written = ack_file.read_bytes()
    time.sleep(POLLS)
    assert ack_file.read_bytes() == written  # acknowledged once

    # The storage cannot be read for a while (here the cluster's directory is a symlink loop: ELOOP, as fsspec's
    # local backend reports it), then can again: the watcher goes on and fences the next record.
    directory = root / ".failover-relay" / "fences" / "member1"
    directory.rename(directory.with_name("member1.away"))
    os.symlink("member1", directory)
    time.sleep(3 * POLLS)
    directory.unlink()
    directory.with_name("member1.away").rename(directory)
    fence_next(control_plane, fences, namespace, "reports", AFTER_STORAGE_ID)

    # The member's own apiserver goes away (a dead member that comes back): every poll's read of the acknowledged
    # copies is refused meanwhile. The watcher lives through it and fences the next record.
    control_plane.restart_apiserver(while_down=lambda: time.sleep(3 * POLLS))
    fence_next(control_plane, fences, namespace, "audit", AFTER_APISERVER_ID)

    # Each outage was said once, with its end, and the relay stayed ready throughout.
    events = [json.loads(line) for line in member_relay.log.read_text().splitlines() if line.startswith("{")]
    said = [
        (line["event"], line["level"])
        for line in events
        if line["event"].startswith(("fence_records_read", "member_apiserver"))
    ]
    assert said == [
        ("fence_records_read_failed", "warning"),
        ("fence_records_read_again", "info"),
        ("member_apiserver_failed", "warning"),
        ("member_apiserver_answers_again", "info"),
    ], said
    assert member_relay.readyz().status == 200
    # And it says in the storage that it watches member1: the control plane names the members none watches.
    assert set(fences.read_heartbeats()) == {"member1"}


def fence_next(control_plane: ControlPlane, fences: FenceStore, namespace: str, name: str, fence_id: str) -> None:
    """Apply a copy of a new Work, write its fence record, and wait for the watcher to suspend it."""
    work = f"{name}-5e6f"
    assert apply(control_plane, applied_copy(name, namespace, fence_id, work)).returncode == 0
    copy = MemberCopy("member1", "flink.apache.org/v1beta1", "FlinkDeployment", namespace, name, work)
    record = FenceRecord(fence_id, "member1", work, f"ResourceBinding {namespace}/{name}", (copy,), datetime.now(UTC))
    fences.write_record(record)
    wait_for(
        lambda: get(control_plane, "flinkdeployment", name, namespace)["spec"]["job"]["state"],
        lambda state: state == "suspended",
        f"{name}, fenced after the outage, suspended",
    )
