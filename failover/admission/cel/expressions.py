"""Pieces of CEL shared by the policy and WorkloadRebalancer rules: literals, label keys, placements.

Each function returns CEL source for an expression over the CEL source it is given, and mirrors one Python reader,
named in its docstring, message for message. The expressions run in the apiserver's CEL environment of Kubernetes 1.34
or later: two-variable comprehensions (`transformList`, `exists(i, v, ...)`, 1.32) and `flatten`/`distinct` (CEL
lists library version 3, 1.34), optional fields (`?.`, `orValue`).
"""

from __future__ import annotations

import json

from failover.core.labels import LABEL_NAME_PATTERN, MAX_NAME_LENGTH, MAX_PREFIX_LENGTH, SHOWN_KEY_PATTERN
from failover.core.names import DNS_SUBDOMAIN_PATTERN


def literal(value: str) -> str:
    """A CEL string literal of `value` (JSON's escapes are CEL's)."""
    return json.dumps(value)


def strings(*values: str) -> str:
    """A CEL list literal of strings."""
    return "[" + ", ".join(literal(value) for value in values) + "]"


def when(condition: str, message: str) -> str:
    """A list holding `message` (CEL for a string) when `condition` holds, else empty."""
    return f"({condition} ? [{message}] : [])"


def _anchored(pattern: str) -> str:
    """A Python pattern without anchors, for CEL's `matches` (RE2, which finds a match anywhere)."""
    return literal("^" + pattern + "$")


def label_key_problem(key: str) -> str:
    """The first reason `key` (CEL for a string) is not a label key, or ""; failover.core.labels.label_key_problems."""
    parts = f"{key}.split('/')"
    prefix = f"{parts}[0]"
    name = f"({key}.contains('/') ? {parts}[1] : {key})"
    checks = (
        (f"{key} == ''", "must be a non-empty string"),
        (f"size({parts}) > 2", "must contain at most one '/', as in example.com/name"),
        (f"{key}.contains('/') && {prefix} == ''", "prefix before '/' must not be empty"),
        (
            f"{key}.contains('/') && size({prefix}) > {MAX_PREFIX_LENGTH}",
            f"prefix must be at most {MAX_PREFIX_LENGTH} characters",
        ),
        (
            f"{key}.contains('/') && !{prefix}.matches({_anchored(DNS_SUBDOMAIN_PATTERN)})",
            "prefix must be a lowercase DNS subdomain such as example.com",
        ),
        (f"{name} == ''", "name part must not be empty"),
        (f"size({name}) > {MAX_NAME_LENGTH}", f"name part must be at most {MAX_NAME_LENGTH} characters"),
        (
            f"!{name}.matches({_anchored(LABEL_NAME_PATTERN)})",
            "name part must be alphanumerics, '-', '_' or '.', starting and ending alphanumeric",
        ),
    )
    expression = "''"
    for condition, problem in reversed(checks):
        expression = f"({condition} ? {literal(problem)} : {expression})"
    return expression


def shown_label_key(key: str) -> str:
    """How a message names a refused label key; failover.core.labels.shown_label_key."""
    head = f"({key}.size() > {MAX_NAME_LENGTH} ? {key}.substring(0, {MAX_NAME_LENGTH}) : {key})"
    return f"({head}.matches({literal(SHOWN_KEY_PATTERN)}) ? \"'\" + {head} + \"'\" : 'the key')"


def api_group(api_version: str) -> str:
    """The group of an apiVersion: before its last '/', or "" for the core group."""
    return f"({api_version}.contains('/') ? {api_version}.substring(0, {api_version}.lastIndexOf('/')) : '')"


# -- placements: failover/core/placement.py, read from `object.spec.placement` -----------------------------------------

PLACEMENT = "object.spec.?placement"
AFFINITY = "object.spec.placement.clusterAffinity"
HAS_AFFINITY = "(has(object.spec.placement) && has(object.spec.placement.clusterAffinity))"
TERMS = f"{PLACEMENT}.?clusterAffinities.orValue([])"
SPREAD = f"{PLACEMENT}.?spreadConstraints.orValue([])"


def _names(affinity: str) -> str:
    """`clusterNames` minus `exclude`, as a list (affinity_clusters; a list, as clusters_by_name_only keeps it)."""
    return f"{affinity}.?clusterNames.orValue([]).filter(n, !(n in {affinity}.?exclude.orValue([])))"


