"""The member relay's fence watcher (controllers/member/member_fence.py) on its shared parts, without an apiserver: the
real records' store over a local directory, the real Event writer (`EventRecorder`) with its API call caught, the real
metrics; only the member's objects (`MemberObjects`) are held in memory. A poll suspends the copy a record names on
the version it read, stops the JobManager the operator left running with a `JobManagerStopped` Event on the copy, and
acknowledges once it is gone; a storage that cannot be read is counted and changes nothing. The same against a real
kube-apiserver: tests/e2e/test_member_fence.py."""

from __future__ import annotations

import copy as copying
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from prometheus_client import CollectorRegistry

from controllers.access.events import EventRecorder
from controllers.access.fence_metrics import MemberFenceMetrics
from controllers.access.fence_store import FenceStore
from controllers.member.member_fence import MemberFenceWatcher
from failover.core.work import PERMANENT_ID_LABEL, MemberCopy
from failover.fence.fence_files import FenceRecord
from failover.state.checkpoints import open_store
from failover.state.jobmanager import JobManager

FENCE_ID = "0b7e3f5c-3c1e-4c55-9d2b-6a4c1e2f9a10"
REF = MemberCopy("member1", "flink.apache.org/v1beta1", "FlinkDeployment", "jobs", "orders", "orders-7c9d")
RECORD = FenceRecord(
    FENCE_ID, "member1", "orders-7c9d", "ResourceBinding jobs/orders", (REF,), datetime(2025, 3, 1, tzinfo=UTC)
)
SAVEPOINT = "s3://b/jobs/savepoints/savepoint-0b7e3f-000000000001"


def applied_copy() -> dict[str, Any]:
    """The FlinkDeployment Work orders-7c9d applied on member1, running."""
    return {
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkDeployment",
        "metadata": {
            "name": "orders",
            "namespace": "jobs",
            "uid": "u-1",
            "resourceVersion": "41",
            "labels": {PERMANENT_ID_LABEL: FENCE_ID},
            "annotations": {"work.karmada.io/name": "orders-7c9d", "work.karmada.io/namespace": "karmada-es-member1"},
        },
        "spec": {"job": {"jarURI": "local:///job.jar", "state": "running"}},
        "status": {"lifecycleState": "STABLE", "jobStatus": {"state": "RUNNING"}},
    }


class Objects:
    """The member's objects in memory, in the shape `MemberObjects` reads and writes them."""

    def __init__(self) -> None:
        self.copies: dict[MemberCopy, dict[str, Any]] = {REF: applied_copy()}
        self.deployment: dict[str, Any] | None = None  # the copy's JobManager Deployment
        self.pods: tuple[dict[str, Any], ...] = ()
        self.suspended: list[tuple[MemberCopy, str]] = []
        self.deleted: list[str] = []
        self.refuse: int | None = None  # the status every call answers with

    def _answer(self) -> None:
        if self.refuse is not None:
            raise ApiException(status=self.refuse, reason="refused")

    def get(self, ref: MemberCopy) -> dict[str, Any] | None:
        self._answer()
        found = self.copies.get(ref)
        return copying.deepcopy(found) if found is not None else None

    def suspend(self, ref: MemberCopy, resource_version: str) -> None:
        self._answer()
        self.suspended.append((ref, resource_version))
        self.copies[ref]["spec"]["job"]["state"] = "suspended"

    def jobmanager(self, ref: MemberCopy, obj: dict[str, Any]) -> JobManager:
        self._answer()
        return JobManager(self.deployment, self.pods)

    def delete_deployment(self, ref: MemberCopy, deployment: dict[str, Any]) -> None:
        self._answer()
        self.deleted.append(deployment["metadata"]["uid"])
        self.deployment = None


