"""Karmada v1.19's purge-mode names: /mutate's rewrite, where legacy names are found, which spelling the loop writes."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import pytest
import yaml

from failover.admission.policy import legacy_purge_modes_in, mutate_policy
from failover.reconcile.purge_spelling import crd_purge_mode_enum, spelling_to_write
from tests.policies import flink_policy
from tests.relay.karmada_source import karmada_crd_dir


def graciously_policy() -> dict[str, Any]:
    policy = flink_policy(purgeMode="Graciously")
    del policy["spec"]["failover"]["application"]["statePreservation"]
    return policy


def test_mutate_rewrites_legacy_names_with_a_warning() -> None:
    verdict = mutate_policy(graciously_policy())

    assert {"op": "replace", "path": "/spec/failover/application/purgeMode", "value": "Gracefully"} in verdict.patch
    assert verdict.warnings == (
        "spec.failover.application.purgeMode: Graciously rewritten to Gracefully (removed in Karmada v1.19)",
    )
    mutated = jsonpatch.apply_patch(graciously_policy(), list(verdict.patch))
    assert mutated["spec"]["failover"]["application"]["purgeMode"] == "Gracefully"
    assert mutated["spec"]["failover"]["application"]["gracePeriodSeconds"] == 600


def test_the_rewrite_is_idempotent() -> None:
    once = jsonpatch.apply_patch(graciously_policy(), list(mutate_policy(graciously_policy()).patch))

    assert mutate_policy(once).patch == () and mutate_policy(once).warnings == ()


def test_cluster_section_is_rewritten_too() -> None:
    policy = flink_policy()
    policy["spec"]["failover"]["cluster"] = {"purgeMode": "Immediately"}

    assert {"op": "replace", "path": "/spec/failover/cluster/purgeMode", "value": "Directly"} in (
        mutate_policy(policy).patch
    )


def test_nothing_is_rewritten_for_karmada_v1_12_to_v1_14() -> None:
    verdict = mutate_policy(graciously_policy(), legacy_purge_modes=True)

    assert all(op["op"] != "replace" for op in verdict.patch) and verdict.warnings == ()


def test_legacy_names_are_found_in_bindings_and_their_eviction_tasks() -> None:
    binding = {
        "spec": {
            "failover": {"application": {"purgeMode": "Immediately"}},
            "gracefulEvictionTasks": [
                {"fromCluster": "m1", "purgeMode": "Directly"},
                {"fromCluster": "m2", "purgeMode": "Graciously"},
            ],
        }
    }

    found = [(path, pointer, mode.value) for path, pointer, mode in legacy_purge_modes_in(binding)]

    assert found == [
        ("spec.failover.application.purgeMode", "/spec/failover/application/purgeMode", "Immediately"),
        ("spec.gracefulEvictionTasks[1].purgeMode", "/spec/gracefulEvictionTasks/1/purgeMode", "Graciously"),
    ]


@pytest.mark.parametrize(
    "obj",
    [
        None,
        [],
        {"spec": "x"},
        {"spec": {"gracefulEvictionTasks": "x"}},
        {"spec": {"failover": {"application": {"purgeMode": 3}}}},
    ],
)
def test_odd_shapes_hold_no_legacy_names(obj: Any) -> None:
    assert legacy_purge_modes_in(obj) == []


V1_19 = frozenset({"Directly", "Gracefully", "Never"})
V1_15_TO_V1_18 = V1_19 | {"Immediately", "Graciously"}
V1_12_TO_V1_14 = frozenset({"Immediately", "Graciously", "Never"})


@pytest.mark.parametrize(
    ("enum", "configured", "written"),
    [
        (V1_19, "legacy", "new"),
        (V1_19, "new", "new"),
        (V1_12_TO_V1_14, "new", "legacy"),
        (V1_12_TO_V1_14, "legacy", "legacy"),
        (V1_15_TO_V1_18, "legacy", "legacy"),
        (V1_15_TO_V1_18, "new", "new"),
        (None, "legacy", "legacy"),
        (frozenset(), "new", "new"),
    ],
)
def test_the_loop_writes_what_the_installed_crd_accepts(enum: Any, configured: Any, written: str) -> None:
    assert spelling_to_write(enum, configured) == written


def test_karmada_v1_19s_binding_crd_forces_the_new_names() -> None:
    crd = yaml.safe_load((karmada_crd_dir() / "work" / "work.karmada.io_resourcebindings.yaml").read_text())

    assert crd_purge_mode_enum(crd) == V1_19
    assert spelling_to_write(crd_purge_mode_enum(crd), "legacy") == "new"


def test_a_crd_without_the_field_has_no_enum() -> None:
    crd = copy.deepcopy({"spec": {"versions": [{"name": "v1", "storage": True, "schema": {"openAPIV3Schema": {}}}]}})

    assert crd_purge_mode_enum(crd) is None
    assert crd_purge_mode_enum({"spec": "x"}) is None
