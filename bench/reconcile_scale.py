"""Reconcile loop at scale: N ResourceBindings in a real kube-apiserver, the real `failover-relay controllers` process.

    python bench/reconcile_scale.py                      # 10,000 bindings, 100 of them Unhealthy
    python bench/reconcile_scale.py --quick              # 1,000 / 20, a few minutes
    python bench/reconcile_scale.py --bindings 5000 --unhealthy 50 --toleration 30
    python bench/reconcile_scale.py --bindings 50000 --unhealthy 200 --expired 100 --fixtures etcd --relist
    python bench/reconcile_scale.py --quick --leader-change 20   # and a leader change with a warm standby
    python bench/reconcile_scale.py --bindings 5000 --unhealthy 50 --cluster-failover   # the relay's cluster failover

What it measures:
- creation: N bindings created, then their status written through the status subresource (Healthy, or Unhealthy for
  M of them spread evenly over the names), by a thread pool sharing one `kubernetes` client;
- the floor of the first pass: one LIST of all N bindings with the same client call the informer makes (best of 3);
- time to first full reconcile: from spawning the controller process until `failover_relay_reconcile_total` of the
  resourcebindings controller reaches N and every Unhealthy binding carries its unhealthy-since annotation (seen by a
  watch in this process); the `caches_synced` log line and the Lease are timed on the way;
- the delay between toleration expiry (annotation time + tolerationSeconds) and the eviction task: as written (the
  task's creationTimestamp; both ends have one-second precision) and as observed by the watch;
- steady CPU and RSS of the controller process over a quiet window once every eviction is written (utime+stime from
  /proc/PID/stat; VmRSS and VmHWM from /proc/PID/status);
- with `--expired K`, the new leader's burst against a ceiling in the same run: after the quiet window, this process
  writes K conditional JSON patches of an eviction's size to K Healthy bindings, as many at a time as the relay has
  workers (`ceiling`): the apiserver's own pace for that burst, which the relay's (its first to its K-th eviction) is
  printed over;
- with `--relist`, an apiserver rollout at the end: kube-apiserver restarted so that every informer is refused with
  410 and lists again: how long until the bindings are listed again, whether the Lease held, and the RSS meanwhile;
- with `--cluster-failover`, at the very end: the bindings' cluster not Ready and tainted NoExecute (no taint manager
  runs): the relay's cluster failover evictions of every binding still there, per second, with conflicts and failed
  preconditions, beside the taint manager's pace at Karmada's default rate (karmada#7495);
- with `--leader-change K`, last before that, a leader change with a warm standby: a second controller process, started
  once the first pass is measured, lists and caches as a standby; the leader is killed (SIGKILL: its Lease expires,
  nothing releases it), and while nobody leads the toleration of K Healthy bindings is made to have run out (an
  Unhealthy status and an unhealthy-since stamp long past, as a previous leader would have left them). Measured: seconds
  from the old leader's death (its Lease's expiry: last renewTime + leaseDurationSeconds) to the new leader's Lease
  (acquireTime) and to its first and K-th eviction seen by a watch, and the LISTs the new leader sent (none).

Exit status is non-zero only when the harness fails (the control plane, the process, or a deadline), never because of
a number.
"""

from __future__ import annotations

import argparse
import base64
import copy
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kubernetes import client, config, watch

from controllers.access.kube import JSON_PATCH
from controllers.loop.informer import LIST_PAGE_SIZE
from failover.core.annotations import format_time, parse_time
from failover.core.api import RESOURCE_BINDINGS
from failover.core.loop_settings import DecisionSettings
from failover.reconcile.application_failover import UNHEALTHY_SINCE_ANNOTATION
from failover.state.history import decide_history
from failover.state.last_state import decide_last_state
from relay.settings import ControllerSettings
from tests.crd_sources import envtest_crds, karmada_tree
from tests.envtest import REPO_ROOT, ControlPlane, ensure_binaries, etcd_key
from tests.processes import free_port

NAMESPACE = "bench"
CLUSTER = "member1"
HEALTHY_TOLERATION_SECONDS = 300
JOB_ID = "a1b2c3d4e5f60718293a4b5c6d7e8f90"
METRIC = "failover_relay_reconcile_total"
PRECONDITION_FAILURES = "failover_relay_binding_precondition_failures_total"
CONTROLLER = RESOURCE_BINDINGS.plural
POLL_SECONDS = 0.2
FIRST_PASS_DEADLINE_SECONDS = 900.0
# Evictions are due `toleration` after the stamp; allow generous slack on a loaded 2-core machine before giving up.
EVICTION_SLACK_SECONDS = 180.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# How long before the new leader starts the toleration of the `--expired` bindings ran out.
EXPIRED_FOR_SECONDS = 60
# `--fixtures etcd`: puts per etcd transaction (etcd's defaults: at most 128 operations and 1.5 MiB per request, and
# a stored binding is about 8 kB), and how long the apiserver may take to list every binding written into its etcd.
ETCD_TXN_OPS = 64
# The ceiling's writes: an annotation as large as an eviction's patch (the task and the records it carries, about
# 1 kB), under a key no decision reads.
CEILING_ANNOTATION = "bench.failover-relay.io/ceiling"
CEILING_PAYLOAD_BYTES = 1024
LOOP_EVENT = re.compile(r"^[a-z_]+$")
FIXTURE_VISIBLE_SECONDS = 600.0
# The Lease the controller processes share (the relay's default name, in the namespace they are given).
LEASE_NAMESPACE = "default"
LEASE_NAME = ControllerSettings.__dataclass_fields__["lease_name"].default
# How long a leader change may take, from the kill to the K-th eviction: a lease duration, and the evictions.
LEADER_CHANGE_DEADLINE_SECONDS = 180.0


# What Karmada v1.19 writes on a FlinkDeployment's binding: the policy's labels and annotations, the workload's
# components from the built-in interpreter's GetComponents (jobmanager, taskmanager) with their per-cluster assignment
# (MultiplePodTemplatesScheduling), and the status the interpreter reflects (ReflectStatus / AggregateStatus of
# pkg/resourceinterpreter/default/thirdparty/resourcecustomizations/flink.apache.org/v1beta1/FlinkDeployment).
FLINK_SPEC = {
    "image": "flink:1.20",
    "flinkVersion": "v1_20",
    "flinkConfiguration": {
        "taskmanager.numberOfTaskSlots": "2",
        "state.checkpoints.dir": "s3://flink-state/bench/checkpoints",
        "state.savepoints.dir": "s3://flink-state/bench/savepoints",
        "execution.checkpointing.interval": "60s",
        "high-availability.type": "kubernetes",
        "high-availability.storageDir": "s3://flink-state/bench/ha",
    },
    "serviceAccount": "flink",
    "jobManager": {"resource": {"memory": "2048m", "cpu": 1}, "replicas": 1},
    "taskManager": {"resource": {"memory": "4096m", "cpu": 2}, "replicas": 2},
    "job": {
        "jarURI": "local:///opt/flink/usrlib/pipeline.jar",
        "parallelism": 4,
        "upgradeMode": "savepoint",
        "state": "running",
    },
}


