"""The placement reader: which clusters a placement can pick, and whether only one at a time (Karmada v1.19 rules).

Each test cites the Karmada source it follows; failover/core/placement.py has the rules in full.
"""

from __future__ import annotations

import pytest

from failover.core.placement import (
    affinity_clusters,
    clusters_by_name_only,
    placement_clusters,
    placement_is_single_cluster,
    spread_picks_one_cluster,
)
from tests.failover.karmada_examples import DOC_FLINK_STATE_PRESERVATION, load

ONE_CLUSTER_SPREAD = [{"spreadByField": "cluster", "maxGroups": 1}]


# --- The documented cases ---------------------------------------------------------------------------------------


def test_the_documented_flink_placement_picks_one_of_three_clusters():
    """The guide's `spreadConstraints: [{spreadByField: cluster, maxGroups: 1}]`: `selectBestClustersByCluster`
    takes min(feasible clusters, maxGroups); the affinity still names three to fail over between."""
    placement = load(DOC_FLINK_STATE_PRESERVATION)["spec"]["placement"]

    assert placement_is_single_cluster(placement)
    assert placement_clusters(placement) == {"member1", "member2", "member3"}


def test_ordered_affinities_naming_one_cluster_each_are_single_but_can_fail_over():
    """The scheduler is on one `clusterAffinities` term at a time and moves to the next when it cannot schedule
    (`scheduleResourceBindingWithClusterAffinities`): one cluster at once, both over time."""
    placement = {
        "clusterAffinities": [
            {"affinityName": "primary", "clusterNames": ["member1"]},
            {"affinityName": "backup", "clusterNames": ["member2"]},
        ]
    }

    assert placement_is_single_cluster(placement)
    assert placement_clusters(placement) == {"member1", "member2"}


@pytest.mark.parametrize("placement", [None, {}, [], {"clusterAffinities": []}])
def test_no_placement_can_pick_every_cluster(placement):
    """No affinity filters nothing (`cluster_affinity.go` `Filter`: no affinities, every cluster matches) and no
    spread constraint selects every feasible cluster (`SelectBestClusters`)."""
    assert not placement_is_single_cluster(placement)
    assert placement_clusters(placement) is None


# --- The five inputs the two old readers disagreed on -----------------------------------------------------------


def test_max_groups_true_is_no_max_groups():
    """The CRD declares maxGroups `type: integer` and the schema refuses a boolean for it (kube-openapi
    `validate/type.go`), so `true` never reaches the scheduler and is not read as 1."""
    assert not spread_picks_one_cluster({"spreadConstraints": [{"spreadByField": "cluster", "maxGroups": True}]})
    assert not placement_is_single_cluster({"spreadConstraints": [{"spreadByField": "cluster", "maxGroups": True}]})


