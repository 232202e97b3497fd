"""The harness's own promises, each checked against the running processes: conversion through karmada-webhook, the
envtest tier's Cluster stand-in against the aggregated apiserver's schema, a member apiserver really stopped."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.crd_sources import CLUSTER_STAND_IN_CRD
from tests.karmada.workloads import BINDINGS, FlinkJob, stateful_policy
from tests.karmada_env import KARMADA, LOOPBACK, KarmadaEnv, resource_path

pytestmark = pytest.mark.karmada

CLUSTER_SCHEMA = "com.github.karmada-io.karmada.pkg.apis.cluster.v1alpha1.Cluster"


def test_bindings_are_served_in_v1alpha1_through_karmadas_conversion_webhook(
    karmada_env: KarmadaEnv, namespace: str
) -> None:
    """v1alpha2 is stored; a v1alpha1 read goes through karmada-webhook /convert (the CRD patches of
    charts/karmada/_crds/patches, pointed at the local webhook)."""
    job = FlinkJob(karmada_env, namespace)
    job.create(stateful_policy("flink", namespace, job.name, karmada_env.members))
    karmada_env.wait_until(job.binding, 30, "the binding")

    old = karmada_env.api(KARMADA).get(
        resource_path("work.karmada.io/v1alpha1", "resourcebindings", job.binding_name, namespace)
    )

    assert old is not None and old["apiVersion"] == "work.karmada.io/v1alpha1"
    assert old["metadata"]["uid"] == job.binding()["metadata"]["uid"]
    assert BINDINGS == "work.karmada.io/v1alpha2"


def _resolve(node: dict[str, Any], schemas: dict[str, Any]) -> dict[str, Any]:
    """Follow ``$ref`` and single-element ``allOf`` (how Kubernetes' OpenAPI v3 wraps a referenced type)."""
    while True:
        if "$ref" in node:
            node = schemas[node["$ref"].rsplit("/", 1)[1]]
        elif len(node.get("allOf") or []) == 1:
            node = {**{k: v for k, v in node.items() if k != "allOf"}, **node["allOf"][0]}
        else:
            return node


def _missing(stand_in: dict[str, Any], real: dict[str, Any], schemas: dict[str, Any], path: str) -> list[str]:
    """Every field of the stand-in schema that the real one lacks or types differently."""
    real = _resolve(real, schemas)
    problems = []
    if stand_in.get("type") and real.get("type") and stand_in["type"] != real["type"]:
        problems.append(f"{path}: {stand_in['type']} here, {real['type']} in Karmada")
    if stand_in.get("x-kubernetes-preserve-unknown-fields"):
        return problems
    for name, child in (stand_in.get("properties") or {}).items():
        if name not in (real.get("properties") or {}):
            problems.append(f"{path}.{name}: not in Karmada's Cluster")
        else:
            problems += _missing(child, real["properties"][name], schemas, f"{path}.{name}")
    if "items" in stand_in and "items" in real:
        problems += _missing(stand_in["items"], real["items"], schemas, f"{path}[]")
    return problems


def test_the_envtest_cluster_stand_in_is_a_subset_of_the_served_cluster(karmada_env: KarmadaEnv) -> None:
    stand_in = yaml.safe_load(Path(CLUSTER_STAND_IN_CRD).read_text())["spec"]["versions"][0]["schema"][
        "openAPIV3Schema"
    ]
    document = karmada_env.api(KARMADA).get("/openapi/v3/apis/cluster.karmada.io/v1alpha1")
    assert document is not None, "karmada-aggregated-apiserver publishes no OpenAPI v3 for cluster.karmada.io"
    schemas = document["components"]["schemas"]

    assert _missing(stand_in, schemas[CLUSTER_SCHEMA], schemas, "Cluster") == []
    # The comparison can fail: a field Karmada does not have is found.
    invented = {
        "properties": {"spec": {"properties": {"taints": {"items": {"properties": {"until": {"type": "string"}}}}}}}
    }
    assert _missing(invented, schemas[CLUSTER_SCHEMA], schemas, "Cluster") == [
        "Cluster.spec.taints[].until: not in Karmada's Cluster"
    ]


def _port_open(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex((LOOPBACK, port)) == 0


def test_a_member_apiserver_stops_by_pid_and_comes_back_with_its_data(karmada_env: KarmadaEnv) -> None:
    member = karmada_env.members[-1]
    pid = karmada_env.member_pid(member)
    port = int(karmada_env.server_url(member).rsplit(":", 1)[1])
    kube_system = karmada_env.api(member).get(resource_path("v1", "namespaces", "kube-system"))
    assert pid is not None and _port_open(port)

    karmada_env.stop_member(member)

    assert karmada_env.member_pid(member) is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not _port_open(port)

    karmada_env.start_member(member)

    assert karmada_env.member_pid(member) not in (None, pid)
    assert (
        karmada_env.api(member).get(resource_path("v1", "namespaces", "kube-system"))["metadata"]["uid"]
        == (kube_system["metadata"]["uid"])
    )


def test_a_component_whose_port_was_taken_starts_again_on_a_free_one(karmada_env: KarmadaEnv) -> None:
    """free_port() picks a port that another process on the machine may bind before the component does."""
    with socket.socket() as squatter:
        squatter.bind((LOOPBACK, 0))
        squatter.listen()
        taken = squatter.getsockname()[1]
        karmada_env._ports["cm-health"] = taken  # as if free_port() had returned it a moment too early

        karmada_env.restart_controller_manager()

        assert karmada_env.ports()["cm-health"] != taken
        assert "karmada-controller-manager" in karmada_env.pids()
        assert b"address already in use" in karmada_env.logs()["karmada-controller-manager"].read_bytes()