def binding(name: str, toleration: int, unhealthy_since: str | None = None) -> dict[str, Any]:
    """A FlinkDeployment's binding as Karmada v1.19 writes it: one member cluster, purgeMode Directly,
    statePreservation of the job id. `unhealthy_since`: the time a previous leader first saw it Unhealthy."""
    requirements = {
        "jobmanager": {"resourceRequest": {"cpu": "1", "memory": "2Gi"}},
        "taskmanager": {"resourceRequest": {"cpu": "2", "memory": "4Gi"}},
    }
    annotations = {
        "policy.karmada.io/applied-placement": json.dumps(PLACEMENT, separators=(",", ":")),
        "propagationpolicy.karmada.io/name": "flink",
        "propagationpolicy.karmada.io/namespace": NAMESPACE,
    }
    if unhealthy_since:
        annotations[UNHEALTHY_SINCE_ANNOTATION] = json.dumps({CLUSTER: unhealthy_since}, separators=(",", ":"))
    return {
        "apiVersion": RESOURCE_BINDINGS.api_version,
        "kind": RESOURCE_BINDINGS.kind,
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {
                "propagationpolicy.karmada.io/permanent-id": "6f1c4b2e-8f0a-4b7c-9d53-3e2a1f0c9b11",
                "resourcebinding.karmada.io/permanent-id": f"{uuid.uuid5(uuid.NAMESPACE_URL, name)}",
            },
            "annotations": annotations,
            "finalizers": ["karmada.io/binding-controller"],
        },
        "spec": {
            "propagateDeps": True,
            "conflictResolution": "Abort",
            "resource": {
                "apiVersion": "flink.apache.org/v1beta1",
                "kind": "FlinkDeployment",
                "name": name,
                "namespace": NAMESPACE,
                "uid": str(uuid.uuid5(uuid.NAMESPACE_DNS, name)),
                "resourceVersion": "123456",
            },
            "replicas": 3,
            "replicaRequirements": {"resourceRequest": {"cpu": "2", "memory": "4Gi"}},
            "components": [
                {"name": "jobmanager", "replicas": 1, "replicaRequirements": requirements["jobmanager"]},
                {"name": "taskmanager", "replicas": 2, "replicaRequirements": requirements["taskmanager"]},
            ],
            "placement": PLACEMENT,
            "schedulePriority": {"priority": 0},
            "clusters": [
                {
                    "name": CLUSTER,
                    "replicas": 3,
                    "components": [{"name": "jobmanager", "replicas": 1}, {"name": "taskmanager", "replicas": 2}],
                }
            ],
            "failover": {
                "application": {
                    "decisionConditions": {"tolerationSeconds": toleration},
                    "purgeMode": "Directly",
                    "statePreservation": {
                        "rules": [
                            {
                                "aliasLabelName": "application.karmada.io/failover-jobid",
                                "jsonPath": "{ .jobStatus.jobId }",
                            }
                        ]
                    },
                }
            },
        },
    }


PLACEMENT = {
    "clusterAffinity": {"clusterNames": ["member1", "member2", "member3"]},
    "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 1, "minGroups": 1}],
}


def status(health: str) -> dict[str, Any]:
    """The status Karmada writes: scheduling conditions and the reflected FlinkDeployment status of the member."""
    running = health != "Unhealthy"
    reflected = {
        "clusterInfo": {
            "flink-revision": "b1b4bc5 @ 2025-03-18T10:12:42+01:00",
            "flink-version": "1.20.1",
            "total-cpu": "5.0",
            "total-memory": "10737418240",
        },
        "error": None if running else "JobManager failed: java.lang.OutOfMemoryError: Java heap space",
        "jobManagerDeploymentStatus": "READY" if running else "DEPLOYING",
        "jobStatus": {
            "checkpointInfo": {"lastPeriodicCheckpointTimestamp": 1764150000000},
            "jobId": JOB_ID,
            "jobName": "pipeline",
            "savepointInfo": {"lastPeriodicSavepointTimestamp": 0, "savepointHistory": []},
            "startTime": "1764140000000",
            "state": "RUNNING" if running else "FAILING",
            "updateTime": "1764150000000",
        },
        "lifecycleState": "STABLE" if running else "DEPLOYED",
        "observedGeneration": 1,
        "reconciliationStatus": {
            # The operator keeps the whole last spec as a JSON string: the bulk of a real status.
            "lastReconciledSpec": json.dumps({"spec": FLINK_SPEC, "resource_metadata": {"firstDeployment": False}}),
            "lastStableSpec": json.dumps({"spec": FLINK_SPEC, "resource_metadata": {"firstDeployment": False}}),
            "reconciliationTimestamp": 1764140000000,
            "state": "DEPLOYED",
        },
        "taskManager": {"labelSelector": "component=taskmanager,app=pipeline", "replicas": 2},
    }
    condition = {"lastTransitionTime": "2026-11-26T09:00:00Z", "message": "", "status": "True"}
    return {
        "status": {
            "schedulerObservedGeneration": 1,
            "lastScheduledTime": "2026-11-26T09:00:00Z",
            "conditions": [
                {**condition, "type": "Scheduled", "reason": "Success", "message": "Binding has been scheduled"},
                {**condition, "type": "FullyApplied", "reason": "FullyAppliedSuccess", "message": "All works applied"},
            ],
            "aggregatedStatus": [
                {"clusterName": CLUSTER, "applied": True, "health": health, "status": reflected},
            ],
        }
    }


def previous_leader_records(full: dict[str, Any]) -> dict[str, str]:
    """The annotations a previous leader wrote on the binding while it ran healthily (the last good state and the
    runs of its history): what makes the first pass after a leader change read-only. Made by the loop's own
    decisions, an hour before now."""
    earlier = datetime.now(UTC) - timedelta(hours=1)
    healthy = copy.deepcopy(full)
    for item in healthy["status"]["aggregatedStatus"]:
        item["health"] = "Healthy"
        item["status"]["jobStatus"]["state"] = "RUNNING"
    annotations: dict[str, str] = {}
    for decide in (lambda b: decide_last_state(b, earlier), lambda b: decide_history(b, (), earlier)):
        patch = decide(healthy)
        if patch:
            values = patch["metadata"]["annotations"]
            annotations.update(values)
            healthy["metadata"]["annotations"] = {**healthy["metadata"].get("annotations", {}), **values}
    return annotations


def api_client(kubeconfig: Path, pool: int) -> client.ApiClient:
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    configuration.connection_pool_maxsize = pool  # one connection per creating thread
    return client.ApiClient(configuration)