def _bounded(affinity: str) -> str:
    """Whether an affinity names its clusters (affinity_clusters is not None)."""
    return f"(size({affinity}.?clusterNames.orValue([])) > 0)"


def _term_bounded(term: str) -> str:
    """term_clusters is not None: the term and each of its overflow affinities name clusters."""
    return f"({_bounded(term)} && {term}.?overflowAffinities.orValue([]).all(o, {_bounded('o')}))"


def _term_names(term: str) -> str:
    """term_clusters, as a list that may repeat a name."""
    return f"({_names(term)} + {term}.?overflowAffinities.orValue([]).map(o, {_names('o')}).flatten())"


def _spread_field(constraint: str) -> str:
    """The field a spread constraint spreads by after Karmada's defaulting, "" for a label (_spread_field)."""
    return (
        f"({constraint}.?spreadByField.orValue('') != '' ? {constraint}.spreadByField : "
        f"({constraint}.?spreadByLabel.orValue('') == '' ? 'cluster' : ''))"
    )


def _ignores_spread_constraints() -> str:
    """Static weighted division (_ignores_spread_constraints)."""
    scheduling = "object.spec.placement.replicaScheduling"
    weights = f"{scheduling}.weightPreference"
    return (
        "(has(object.spec.placement) && has(object.spec.placement.replicaScheduling)"
        f" && {scheduling}.?replicaSchedulingType.orValue('') == 'Divided'"
        f" && {scheduling}.?replicaDivisionPreference.orValue('') in ['', 'Weighted']"
        f" && (!has({weights}) || (size({weights}.?staticWeightList.orValue([])) > 0"
        f" && {weights}.?dynamicWeight.orValue('') == '')))"
    )


def _first_spread(field: str) -> str:
    return f"{SPREAD}.filter(c, {_spread_field('c')} == '{field}')"


def spread_picks_one_cluster() -> str:
    """failover.core.placement.spread_picks_one_cluster of the object's placement."""
    cluster, region = _first_spread("cluster"), _first_spread("region")
    return (
        f"(!{_ignores_spread_constraints()} && size({cluster}) > 0 && {cluster}[0].?maxGroups.orValue(0) == 1"
        f" && (size({region}) == 0 || {region}[0].?minGroups.orValue(1) <= 1))"
    )


def placement_is_single_cluster() -> str:
    """failover.core.placement.placement_is_single_cluster of the object's placement."""
    by_affinity = (
        f"({HAS_AFFINITY} ? ({_bounded(AFFINITY)} && size({_names(AFFINITY)}.distinct()) <= 1)"
        f" : (size({TERMS}) > 0 && {TERMS}.all(t, {_term_bounded('t')} && size({_term_names('t')}.distinct()) <= 1)))"
    )
    return f"({spread_picks_one_cluster()} || {by_affinity})"


def placement_names_every_cluster() -> str:
    """failover.core.placement.placement_clusters is not None."""
    return f"({HAS_AFFINITY} ? {_bounded(AFFINITY)} : (size({TERMS}) > 0 && {TERMS}.all(t, {_term_bounded('t')})))"


def placement_clusters() -> str:
    """failover.core.placement.placement_clusters, as a list of distinct names (when it is not None)."""
    return f"({HAS_AFFINITY} ? {_names(AFFINITY)}.distinct() : {TERMS}.map(t, {_term_names('t')}).flatten().distinct())"


def clusters_by_name_only_unknown() -> str:
    """failover.core.placement.clusters_by_name_only of `clusterAffinity` is None (a selector narrows the names, or
    none are named; the singular affinity has no overflow affinities)."""
    selector, fields = f"{AFFINITY}.?labelSelector", f"{AFFINITY}.?fieldSelector"
    narrows = (
        f"size({selector}.?matchLabels.orValue({{}})) > 0 || size({selector}.?matchExpressions.orValue([])) > 0"
        f" || size({fields}.?matchExpressions.orValue([])) > 0"
    )
    return f"(!{HAS_AFFINITY} || {narrows} || !{_bounded(AFFINITY)})"


def clusters_by_name_only_count() -> str:
    """len(clusters_by_name_only(clusterAffinity)), when it is not None."""
    return f"size({_names(AFFINITY)})"
