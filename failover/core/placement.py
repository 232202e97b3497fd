"""How many clusters a placement can pick: read from `spec.placement` as Karmada v1.19's scheduler reads it.

The one reader of "can this placement pick only one cluster?", for the statePreservation warning (Karmada injects
preserved state only for a single target cluster), the karmada#5803 warning (a placement naming one
cluster has nowhere to fail over to) and failback (`failover/moves/failback.py` `failback_route`).

Two ways bound a placement, and Karmada applies both:

- cluster affinity, a filter (`pkg/scheduler/framework/plugins/clusteraffinity/cluster_affinity.go` `Filter`):
  `clusterAffinity` when set, otherwise the one `clusterAffinities` term the scheduler is on (it tries them in order,
  `pkg/scheduler/scheduler.go` `scheduleResourceBindingWithClusterAffinities`) together with that term's
  `overflowAffinities`. A cluster matches an affinity when it is not in `exclude` AND matches the labelSelector AND
  the fieldSelector AND is one of `clusterNames` (`pkg/util/selector.go` `ClusterMatches`; an empty clusterNames
  matches every name). Selectors only ever narrow the named clusters, so `clusterNames` minus `exclude` bounds an
  affinity; without clusterNames it is unbounded.
- the spread constraints, which cut the filtered clusters down (`pkg/scheduler/core/spreadconstraint/`).

Objects arrive as JSON, from the apiserver (Karmada's mutating webhook and the CRD schema already applied) or from
files for `check`; both are read as the apiserver would store them (`_integer`, `_spread_by_cluster`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SPREAD_BY_CLUSTER = "cluster"
SPREAD_BY_REGION = "region"


def placement_is_single_cluster(placement: Any) -> bool:
    """Whether the scheduler can only ever put the workload on one cluster at a time.

    True when the spread constraints pick one cluster (`spread_picks_one_cluster`), or when every affinity the
    scheduler may be on bounds it to at most one cluster (`affinity_terms`, `term_clusters`): a `clusterAffinity`
    naming one cluster, or ordered `clusterAffinities` each naming one (the scheduler is on one term at a time).
    """
    if spread_picks_one_cluster(placement):
        return True
    terms = affinity_terms(placement)
    return bool(terms) and all((names := term_clusters(term)) is not None and len(names) <= 1 for term in terms)


def placement_clusters(placement: Any) -> frozenset[str] | None:
    """Every cluster the placement can ever pick, when its affinities name them all; None when unbounded: no
    affinity at all, or an affinity (or overflow affinity) without clusterNames.

    Ordered `clusterAffinities` count together: the scheduler moves on to the next term when one cannot be scheduled
    (`scheduleResourceBindingWithClusterAffinities`), so every term's clusters can be picked.
    """
    terms = affinity_terms(placement)
    if not terms:
        return None
    clusters: set[str] = set()
    for term in terms:
        names = term_clusters(term)
        if names is None:
            return None
        clusters |= names
    return frozenset(clusters)


def affinity_terms(placement: Any) -> list[Mapping[str, Any]]:
    """The affinities the scheduler filters by, one per scheduling attempt: `[clusterAffinity]` when it is set
    (even empty: `Filter` checks `ClusterAffinity != nil`), else the `clusterAffinities` terms in order; [] when
    neither is (every cluster). Karmada refuses a placement with both (`pkg/util/validation/validation.go`
    `ValidatePlacement`)."""
    if not isinstance(placement, dict):
        return []
    if isinstance(placement.get("clusterAffinity"), dict):
        return [placement["clusterAffinity"]]
    terms = placement.get("clusterAffinities")
    return [term for term in terms if isinstance(term, dict)] if isinstance(terms, list) else []


def term_clusters(term: Mapping[str, Any]) -> frozenset[str] | None:
    """The clusters one affinity term can match, with its `overflowAffinities` (the scheduler filters by the term
    and its overflow groups together, `cluster_affinity.go` `Filter`); None when any of them names no cluster."""
    clusters = affinity_clusters(term)
    overflows = term.get("overflowAffinities")
    for overflow in overflows if isinstance(overflows, list) else ():
        names = affinity_clusters(overflow)
        if clusters is None or names is None:
            return None
        clusters |= names
    return clusters


def affinity_clusters(affinity: Any) -> frozenset[str] | None:
    """`clusterNames` minus `exclude`: every cluster a ClusterAffinity can match whatever its label and field
    selectors say, which only narrow it (`ClusterMatches`); None when it names no cluster (it matches every name).

    A `clusterNames` that is not a list of names cannot be stored (the CRD schema: an array of strings) and is read
    as unbounded; an `exclude` that is not a list excludes nothing. Both err toward more clusters.
    """
    if not isinstance(affinity, dict):
        return None
    names = affinity.get("clusterNames")
    if not isinstance(names, list) or not names or not all(isinstance(name, str) for name in names):
        return None
    exclude = affinity.get("exclude")
    excluded = exclude if isinstance(exclude, list) else []
    return frozenset(name for name in names if name not in excluded)


def clusters_by_name_only(affinity: Any) -> list[str] | None:
    """The clusters a ClusterAffinity picks among when its names alone decide: `clusterNames` minus `exclude`, in
    order. None when it names none, when a label or field selector narrows the names (which of them match is known
    only from the Cluster objects), or when overflow affinities add clusters."""
    if not isinstance(affinity, dict) or affinity.get("overflowAffinities"):
        return None
    if _narrows(affinity.get("labelSelector"), "matchLabels", "matchExpressions") or _narrows(
        affinity.get("fieldSelector"), "matchExpressions"
    ):
        return None
    if affinity_clusters(affinity) is None:
        return None
    exclude = affinity.get("exclude")
    excluded = exclude if isinstance(exclude, list) else []
    return [name for name in affinity["clusterNames"] if name not in excluded]


def spread_picks_one_cluster(placement: Any) -> bool:
    """Whether the spread constraints let the scheduler pick one cluster only
    (`pkg/scheduler/core/spreadconstraint/select_clusters.go` `SelectBestClusters`).

    - Static weighted division ignores the spread constraints (`shouldIgnoreSpreadConstraint`: Divided, preference
      Weighted, and no weightPreference or a staticWeightList without dynamicWeight); Karmada's mutating webhook
      makes a Divided placement without a preference Weighted (`pkg/util/helper/policy.go`
      `SetReplicaDivisionPreferenceWeighted`).
    - A constraint with neither spreadByField nor spreadByLabel spreads by cluster: the mutating webhook fills in
      `spreadByField: cluster` (`SetDefaultSpreadConstraints`, `len(SpreadByField) == 0`, so `""` too; mutating
      webhooks run before the CRD schema, whose enum would refuse `""`).
    - The cluster constraint's maxGroups caps the clusters (`select_clusters_by_cluster.go`
      `selectBestClustersByCluster`: `min(total, MaxGroups)`). With a region constraint the scheduler takes one
      cluster from each selected region first (`select_clusters_by_region.go` `selectBestClustersByRegion`), and
      selects the fewest regions that hold the cluster constraint's minGroups, but at least the region's minGroups
      (`select_groups.go` `findFeasiblePaths`): one cluster only when that minGroups is at most 1.
    """
    if not isinstance(placement, dict) or _ignores_spread_constraints(placement.get("replicaScheduling")):
        return False
    constraints = placement.get("spreadConstraints")
    by_field: dict[str, Mapping[str, Any]] = {}
    for constraint in constraints if isinstance(constraints, list) else ():
        if isinstance(constraint, dict):
            field = _spread_field(constraint)
            if field is not None:
                by_field.setdefault(field, constraint)  # Karmada refuses two constraints on one field
    cluster = by_field.get(SPREAD_BY_CLUSTER)
    if cluster is None or _integer(cluster.get("maxGroups")) != 1:
        return False
    region = by_field.get(SPREAD_BY_REGION)
    # An unset minGroups is 1 (`SetDefaultSpreadConstraints`); a zero one selects a single region all the same.
    return region is None or (_integer(region.get("minGroups")) or 1) <= 1


def _spread_field(constraint: Mapping[str, Any]) -> str | None:
    """The field a constraint spreads by, after Karmada's defaulting; None when it spreads by label (or by a value
    no stored object can hold)."""
    field, label = constraint.get("spreadByField"), constraint.get("spreadByLabel")
    if field in (None, ""):
        return SPREAD_BY_CLUSTER if label in (None, "") else None
    return field if isinstance(field, str) else None


def _ignores_spread_constraints(scheduling: Any) -> bool:
    """`shouldIgnoreSpreadConstraint`: static weighted division (after `SetReplicaDivisionPreferenceWeighted`)."""
    if not isinstance(scheduling, dict) or scheduling.get("replicaSchedulingType") != "Divided":
        return False
    if scheduling.get("replicaDivisionPreference") not in (None, "", "Weighted"):
        return False
    weights = scheduling.get("weightPreference")
    return not isinstance(weights, dict) or (bool(weights.get("staticWeightList")) and not weights.get("dynamicWeight"))


def _integer(value: Any) -> int | None:
    """A JSON number as the apiserver stores it in an `integer` field (maxGroups, minGroups: Go `int`); None for
    anything else.

    `true` is not a number: the CRD schema refuses a boolean for `type: integer` (kube-openapi
    `pkg/validation/validate/type.go`: a bool is of type boolean), so it never reaches the scheduler, and it is
    never read as 1 here. `1.0` is 1: the apiserver decodes it as the float 1, the schema accepts a float that is a
    whole number for an integer (`isFloatInt`, same file), and Go writes the float 1 back as `1`, so Karmada's
    webhook and scheduler see the integer 1 (the same rule as `failover/admission/schema.py` `_is_integer`).
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _narrows(selector: Any, *keys: str) -> bool:
    """Whether a label or field selector can leave out a cluster: an empty one matches every cluster
    (`metav1.LabelSelectorAsSelector` of `{}` is `labels.Everything()`)."""
    if selector is None:
        return False
    return not isinstance(selector, dict) or any(selector.get(key) for key in keys)