def create_clusters(api: client.ApiClient) -> None:
    """The placement's three members as Karmada's cluster status controller reports them, Ready: without another
    cluster that can take it, the loop keeps an Unhealthy workload on its last cluster instead of evicting it
    (failover/reconcile/last_cluster.py), and no eviction would ever come."""
    objects = client.CustomObjectsApi(api)
    for name in PLACEMENT["clusterAffinity"]["clusterNames"]:
        body = {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": name}}
        objects.create_cluster_custom_object(
            "cluster.karmada.io", "v1alpha1", "clusters", {**body, "spec": {"syncMode": "Push"}}
        )
        ready = {"type": "Ready", "status": "True", "reason": "ClusterReady", "message": "cluster is healthy and ready"}
        ready["lastTransitionTime"] = format_time(datetime.now(UTC))
        objects.patch_cluster_custom_object_status(
            "cluster.karmada.io", "v1alpha1", "clusters", name, {"status": {"conditions": [ready]}}
        )


class Fixtures:
    """The N bindings and their status: the Unhealthy ones (`unhealthy`) with `toleration`, the `expired` ones with an
    unhealthy-since stamp a previous leader wrote `toleration` + EXPIRED_FOR_SECONDS ago, every one with the records
    of a previous leader."""

    def __init__(self, unhealthy: set[int], expired: set[int], toleration: int) -> None:
        self.unhealthy, self.expired, self.toleration = unhealthy, expired, toleration
        self.since = format_time(datetime.now(UTC) - timedelta(seconds=toleration + EXPIRED_FOR_SECONDS))

    def shape(self, index: int) -> tuple[bool, bool]:
        return index in self.unhealthy, index in self.expired

    def __call__(self, index: int) -> tuple[dict[str, Any], dict[str, Any]]:
        """The binding as created, and the status written through the status subresource."""
        bad, late = self.shape(index)
        obj = binding(
            name_of(index), self.toleration if bad else HEALTHY_TOLERATION_SECONDS, self.since if late else None
        )
        obj_status = status("Unhealthy" if bad else "Healthy")
        obj["metadata"]["annotations"].update(previous_leader_records({**obj, **obj_status}))
        return obj, obj_status


def without_nulls(value: Any) -> Any:
    """`value` without its null members, in lists too, as the apiserver stores a status written by a merge patch."""
    if isinstance(value, dict):
        return {key: without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [without_nulls(item) for item in value]
    return value


def name_of(index: int) -> str:
    return f"job-{index:05d}"


def create_bindings(api: client.ApiClient, count: int, fixtures: Fixtures, threads: int) -> float:
    """Create the bindings through the apiserver and write their status (two requests each)."""
    started = time.monotonic()
    with ThreadPoolExecutor(threads) as pool:
        for done, _ in enumerate(pool.map(lambda index: create_one(api, fixtures, index), range(count)), 1):
            if done % 1000 == 0:
                print(f"  created {done}/{count} ({time.monotonic() - started:.0f} s)", file=sys.stderr)
    return time.monotonic() - started


def create_one(api: client.ApiClient, fixtures: Fixtures, index: int) -> dict[str, Any]:
    """Create binding `index` and write its status through the apiserver; the binding as stored."""
    objects = client.CustomObjectsApi(api)
    r = RESOURCE_BINDINGS
    obj, obj_status = fixtures(index)
    objects.create_namespaced_custom_object(r.group, r.version, NAMESPACE, r.plural, obj)
    return dict(
        objects.patch_namespaced_custom_object_status(
            r.group, r.version, NAMESPACE, r.plural, obj["metadata"]["name"], obj_status
        )
    )


def store_bindings(api: client.ApiClient, plane: ControlPlane, count: int, fixtures: Fixtures, threads: int) -> float:
    """The fixture path for large N (`--fixtures etcd`), not a measured part: the first binding of each shape
    (Healthy, Unhealthy, expired) is created through the apiserver as `create_bindings` does; every other one is
    written straight into the benchmark's own etcd as the apiserver stores it (a custom resource is stored as JSON
    under /registry/<group>/<resource>/<namespace>/<name>, without resourceVersion, which etcd's revision gives),
    with the metadata the apiserver adds (uid, creationTimestamp, generation) and the managedFields of its shape's
    template, in transactions of ETCD_TXN_OPS puts. The apiserver's watch cache reads them from etcd's watch; this
    returns once the apiserver's own LIST counts all N and a GET of the last one returns what was stored."""
    started = time.monotonic()
    templates: dict[tuple[bool, bool], dict[str, Any]] = {}
    for index in range(count):
        if fixtures.shape(index) not in templates:
            templates[fixtures.shape(index)] = create_one(api, fixtures, index)
    through_api = {int(t["metadata"]["name"].removeprefix("job-")) for t in templates.values()}
    r = RESOURCE_BINDINGS

    def stored(index: int) -> dict[str, Any]:
        obj, obj_status = fixtures(index)
        template = templates[fixtures.shape(index)]["metadata"]
        obj["metadata"].update(
            uid=str(uuid.uuid4()),
            creationTimestamp=format_time(datetime.now(UTC)),
            generation=template["generation"],
            managedFields=template["managedFields"],
        )
        return without_nulls({**obj, **obj_status})  # as the status patch lands: its nulls are absent members

    for template in templates.values():  # what is stored is what the apiserver made of the same fixture
        mine = stored(int(template["metadata"]["name"].removeprefix("job-")))
        for part in ("spec", "status", "labels", "annotations"):
            ours, theirs = (obj.get(part) or obj["metadata"].get(part) for obj in (mine, template))
            if part == "annotations":
                ours, theirs = set(ours), set(theirs)  # the records' times may be a second apart
            if ours != theirs:
                raise RuntimeError(
                    f"{template['metadata']['name']}: the apiserver stores {part} as {theirs}, not {ours}"
                )

    def put(indexes: list[int]) -> None:
        operations = []
        for index in indexes:
            key = etcd_key(r.group, r.plural, NAMESPACE, name_of(index))
            value = json.dumps(stored(index), separators=(",", ":")).encode()
            put = {"key": base64.b64encode(key.encode()).decode(), "value": base64.b64encode(value).decode()}
            operations.append({"requestPut": put})
        plane.etcd("kv/txn", {"success": operations}, timeout=120)

    rest = [index for index in range(count) if index not in through_api]
    batches = [rest[i : i + ETCD_TXN_OPS] for i in range(0, len(rest), ETCD_TXN_OPS)]
    with ThreadPoolExecutor(min(threads, 4)) as pool:
        for done, _ in enumerate(pool.map(put, batches), 1):
            if done % 50 == 0:
                print(
                    f"  stored {done * ETCD_TXN_OPS}/{len(rest)} ({time.monotonic() - started:.0f} s)", file=sys.stderr
                )
    objects = CustomObjectsList(api)
    deadline = time.monotonic() + FIXTURE_VISIBLE_SECONDS
    while True:
        listing = objects(limit=1)
        seen = len(listing["items"]) + (listing["metadata"].get("remainingItemCount") or 0)
        if seen == count:
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"the apiserver lists {seen} bindings, {count} were stored")
        time.sleep(1)
    last = name_of(rest[-1]) if rest else name_of(0)
    got = client.CustomObjectsApi(api).get_namespaced_custom_object(r.group, r.version, NAMESPACE, r.plural, last)
    expected = stored(int(last.removeprefix("job-")))
    if got["spec"] != expected["spec"] or got["status"] != expected["status"]:
        raise RuntimeError(f"{last} as the apiserver returns it is not what was stored")
    print(f"  the apiserver lists {count} bindings; {last} reads back as stored", file=sys.stderr)
    return time.monotonic() - started


def list_floor(api: client.ApiClient, expected: int) -> tuple[float, str]:
    """Best of three LISTs of every binding, paged as the informer's first list (`LIST_PAGE_SIZE`); and the last
    list's resourceVersion."""
    objects = CustomObjectsList(api)
    best, version = float("inf"), ""
    for _ in range(3):
        started = time.perf_counter()
        count, token = 0, None
        while True:
            listing = objects(limit=LIST_PAGE_SIZE, _continue=token) if token else objects(limit=LIST_PAGE_SIZE)
            count += len(listing["items"])
            token = listing["metadata"].get("continue")
            if not token:
                break
        best = min(best, time.perf_counter() - started)
        if count != expected:
            raise RuntimeError(f"LIST returned {count} bindings, expected {expected}")
        version = listing["metadata"]["resourceVersion"]
    return best, version


class CustomObjectsList:
    def __init__(self, api: client.ApiClient) -> None:
        self.api = client.CustomObjectsApi(api)

    def __call__(self, **kwargs: Any) -> Any:
        r = RESOURCE_BINDINGS
        return self.api.list_cluster_custom_object(r.group, r.version, r.plural, **kwargs)


class BindingWatch:
    """Watches the bindings from a resourceVersion and notes, per Unhealthy binding, when the stamp and the eviction
    task were first seen (wall clock) and what they said."""

    def __init__(self, api: client.ApiClient, resource_version: str, watched: set[str]) -> None:
        self.list = CustomObjectsList(api)
        self.resource_version = resource_version
        self.watched = watched
        self.stamp: dict[str, tuple[float, str]] = {}  # name -> (seen at, annotation value)
        self.eviction: dict[str, tuple[float, dict[str, Any]]] = {}  # name -> (seen at, task)
        self.unexpected: list[str] = []  # evictions of bindings that were Healthy
        self.error: BaseException | None = None
        self._watch = watch.Watch()
        self._thread = threading.Thread(target=self._run, name="bench-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._watch.stop()

    def _run(self) -> None:
        try:
            while True:
                for event in self._watch.stream(
                    self.list, resource_version=self.resource_version, timeout_seconds=600, allow_watch_bookmarks=True
                ):
                    self._seen(event["object"], time.time())
                if self._watch._stop:  # stopped by us, not by the server's timeout
                    return
        except BaseException as error:  # surfaced by the main thread
            self.error = error

    def _seen(self, obj: dict[str, Any], at: float) -> None:
        metadata = obj.get("metadata") or {}
        self.resource_version = metadata.get("resourceVersion") or self.resource_version
        name = metadata.get("name", "")
        since = (metadata.get("annotations") or {}).get(UNHEALTHY_SINCE_ANNOTATION)
        tasks = (obj.get("spec") or {}).get("gracefulEvictionTasks") or []
        if since and name not in self.stamp:
            self.stamp[name] = (at, since)
        if tasks and name not in self.eviction:
            if name not in self.watched:
                self.unexpected.append(name)
            self.eviction[name] = (at, tasks[0])


class ControllerProcess:
    def __init__(self, kubeconfig: Path, log: Path, workers: int | None = None) -> None:
        self.port = free_port()
        self.log = log
        command = [
            sys.executable,
            "-m",
            "relay.cli",
            "controllers",
            "--kubeconfig",
            str(kubeconfig),
            "--lease-namespace",
            LEASE_NAMESPACE,
            "--metrics-address",
            f"127.0.0.1:{self.port}",
            "--log-format",
            "json",
        ]
        if workers is not None:  # the relay's controllers.workers, through its config file
            config_file = log.with_name("relay-config.yaml")
            config_file.write_text(f"controllers:\n  workers: {workers}\n")
            command += ["--config", str(config_file)]
        env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
        env.pop("KUBERNETES_SERVICE_HOST", None)
        self.started = time.monotonic()
        with log.open("ab") as out:
            self.process = subprocess.Popen(
                command, cwd=REPO_ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
            )

    def alive(self) -> None:
        if self.process.poll() is not None:
            raise RuntimeError(f"controllers exited with {self.process.returncode}; log tail:\n{self.log_tail()}")

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def metrics(self) -> str:
        """The process's /metrics text; empty while it does not answer yet."""
        try:
            with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
                f"http://127.0.0.1:{self.port}/metrics", timeout=5
            ) as response:
                return str(response.read().decode())
        except OSError:
            return ""

    def reconciles(self) -> float:
        """Sum over results of the resourcebindings reconciles; 0 while /metrics does not answer yet."""
        pattern = re.compile(rf'^{METRIC}{{controller="{CONTROLLER}",result="[^"]+"}} ([0-9.e+]+)$', re.M)
        return sum(float(value) for value in pattern.findall(self.metrics()))

    def api_calls(self) -> dict[str, list[float]]:
        """The loop's API calls so far by call: [count, seconds in total] (failover_relay_api_call_duration_seconds)."""
        calls: dict[str, list[float]] = {}
        for part, index in (("count", 0), ("sum", 1)):
            pattern = re.compile(rf'^failover_relay_api_call_duration_seconds_{part}{{call="([^"]+)"}} (\S+)$', re.M)
            for call, value in pattern.findall(self.metrics()):
                calls.setdefault(call, [0.0, 0.0])[index] = float(value)
        return calls

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime (fields 14, 15 of stat)

    def memory_mib(self) -> dict[str, float]:
        values = {}
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0]) / 1024
        return values

    def entries(self) -> list[dict[str, Any]]:
        """Every JSON line of the log so far."""
        found = []
        for line in self.log.read_text(errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict):
                found.append(entry)
        return found

    def _line(self, event: str) -> dict[str, Any] | None:
        return next((entry for entry in self.entries() if entry.get("event") == event), None)

    def logged_at(self, event: str) -> float:
        """The wall-clock time of the first log line of `event` (its ISO timestamp)."""
        at = parse_time((self._line(event) or {}).get("timestamp"))
        if at is None:
            raise RuntimeError(f"no {event} line in {self.log}")
        return at.timestamp()

    def log_has(self, event: str) -> bool:
        return self._line(event) is not None

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def binding_bytes(api: client.ApiClient) -> int:
    """The size of one stored binding as JSON (what the informer receives per object)."""
    r = RESOURCE_BINDINGS
    obj = client.CustomObjectsApi(api).get_namespaced_custom_object(
        r.group, r.version, NAMESPACE, r.plural, "job-00000"
    )
    return len(json.dumps(obj, separators=(",", ":")))


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered) + 0.5) - 1))]


