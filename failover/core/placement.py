"""How many clusters a placement can pick: read from `spec.placement` as Karmada's scheduler reads it."""

from __future__ import annotations

from typing import Any


def placement_is_single_cluster(placement: Any) -> bool:
    """A cluster spread constraint with maxGroups 1, or every cluster affinity naming exactly one cluster (Karmada's
    mutating webhook fills in `spreadByField: cluster` for a constraint with neither field)."""
    if not isinstance(placement, dict):
        return False
    constraints = placement.get("spreadConstraints")
    for constraint in constraints if isinstance(constraints, list) else ():
        if (isinstance(constraint, dict) and constraint.get("maxGroups") == 1
                and constraint.get("spreadByField", "cluster" if not constraint.get("spreadByLabel") else None)
                == "cluster"):
            return True
    terms = [placement.get("clusterAffinity")] if placement.get("clusterAffinity") else []
    affinities = placement.get("clusterAffinities")
    terms += affinities if isinstance(affinities, list) else []
    return bool(terms) and all(len(cluster_names(term) or ()) == 1 for term in terms)


def cluster_names(term: Any) -> list[str] | None:
    """The clusterNames of an affinity term, None when it also (or only) selects by label or field."""
    if not isinstance(term, dict) or term.get("labelSelector") or term.get("fieldSelector"):
        return None
    names = term.get("clusterNames")
    if not isinstance(names, list) or not names:
        return None
    excluded = term.get("exclude") if isinstance(term.get("exclude"), list) else []
    return [n for n in names if isinstance(n, str) and n not in excluded]