class Member:
    """A watcher of member1 on its parts, and what each received."""

    def __init__(self, root: Path) -> None:
        self.fences = FenceStore(open_store(str(root)))
        self.objects = Objects()
        self.events: list[client.CoreV1Event] = []
        recorder = EventRecorder(client.ApiClient(), "relay-7d9f")
        recorder.api = SimpleNamespace(  # type: ignore[assignment]
            create_namespaced_event=lambda namespace, body, **_: self.events.append(body)
        )
        self.registry = CollectorRegistry()
        self.handed: list[tuple[FenceRecord, ...]] = []
        self.watcher = MemberFenceWatcher(
            "member1",
            self.fences,
            self.objects,  # type: ignore[arg-type]
            recorder,
            MemberFenceMetrics(self.registry),
            poll_seconds=2,
            on_records=lambda records: self.handed.append(tuple(records)),
        )

    def counted(self, name: str, result: str = "success") -> float:
        return self.registry.get_sample_value(name, {"member_cluster": "member1", "result": result}) or 0.0


@pytest.fixture
def member(tmp_path: Path) -> Member:
    return Member(tmp_path)


async def test_a_record_suspends_its_copy_stops_a_jobmanager_left_running_and_is_acknowledged_once_gone(
    member: Member,
) -> None:
    await member.watcher.poll_once()
    assert member.objects.suspended == [] and member.handed == [()]

    member.fences.write_record(RECORD)
    await member.watcher.poll_once()
    assert member.objects.suspended == [(REF, "41")]  # on the version read
    assert member.handed[-1] == (RECORD,)
    assert member.counted("failover_relay_member_fence_suspensions_total") == 1
    assert member.registry.get_sample_value("failover_relay_member_fence_records", {"member_cluster": "member1"}) == 1

    # The operator stops the job with a savepoint but leaves its JobManager up (FLINK-41262).
    copy = member.objects.copies[REF]
    copy["status"] = {
        "lifecycleState": "SUSPENDED",
        "jobStatus": {"state": "FINISHED", "upgradeSavepointPath": SAVEPOINT},
    }
    member.objects.deployment = {"metadata": {"name": "orders", "uid": "d-1"}}
    member.objects.pods = ({"metadata": {"name": "orders-7f9-x"}, "status": {"phase": "Running"}},)
    await member.watcher.poll_once()
    assert member.objects.deleted == ["d-1"]
    assert member.counted("failover_relay_member_fence_jobmanagers_stopped_total") == 1
    [event] = member.events
    assert (event.reason, event.type, event.involved_object.kind, event.involved_object.name) == (
        "JobManagerStopped",
        "Warning",
        "FlinkDeployment",
        "orders",
    )
    assert event.involved_object.uid == "u-1" and event.metadata.namespace == "jobs"
    assert event.message == (
        "failover-relay: the operator reported FlinkDeployment orders suspended but left its JobManager running"
        f" (FLINK-41262); deleted Deployment orders so the job cannot run again beside its new copy (fence {FENCE_ID})"
    )
    assert member.fences.read("member1").acks == {}  # its pod still runs

    member.objects.pods = ()
    await member.watcher.poll_once()
    ack = member.fences.read("member1").acks[FENCE_ID]
    assert (ack.savepoint, [(acked.copy, acked.state) for acked in ack.copies]) == (SAVEPOINT, [(REF, "suspended")])
    await member.watcher.poll_once()
    assert member.counted("failover_relay_member_fence_acknowledgements_total") == 1  # once


async def test_an_outage_of_the_storage_or_the_apiserver_is_counted_and_changes_nothing(
    member: Member, tmp_path: Path
) -> None:
    member.fences.write_record(RECORD)
    member.objects.refuse = 503
    await member.watcher.poll_once()
    assert member.objects.suspended == [] and member.watcher.apiserver.ongoing
    member.objects.refuse = None

    directory = tmp_path / ".failover-relay" / "fences" / "member1"
    directory.rename(directory.with_name("member1.away"))
    directory.symlink_to("member1")  # a loop: ELOOP, as a storage that cannot be read
    await member.watcher.poll_once()
    assert member.counted("failover_relay_member_fence_polls_total", "error") == 1
    assert member.objects.suspended == [] and member.watcher.storage.ongoing

    directory.unlink()
    directory.with_name("member1.away").rename(directory)
    await member.watcher.poll_once()
    assert member.objects.suspended == [(REF, "41")]
    assert not member.watcher.storage.ongoing and not member.watcher.apiserver.ongoing