def distribution(values: list[float]) -> str:
    if not values:
        return "n/a | n/a | n/a"
    return " | ".join(f"{v:.2f}" for v in (percentile(values, 0.5), percentile(values, 0.95), max(values)))


def machine() -> str:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    memory = int(Path("/proc/meminfo").read_text().split()[1]) / 1024 / 1024
    return (
        f"{os.cpu_count()} CPU {cpu}, {memory:.1f} GiB, kernel {platform.release()}, "
        f"CPython {platform.python_version()}"
    )


def run(args: argparse.Namespace) -> int:
    count, bad_count, toleration = args.bindings, args.unhealthy, args.toleration
    if not 0 <= bad_count <= count:
        print("--unhealthy must be between 0 and --bindings", file=sys.stderr)
        return 2
    if args.relay_workers is not None and args.relay_workers < 1:
        print("--relay-workers must be at least 1", file=sys.stderr)
        return 2
    if not 0 <= args.expired <= bad_count:
        print("--expired must be between 0 and --unhealthy", file=sys.stderr)
        return 2
    if not 0 <= args.leader_change <= count - bad_count:
        print("--leader-change must be between 0 and the Healthy bindings (--bindings - --unhealthy)", file=sys.stderr)
        return 2
    step = count / bad_count if bad_count else 0
    unhealthy = {int(i * step) for i in range(bad_count)}
    # Every other Unhealthy binding (up to --expired) had its toleration run out under the previous leader.
    expired = set(sorted(unhealthy)[1::2][: args.expired])
    expired |= set(sorted(unhealthy - expired)[: args.expired - len(expired)])
    unhealthy_names = {f"job-{index:05d}" for index in unhealthy}
    expired_names = {f"job-{index:05d}" for index in expired}
    results: dict[str, Any] = {
        "bindings": count,
        "unhealthy": bad_count,
        "expired": len(expired),
        "toleration_seconds": toleration,
        "relay_workers": args.relay_workers,
        "machine": machine(),
    }
    workdir = Path(tempfile.mkdtemp(prefix="reconcile-scale-"))
    print(f"work directory: {workdir}", file=sys.stderr)

    with ControlPlane(ensure_binaries()) as plane:
        for crds in envtest_crds(karmada_tree(source_only=True), workdir / "karmada-crds"):
            plane.apply_crds(crds)
        api = api_client(plane.kubeconfig_path, args.threads)
        client.CoreV1Api(api).create_namespace({"metadata": {"name": NAMESPACE}})
        create_clusters(api)
        fixtures = Fixtures(unhealthy, expired, toleration)
        if args.fixtures == "etcd":
            print(f"storing {count} bindings ({bad_count} Unhealthy) in etcd", file=sys.stderr)
            results["store_seconds"] = store_bindings(api, plane, count, fixtures, args.threads)
        else:
            print(f"creating {count} bindings ({bad_count} Unhealthy) with {args.threads} threads", file=sys.stderr)
            results["create_seconds"] = create_bindings(api, count, fixtures, args.threads)
        results["binding_bytes"] = binding_bytes(api)
        results["list_floor_seconds"], version = list_floor(api, count)

        observer = BindingWatch(api, version, unhealthy_names)
        observer.start()
        controller = ControllerProcess(plane.kubeconfig_path, workdir / "controllers.log", args.relay_workers)
        standby: ControllerProcess | None = None
        try:
            measure(
                controller, observer, results, count, unhealthy_names, expired_names, toleration, args.steady_seconds
            )
            if expired:
                workers = args.relay_workers or ControllerSettings.__dataclass_fields__["workers"].default
                healthy = [index for index in range(count) if index not in unhealthy]
                spread = [name_of(index) for index in healthy[:: max(1, len(healthy) // len(expired))][: len(expired)]]
                results["ceiling"] = ceiling(plane.kubeconfig_path, spread, workers)
            if args.relist:
                results["relist"] = relist(plane, controller)
            if args.leader_change:
                standby = ControllerProcess(plane.kubeconfig_path, workdir / "standby.log", args.relay_workers)
                healthy = sorted(set(range(count)) - unhealthy)
                handed = [name_of(index) for index in healthy[:: max(1, len(healthy) // args.leader_change)]]
                results["leader_change"] = leader_change(
                    api, controller, standby, observer, handed[: args.leader_change], args.threads
                )
            if args.cluster_failover:
                window = DecisionSettings.__dataclass_fields__["brake_window"].default.total_seconds()
                results["cluster_failover"] = cluster_failover(api, standby or controller, observer, count, window)
        finally:
            controller.stop()
            if standby is not None:
                standby.stop()
                results["standby_log"] = str(standby.log)
            observer.stop()
            results["controller_log"] = str(controller.log)
    report(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


def measure(
    controller: ControllerProcess,
    observer: BindingWatch,
    results: dict[str, Any],
    count: int,
    unhealthy: set[str],
    expired: set[str],
    toleration: int,
    steady_seconds: float,
) -> None:
    started = controller.started
    fresh = unhealthy - expired  # stamped by this leader; the expired ones carry their stamp already
    marks: dict[str, float] = {}
    deadline = started + FIRST_PASS_DEADLINE_SECONDS
    while True:
        controller.alive()
        if observer.error is not None:
            raise RuntimeError(f"watch failed: {observer.error!r}")
        now = time.monotonic()
        if "baseline_mib" not in results and controller.log_has("controllers_serving_metrics"):
            results["baseline_mib"] = controller.memory_mib()  # imports done, no informer started yet
        if "lease" not in marks and controller.log_has("controllers_starting"):
            marks["lease"] = now
        if "synced" not in marks and controller.log_has("caches_synced"):
            marks["synced"] = now
        reconciles = controller.reconciles()
        if "reconciled" not in marks and reconciles >= count:
            marks["reconciled"] = now
        if "stamped" not in marks and fresh <= set(observer.stamp):
            marks["stamped"] = now
        if "reconciled" in marks and "stamped" in marks:
            break
        if now > deadline:
            raise RuntimeError(
                f"first pass incomplete after {FIRST_PASS_DEADLINE_SECONDS:.0f} s: {reconciles:.0f} "
                f"reconciles, {len(observer.stamp)}/{len(fresh)} stamped"
            )
        time.sleep(POLL_SECONDS)
    first_pass_done = max(marks["reconciled"], marks["stamped"])
    results["first_pass"] = {name: at - started for name, at in marks.items()}
    results["first_pass_seconds"] = first_pass_done - started
    results["first_pass_cpu_seconds"] = controller.cpu_seconds()
    results["after_first_pass_mib"] = controller.memory_mib()
    print(f"first full reconcile after {results['first_pass_seconds']:.1f} s", file=sys.stderr)

    # Evictions: due `toleration` after each stamp.
    wait_evicted(
        observer,
        controller,
        unhealthy,
        toleration + EVICTION_SLACK_SECONDS,
        f"after the toleration plus {EVICTION_SLACK_SECONDS:.0f} s",
    )
    results["evictions_done_seconds"] = time.monotonic() - started
    results["unexpected_evictions"] = list(observer.unexpected)
    results["delays"] = delays(observer, fresh, toleration)
    synced_at = controller.logged_at("caches_synced")
    results["expired_after_sync"] = [observer.eviction[name][0] - synced_at for name in sorted(expired)]
    # The stamps this leader wrote among those evictions (of the fresh ones only: an expired binding's old stamp is
    # first seen with its eviction): writes the burst's pace is shared with.
    if expired:
        burst = [observer.eviction[name][0] for name in expired]
        results["stamps_in_burst"] = sum(min(burst) <= observer.stamp[name][0] <= max(burst) for name in fresh)
    results["api_calls"] = controller.api_calls()  # until every eviction was seen: where the evictions' time went

    # Steady state: 30 s without changes, every binding cached, the evicted ones waiting for their task's end.
    time.sleep(2)  # let the events and the last reconciles of the eviction writes finish
    cpu_before, wall_before = controller.cpu_seconds(), time.monotonic()
    time.sleep(steady_seconds)
    cpu = controller.cpu_seconds() - cpu_before
    wall = time.monotonic() - wall_before
    results["steady"] = {
        "seconds": wall,
        "cpu_seconds": cpu,
        "cpu_percent": 100 * cpu / wall,
        **controller.memory_mib(),
        "reconciles_total": controller.reconciles(),
    }


def ceiling(kubeconfig: Path, names: list[str], workers: int) -> dict[str, Any]:
    """The apiserver's own pace for a burst like a new leader's: one JSON patch per binding that tests its
    resourceVersion (read before timing) and adds an annotation of CEILING_PAYLOAD_BYTES, `workers` at a time, by a
    bare client with a connection per worker; seconds from the first request to each answer."""
    api = api_client(kubeconfig, workers)
    objects, r = client.CustomObjectsApi(api), RESOURCE_BINDINGS
    versions = {
        name: objects.get_namespaced_custom_object(r.group, r.version, NAMESPACE, r.plural, name)["metadata"][
            "resourceVersion"
        ]
        for name in names
    }
    payload = "x" * CEILING_PAYLOAD_BYTES
    key = CEILING_ANNOTATION.replace("/", "~1")

    def write(name: str) -> tuple[float, float]:
        sent = time.monotonic()
        objects.patch_namespaced_custom_object(  # as the loop writes (controllers/access/kube.py `json_patch`)
            r.group,
            r.version,
            NAMESPACE,
            r.plural,
            name,
            [
                {"op": "test", "path": "/metadata/resourceVersion", "value": versions[name]},
                {"op": "add", "path": f"/metadata/annotations/{key}", "value": payload},
            ],
            _content_type=JSON_PATCH,
        )
        answered = time.monotonic()
        return answered - started, answered - sent

    started = time.monotonic()
    with ThreadPoolExecutor(workers) as pool:
        answers = list(pool.map(write, names))
    api.close()
    return {
        "writes": len(names),
        "workers": workers,
        "answered": sorted(at for at, _ in answers),
        "latency_ms": 1000 * sum(latency for _, latency in answers) / len(answers),
    }


def relist(plane: ControlPlane, controller: ControllerProcess) -> dict[str, Any]:
    """An apiserver rollout at this scale (`--relist`): kube-apiserver restarted after a write to etcd behind its
    back (a key of no resource), so its watch cache starts past every informer's resourceVersion and each informer
    is refused with 410 and lists everything again; until the bindings are listed again, by this term or, if the
    Lease was lost meanwhile, by the next. The RSS is sampled every POLL_SECONDS, VmHWM read at the end."""
    seen_before = len(controller.entries())
    before = controller.memory_mib()
    started = time.monotonic()

    def behind_its_back() -> None:
        key, value = (base64.b64encode(text.encode()).decode() for text in ("/bench/relist", str(time.time())))
        plane.etcd("kv/put", {"key": key, "value": value})

    restart_seconds = plane.restart_apiserver(behind_its_back)
    peak, listed = before.get("VmRSS", 0.0), None
    deadline = started + FIRST_PASS_DEADLINE_SECONDS
    while listed is None:
        controller.alive()
        if time.monotonic() > deadline:
            raise RuntimeError(f"the bindings were not listed again within {FIRST_PASS_DEADLINE_SECONDS:.0f} s")
        peak = max(peak, controller.memory_mib().get("VmRSS", 0.0))
        after = controller.entries()[seen_before:]
        listed = next((e for e in after if e.get("event") == "listed" and e.get("resource") == CONTROLLER), None)
        time.sleep(POLL_SECONDS)
    relisted_seconds = time.monotonic() - started
    time.sleep(5)  # the reconciles of what the relist reported
    # The loop's own events (snake_case names); the client's urllib3 retry warnings are counted apart.
    events = [str(entry.get("event")) for entry in controller.entries()[seen_before:]]
    return {
        "apiserver_restart_seconds": restart_seconds,
        "relisted_seconds": relisted_seconds,
        "listed": listed,
        "events": sorted({event for event in events if LOOP_EVENT.match(event)}),
        "other_lines": sum(not LOOP_EVENT.match(event) for event in events),
        "rss_before_mib": before.get("VmRSS", 0.0),
        "rss_peak_sampled_mib": peak,
        "after": controller.memory_mib(),
    }


def leader_change(
    api: client.ApiClient,
    leader: ControllerProcess,
    standby: ControllerProcess,
    observer: BindingWatch,
    names: list[str],
    threads: int,
) -> dict[str, Any]:
    """`--leader-change K`: once `standby` says `caches_synced`, kill `leader`, make the toleration of the Healthy
    bindings `names` run out while the Lease is held by the dead, and time the handover against the Lease: its expiry
    (the old leader's death as the others see it), the new leader's acquireTime, its first and last eviction of
    `names` seen by the watch (all wall clock on this machine)."""
    deadline = time.monotonic() + FIRST_PASS_DEADLINE_SECONDS
    while not standby.log_has("caches_synced"):
        standby.alive()
        if time.monotonic() > deadline:
            raise RuntimeError(f"the standby did not sync within {FIRST_PASS_DEADLINE_SECONDS:.0f} s")
        time.sleep(POLL_SECONDS)
    warm = standby.memory_mib()
    lists_as_standby = sum(entry.get("event") == "listed" for entry in standby.entries())
    coordination = client.CoordinationV1Api(api)
    old_holder = coordination.read_namespaced_lease(LEASE_NAME, LEASE_NAMESPACE).spec.holder_identity
    observer.watched |= set(names)

    leader.process.kill()
    leader.process.wait()
    killed_at = time.time()
    # The dead leader's last renewal: the others take over a lease duration after it, by their own clocks.
    dead = coordination.read_namespaced_lease(LEASE_NAME, LEASE_NAMESPACE).spec
    expiry = dead.renew_time.timestamp() + (dead.lease_duration_seconds or 15)
    since = format_time(datetime.now(UTC) - timedelta(seconds=HEALTHY_TOLERATION_SECONDS + EXPIRED_FOR_SECONDS))
    stamp = json.dumps({CLUSTER: since}, separators=(",", ":"))
    objects, r = client.CustomObjectsApi(api), RESOURCE_BINDINGS

    def run_out(name: str) -> None:
        objects.patch_namespaced_custom_object_status(
            r.group, r.version, NAMESPACE, r.plural, name, status("Unhealthy")
        )
        objects.patch_namespaced_custom_object(
            r.group,
            r.version,
            NAMESPACE,
            r.plural,
            name,
            {"metadata": {"annotations": {UNHEALTHY_SINCE_ANNOTATION: stamp}}},
        )

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(run_out, names))
    written_at = time.time()

    wait_evicted(
        observer,
        standby,
        set(names),
        LEADER_CHANGE_DEADLINE_SECONDS,
        f"{LEADER_CHANGE_DEADLINE_SECONDS:.0f} s after the leader was killed",
    )
    lease = coordination.read_namespaced_lease(LEASE_NAME, LEASE_NAMESPACE).spec
    if lease.holder_identity in (None, old_holder):
        raise RuntimeError(f"the Lease is held by {lease.holder_identity!r} after the evictions")
    seen = sorted(observer.eviction[name][0] for name in names)
    entries = standby.entries()
    synced = next(index for index, entry in enumerate(entries) if entry.get("event") == "caches_synced")
    return {
        "handed": len(names),
        "killed_to_expiry": expiry - killed_at,
        "fixtures_written_after_kill": written_at - killed_at,
        "fixtures_before_acquire": written_at < lease.acquire_time.timestamp(),
        "expiry_to_acquire": lease.acquire_time.timestamp() - expiry,
        "expiry_to_first_eviction": seen[0] - expiry,
        "expiry_to_last_eviction": seen[-1] - expiry,
        "acquire_to_first_eviction": seen[0] - lease.acquire_time.timestamp(),
        "acquire_to_last_eviction": seen[-1] - lease.acquire_time.timestamp(),
        "lists_as_standby": lists_as_standby,
        "lists_after_sync": sum(entry.get("event") == "listed" for entry in entries[synced + 1 :]),
        "standby_warm_mib": warm,
        "standby_after_mib": standby.memory_mib(),
    }


def cluster_failover(
    api: client.ApiClient, leader: ControllerProcess, observer: BindingWatch, count: int, window: float
) -> dict[str, Any]:
    """`--cluster-failover`: CLUSTER goes not Ready and a NoExecute taint lands on it, as Karmada's cluster status
    controller and a ClusterTaintPolicy write them; no taint manager runs here, so every eviction of the bindings still
    on CLUSTER is the relay's (failover/reconcile/cluster_eviction.py). Timed from the brake's window after the Ready
    transition (`controllers.brakeWindowSeconds`, when the relay may first write): the first, median and last eviction
    seen by the watch, evictions per second over their spread; and the relay's conflicts and failed preconditions
    meanwhile."""
    names = {name_of(index) for index in range(count)} - set(observer.eviction)
    observer.watched |= names
    before = leader.metrics()
    objects = client.CustomObjectsApi(api)
    now = datetime.now(UTC).replace(microsecond=0)  # as the stamps below are written: whole seconds
    condition = {
        "type": "Ready",
        "status": "False",
        "reason": "ClusterNotReachable",
        "message": "cluster is not reachable",
    }
    objects.patch_cluster_custom_object_status(
        "cluster.karmada.io",
        "v1alpha1",
        "clusters",
        CLUSTER,
        {"status": {"conditions": [{**condition, "lastTransitionTime": format_time(now)}]}},
    )
    taint = {"key": "failover.example.io/not-ready", "effect": "NoExecute", "timeAdded": format_time(now)}
    objects.patch_cluster_custom_object(
        "cluster.karmada.io", "v1alpha1", "clusters", CLUSTER, {"spec": {"taints": [taint]}}
    )
    allowed = now.timestamp() + window
    wait_evicted(observer, leader, names, window + len(names) / 5 + EVICTION_SLACK_SECONDS, "of the cluster failover")
    after = leader.metrics()
    seen = sorted(observer.eviction[name][0] for name in names)
    tasks = [observer.eviction[name][1] for name in names]
    spread = seen[-1] - seen[0]
    return {
        "evicted": len(names),
        "window_seconds": window,
        "first_after_window": seen[0] - allowed,
        "median_after_window": percentile([at - allowed for at in seen], 0.5),
        "last_after_window": seen[-1] - allowed,
        "per_second": (len(names) - 1) / spread if spread > 0 else float("inf"),
        "with_state": sum(bool(task.get("preservedLabelState")) for task in tasks),
        "taint_manager_tasks": sum(task.get("producer") == "TaintManager" for task in tasks),
        "conflicts": counter(after, METRIC, 'result="conflict"') - counter(before, METRIC, 'result="conflict"'),
        "precondition_failures": counter(after, PRECONDITION_FAILURES) - counter(before, PRECONDITION_FAILURES),
    }


def wait_evicted(
    observer: BindingWatch, process: ControllerProcess, names: set[str], seconds: float, when: str
) -> None:
    """Until the watch has seen an eviction of every binding of `names`; a RuntimeError naming how many after
    `seconds`, or when the process or the watch failed."""
    deadline = time.monotonic() + seconds
    while not names <= set(observer.eviction):
        process.alive()
        if observer.error is not None:
            raise RuntimeError(f"watch failed: {observer.error!r}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {len(names & set(observer.eviction))}/{len(names)} evictions {when}")
        time.sleep(POLL_SECONDS)


def counter(metrics: str, name: str, label: str = "") -> float:
    """The sum of `name`'s samples whose labels contain `label`, in a /metrics text."""
    pattern = re.compile(rf"^{name}(?:{{([^}}]*)}})? ([0-9.e+]+)$", re.M)
    return sum(float(value) for labels, value in pattern.findall(metrics) if label in labels)


def delays(observer: BindingWatch, unhealthy: set[str], toleration: int) -> dict[str, list[float]]:
    written, observed, stamp_to_eviction = [], [], []
    for name in sorted(unhealthy):
        stamp_seen, since_raw = observer.stamp[name]
        eviction_seen, task = observer.eviction[name]
        since = parse_time(json.loads(since_raw)[CLUSTER])
        created = parse_time(task.get("creationTimestamp"))
        if since is None or created is None:
            raise RuntimeError(f"{name}: unreadable stamp {since_raw!r} or task {task!r}")
        expiry = since + timedelta(seconds=toleration)
        written.append((created - expiry).total_seconds())
        observed.append(eviction_seen - expiry.timestamp())
        stamp_to_eviction.append(eviction_seen - stamp_seen - toleration)
    return {"written": written, "observed": observed, "stamp_to_eviction": stamp_to_eviction}


def report(results: dict[str, Any]) -> None:
    first = results["first_pass"]
    floor = results["list_floor_seconds"]
    steady = results["steady"]
    after = results["after_first_pass_mib"]
    d = results["delays"]
    count = results["bindings"]
    print(f"\nMachine: {results['machine']}")
    print(
        f"{count} bindings of {results['binding_bytes']} bytes each as JSON ({results['unhealthy']} Unhealthy with "
        f"tolerationSeconds {results['toleration_seconds']}, {results['expired']} of them expired under a previous "
        f"leader; the rest Healthy with {HEALTHY_TOLERATION_SECONDS})\n"
    )
    print("| step | seconds |")
    print("|---|---|")
    if "create_seconds" in results:
        print(
            f"| create {count} bindings + their status (2 requests each) | {results['create_seconds']:.1f} "
            f"({2 * count / results['create_seconds']:.0f} requests/s) |"
        )
    else:
        print(
            f"| fixtures, not measured: {count} bindings stored in etcd until the apiserver lists them all | "
            f"{results['store_seconds']:.1f} |"
        )
    print(f"| floor: one LIST of all {count} with the client, pages of {LIST_PAGE_SIZE} (best of 3) | {floor:.2f} |")
    print(f"| controller start → Lease held (`controllers_starting`) | {first.get('lease', float('nan')):.2f} |")
    print(f"| controller start → `caches_synced` | {first.get('synced', float('nan')):.2f} |")
    print(f"| controller start → {count} reconciles | {first['reconciled']:.2f} |")
    print(f"| controller start → every Unhealthy binding stamped | {first['stamped']:.2f} |")
    print(
        f"| **first full reconcile** (both of the above) | **{results['first_pass_seconds']:.2f}** "
        f"({results['first_pass_seconds'] / floor:.1f}× the LIST floor) |"
    )
    print(f"| CPU used by the controller until then | {results['first_pass_cpu_seconds']:.2f} |")
    print(f"| controller start → every eviction observed | {results['evictions_done_seconds']:.2f} |\n")
    print("| controller process | value |")
    print("|---|---|")
    print(
        f"| RSS before the informers start (`controllers_serving_metrics`) | "
        f"{results.get('baseline_mib', {}).get('VmRSS', 0):.0f} MiB |"
    )
    print(f"| RSS after the first pass | {after.get('VmRSS', 0):.0f} MiB |")
    print(
        f"| steady CPU over {steady['seconds']:.0f} s after the evictions | {steady['cpu_percent']:.2f} % of one "
        f"core ({steady['cpu_seconds']:.2f} s) |"
    )
    print(f"| steady RSS / peak RSS (VmHWM) | {steady.get('VmRSS', 0):.0f} MiB / {steady.get('VmHWM', 0):.0f} MiB |")
    per_binding = 1024 * (steady.get("VmRSS", 0) - results.get("baseline_mib", {}).get("VmRSS", 0)) / count
    print(f"| RSS per cached binding ((steady − before informers) / N) | {per_binding:.1f} KiB |\n")
    print(f"Delay from toleration expiry to the eviction ({len(d['written'])} bindings), seconds:\n")
    print("| measure | p50 | p95 | max | bound |")
    print("|---|---|---|---|---|")
    print(
        f"| task creationTimestamp − (annotation + toleration) | {distribution(d['written'])} | 1 s timestamp "
        f"precision (both ends truncated) |"
    )
    print(
        f"| observed by a watch − (annotation + toleration) | {distribution(d['observed'])} | < 1 s annotation "
        f"truncation + write + watch latency |"
    )
    print(
        f"| (eviction seen − stamp seen) − toleration | {distribution(d['stamp_to_eviction'])} | > −1 s: the "
        f"timer counts from the truncated annotation |"
    )
    if results["expired_after_sync"]:
        after_sync = sorted(results["expired_after_sync"])
        print(
            f"\nA new leader on {results['expired']} tolerations that ran out before it started: eviction seen by a "
            f"watch − `caches_synced`, seconds (first | 5th | p50 | p95 | last): {after_sync[0]:.2f} | "
            f"{after_sync[min(4, len(after_sync) - 1)]:.2f} | {distribution(after_sync)}"
        )
    if results.get("ceiling"):
        top = results["ceiling"]
        burst = sorted(results["expired_after_sync"])
        span, stamps = burst[-1] - burst[0], results["stamps_in_burst"]
        writes = len(burst) + stamps
        pace, ceiling_pace = writes / span if span > 0 else float("inf"), top["writes"] / top["answered"][-1]
        print(
            f"The apiserver's ceiling for that burst, same run: {top['writes']} conditional JSON patches of "
            f"{CEILING_PAYLOAD_BYTES} bytes to Healthy bindings, {top['workers']} at a time, by a bare client: the "
            f"last answered {top['answered'][-1]:.2f} s after the first was sent ({top['latency_ms']:.0f} ms each), "
            f"{ceiling_pace:.0f} writes/s. The relay's burst, first to last eviction seen: {span:.2f} s for "
            f"{len(burst)} evictions and the {stamps} stamps seen among them, {pace:.0f} writes/s: the ceiling's "
            f"pace is {ceiling_pace / pace:.2f}x the relay's; its last eviction {burst[-1]:.2f} s after "
            "`caches_synced`"
        )
    if results.get("api_calls"):
        print(
            "The loop's API calls until then (count x mean): "
            + ", ".join(
                f"{call} {count:.0f} x {1000 * total / count:.0f} ms"
                for call, (count, total) in sorted(results["api_calls"].items())
                if count
            )
        )
    if results.get("relist"):
        again = results["relist"]
        listed = again["listed"]
        print(
            f"\nAn apiserver rollout (`--relist`): kube-apiserver back in {again['apiserver_restart_seconds']:.1f} s; "
            f"the bindings listed again {again['relisted_seconds']:.1f} s after the restart began ("
            f"{'a new term' if listed.get('first') else 'the same term'}: {listed.get('objects')} objects, "
            f"{listed.get('changed')} changed, the list {listed.get('seconds')} s); RSS {again['rss_before_mib']:.0f} "
            f"MiB before, {again['rss_peak_sampled_mib']:.0f} MiB at most while sampled, VmHWM "
            f"{again['after'].get('VmHWM', 0):.0f} MiB, {again['after'].get('VmRSS', 0):.0f} MiB after; the loop's "
            f"log events meanwhile: {', '.join(again['events'])} (and {again['other_lines']} lines of the client's "
            "retries)"
        )
    if results.get("leader_change"):
        change = results["leader_change"]
        print(
            f"\nA leader change with a warm standby (`--leader-change {change['handed']}`): the leader killed, its "
            f"Lease expired {change['killed_to_expiry']:.2f} s later; {change['handed']} tolerations made to run out "
            f"{change['fixtures_written_after_kill']:.2f} s after the kill"
            f"{'' if change['fixtures_before_acquire'] else ' (NOT before the new leader took the Lease)'}. From the "
            f"old leader's death (the Lease's expiry): new leader's Lease {change['expiry_to_acquire']:.2f} s, its "
            f"first eviction seen {change['expiry_to_first_eviction']:.2f} s, its {change['handed']}th "
            f"{change['expiry_to_last_eviction']:.2f} s (from its acquireTime: "
            f"{change['acquire_to_first_eviction']:.2f} and {change['acquire_to_last_eviction']:.2f} s). LISTs of "
            f"the standby: {change['lists_as_standby']} "
            f"as it started, {change['lists_after_sync']} after its caches synced. Standby RSS warm "
            f"{change['standby_warm_mib'].get('VmRSS', 0):.0f} MiB, after the handover "
            f"{change['standby_after_mib'].get('VmRSS', 0):.0f} MiB."
        )
    if results.get("cluster_failover"):
        storm = results["cluster_failover"]
        print(
            f"\nA cluster failover (`--cluster-failover`): {storm['evicted']} bindings on {CLUSTER}, the cluster not "
            f"Ready and tainted NoExecute; the relay may write once the brake's window ({storm['window_seconds']:.0f} "
            f"s) is over. After it: first eviction {storm['first_after_window']:.2f} s, median "
            f"{storm['median_after_window']:.2f} s, last {storm['last_after_window']:.2f} s: "
            f"{storm['per_second']:.1f} evictions/s (Karmada's taint manager at its default rate: 1.2-1.5/s, "
            f"karmada#7495). {storm['with_state']} tasks carry the preserved state; conflicts "
            f"{storm['conflicts']:.0f}, failed preconditions {storm['precondition_failures']:.0f}."
        )
    if results["unexpected_evictions"]:
        print(f"\nUNEXPECTED: Healthy bindings evicted: {results['unexpected_evictions'][:10]}")
    print(f"\ncontroller log: {results['controller_log']}")
    if results.get("standby_log"):
        print(f"standby log: {results['standby_log']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bindings", type=int, default=10_000, help="ResourceBindings to create (default 10000)")
    parser.add_argument("--unhealthy", type=int, default=100, help="how many of them are Unhealthy (default 100)")
    parser.add_argument("--toleration", type=int, default=30, help="tolerationSeconds of the Unhealthy ones")
    parser.add_argument(
        "--expired", type=int, default=0, help="how many Unhealthy ones a previous leader stamped long ago (default 0)"
    )
    parser.add_argument("--steady-seconds", type=float, default=30.0, help="quiet window for CPU (default 30)")
    parser.add_argument("--threads", type=int, default=12, help="creating threads (default 12)")
    parser.add_argument("--quick", action="store_true", help="1,000 bindings, 20 Unhealthy")
    parser.add_argument(
        "--relay-workers", type=int, help="the relay's controllers.workers (default: the relay's own default)"
    )
    parser.add_argument(
        "--fixtures",
        choices=("api", "etcd"),
        default="api",
        help="create the bindings through the apiserver (default), or write all but one of each shape into its etcd",
    )
    parser.add_argument(
        "--relist",
        action="store_true",
        help="at the end, restart kube-apiserver so that every informer lists again, and measure that",
    )
    parser.add_argument(
        "--leader-change",
        type=int,
        default=0,
        metavar="K",
        help="at the end, kill the leader with a warm standby running and time the handover on K Healthy bindings"
        " whose toleration runs out meanwhile (default 0: no leader change)",
    )
    parser.add_argument(
        "--cluster-failover",
        action="store_true",
        help="at the end, take the bindings' cluster not Ready with a NoExecute taint and time the relay's evictions",
    )
    parser.add_argument("--json", type=Path, help="also write the raw results here")
    args = parser.parse_args(argv)
    if args.quick:
        args.bindings, args.unhealthy = 1_000, 20
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