def test_max_groups_one_point_zero_is_one():
    """The apiserver decodes `1.0` as a float, the schema accepts a whole float for an integer (`isFloatInt`) and
    Go writes it back as `1`: Karmada's scheduler sees maxGroups 1."""
    assert placement_is_single_cluster({"spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 1.0}]})
    assert not placement_is_single_cluster({"spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 1.5}]})


def test_an_empty_spread_by_field_spreads_by_cluster():
    """`SetDefaultSpreadConstraints` sets `cluster` when `len(SpreadByField) == 0` and there is no spreadByLabel;
    Karmada's mutating webhook runs before the CRD enum could refuse `""`."""
    assert placement_is_single_cluster({"spreadConstraints": [{"spreadByField": "", "maxGroups": 1}]})
    assert not placement_is_single_cluster({"spreadConstraints": [{"spreadByLabel": "zone", "maxGroups": 1}]})


def test_one_cluster_name_with_a_label_selector_is_that_cluster_at_most():
    """`ClusterMatches` ANDs exclude, labelSelector, fieldSelector and clusterNames: a selector only narrows."""
    placement = {"clusterAffinity": {"clusterNames": ["member1"], "labelSelector": {"matchLabels": {"tier": "gold"}}}}

    assert placement_is_single_cluster(placement)
    assert placement_clusters(placement) == {"member1"}


def test_two_cluster_names_with_one_excluded_is_the_other():
    """`ClusterMatches` refuses a cluster in `exclude` before anything else."""
    placement = {"clusterAffinity": {"clusterNames": ["member1", "member2"], "exclude": ["member2"]}}

    assert placement_is_single_cluster(placement)
    assert placement_clusters(placement) == {"member1"}


# --- Affinities ---------------------------------------------------------------------------------------------------


def test_a_label_selector_alone_is_unbounded():
    """Without clusterNames `ClusterNamesMatches` matches every name; only the Cluster objects say which match."""
    placement = {"clusterAffinity": {"labelSelector": {"matchLabels": {"tier": "gold"}}}}

    assert not placement_is_single_cluster(placement)
    assert placement_clusters(placement) is None


def test_one_unbounded_affinity_term_makes_the_placement_unbounded():
    placement = {
        "clusterAffinities": [
            {"affinityName": "primary", "clusterNames": ["member1"]},
            {
                "affinityName": "rest",
                "fieldSelector": {"matchExpressions": [{"key": "region", "operator": "In", "values": ["eu"]}]},
            },
        ]
    }

    assert not placement_is_single_cluster(placement)
    assert placement_clusters(placement) is None


def test_overflow_affinities_add_their_clusters_to_the_term():
    """`Filter` matches a workload's term together with its `overflowAffinities`."""
    burst = {"affinityName": "burst", "clusterNames": ["member2"]}
    placement = {
        "clusterAffinities": [{"affinityName": "primary", "clusterNames": ["member1"], "overflowAffinities": [burst]}]
    }

    assert not placement_is_single_cluster(placement)
    assert placement_clusters(placement) == {"member1", "member2"}


def test_cluster_affinity_wins_over_cluster_affinities():
    """`Filter` reads `clusterAffinity` whenever it is set (Karmada's validation refuses both anyway)."""
    placement = {
        "clusterAffinity": {"clusterNames": ["member1"]},
        "clusterAffinities": [{"affinityName": "a", "clusterNames": ["member2", "member3"]}],
    }

    assert placement_clusters(placement) == {"member1"}


def test_names_decide_alone_only_without_narrowing_selectors():
    """Failback predicts the scheduler's choice from names only; a selector that can leave a name out, or overflow
    groups that add clusters, make it unknown. An empty selector matches every cluster (`labels.Everything()`)."""
    assert clusters_by_name_only({"clusterNames": ["b", "a", "c"], "exclude": ["c"]}) == ["b", "a"]
    assert clusters_by_name_only({"clusterNames": ["a"], "labelSelector": {}}) == ["a"]
    assert clusters_by_name_only({"clusterNames": ["a"], "labelSelector": {"matchLabels": {"x": "y"}}}) is None
    assert clusters_by_name_only({"clusterNames": ["a"], "fieldSelector": {"matchExpressions": [{}]}}) is None
    assert clusters_by_name_only({"labelSelector": {}}) is None
    assert affinity_clusters({"clusterNames": ["a", 1]}) is None  # not storable: the CRD wants strings


# --- Spread constraints -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "constraints",
    [
        pytest.param([{"spreadByField": "cluster", "maxGroups": 2}], id="max-groups-2"),
        pytest.param([{"spreadByField": "cluster"}], id="no-max-groups"),
        pytest.param([{"spreadByField": "region", "maxGroups": 1}], id="region-only"),
        pytest.param([{"spreadByField": "cluster", "maxGroups": "1"}], id="max-groups-string"),
        pytest.param({"spreadByField": "cluster", "maxGroups": 1}, id="not-a-list"),
    ],
)
def test_spread_constraints_that_do_not_cap_the_clusters_at_one(constraints):
    """Only the cluster constraint's maxGroups caps the clusters (`selectBestClustersByCluster`)."""
    assert not spread_picks_one_cluster({"spreadConstraints": constraints})


def test_a_region_constraint_picks_one_cluster_per_region():
    """`selectBestClustersByRegion` takes a cluster of every selected region before the cluster maxGroups cut, and
    `findFeasiblePaths` selects at least the region's minGroups (default 1)."""
    one_region = [{"spreadByField": "region", "maxGroups": 2}, {"spreadByField": "cluster", "maxGroups": 1}]
    two_regions = [
        {"spreadByField": "region", "minGroups": 2, "maxGroups": 2},
        {"spreadByField": "cluster", "maxGroups": 1},
    ]

    assert spread_picks_one_cluster({"spreadConstraints": one_region})
    assert not spread_picks_one_cluster({"spreadConstraints": two_regions})


@pytest.mark.parametrize(
    "scheduling",
    [
        {"replicaSchedulingType": "Divided"},
        {
            "replicaSchedulingType": "Divided",
            "replicaDivisionPreference": "Weighted",
            "weightPreference": {"staticWeightList": [{"targetCluster": {"clusterNames": ["member1"]}, "weight": 1}]},
        },
    ],
)
def test_static_weighted_division_ignores_the_spread_constraints(scheduling):
    """`shouldIgnoreSpreadConstraint`; a Divided placement without a preference is made Weighted by Karmada's
    webhook (`SetReplicaDivisionPreferenceWeighted`)."""
    assert not placement_is_single_cluster({"spreadConstraints": ONE_CLUSTER_SPREAD, "replicaScheduling": scheduling})


@pytest.mark.parametrize(
    "scheduling",
    [
        {"replicaSchedulingType": "Duplicated"},
        {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"},
        {"replicaSchedulingType": "Divided", "weightPreference": {"dynamicWeight": "AvailableReplicas"}},
    ],
)
def test_other_replica_scheduling_keeps_the_spread_constraints(scheduling):
    assert placement_is_single_cluster({"spreadConstraints": ONE_CLUSTER_SPREAD, "replicaScheduling": scheduling})
