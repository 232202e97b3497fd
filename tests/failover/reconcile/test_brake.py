"""The brake on cluster failover (failover/reconcile/brake.py): on when the control plane more likely lost the
clusters than they died, off by itself or by an operator's word per cluster."""

from __future__ import annotations

from typing import Any

import pytest

from failover.reconcile.brake import BRAKE_RELEASED_ANNOTATION, brake
from tests.failover.binding_builders import stamp
from tests.failover.work_builders import cluster

THRESHOLD = 0.55


def members(ready: int, not_ready: int, **annotations: dict[str, str]) -> dict[str, dict[str, Any]]:
    names = [f"member{index}" for index in range(1, ready + not_ready + 1)]
    return {
        name: cluster(name, index >= not_ready, 100, annotations=annotations.get(name))
        for index, name in enumerate(names)
    }


@pytest.mark.parametrize(
    ("ready", "not_ready", "engaged"),
    [
        (2, 1, False),  # one dead member of three
        (1, 1, False),  # one of two: 0.5, under the threshold
        (0, 1, False),  # a single member, dead: never braked
        (19, 1, False),
        (1, 2, True),  # two of three together: the control plane's partition
        (0, 3, True),
        (4, 5, True),  # 5/9 = 0.556
        (5, 4, False),  # 4/9 = 0.444
        (0, 0, False),
    ],
)
def test_the_brake_is_on_from_two_not_ready_clusters_making_the_threshold(
    ready: int, not_ready: int, engaged: bool
) -> None:
    found = brake(members(ready, not_ready), THRESHOLD)
    assert found.engaged is engaged
    assert len(found.not_ready) == not_ready
    assert all(found.holds(name) is engaged for name in found.not_ready)


def test_an_unknown_or_missing_ready_condition_counts_as_not_ready() -> None:
    clusters = members(1, 0)
    clusters["member2"] = cluster("member2", "Unknown", 100)
    clusters["member3"] = {"metadata": {"name": "member3"}}
    assert brake(clusters, THRESHOLD).not_ready == ("member2", "member3")


def test_an_operator_releases_one_cluster_for_its_current_outage_only() -> None:
    released = {BRAKE_RELEASED_ANNOTATION: stamp(200)}
    found = brake(members(1, 2, member1=released), THRESHOLD)
    assert found.engaged and found.released == ("member1",)
    assert not found.holds("member1") and found.holds("member2")
    assert "released by an operator: member1" in found.message()
    before_outage = {BRAKE_RELEASED_ANNOTATION: stamp(50)}  # the outage began at 100 s: this word was for another
    assert brake(members(1, 2, member1=before_outage), THRESHOLD).holds("member1")
    garbage = {BRAKE_RELEASED_ANNOTATION: "yes"}
    assert brake(members(1, 2, member1=garbage), THRESHOLD).holds("member1")


def test_the_message_names_the_clusters_and_the_way_out() -> None:
    message = brake(members(1, 2), THRESHOLD).message()
    assert message.startswith("cluster failover braked: 2 of 3 clusters not Ready (member1, member2)")
    assert BRAKE_RELEASED_ANNOTATION in message
    assert brake(members(2, 1), THRESHOLD).message().startswith("cluster failover runs: 1 of 3")
