"""The (Cluster)PropagationPolicy rules of failover/admission/policy.py and failover_warnings.py, as CEL.

Every message is built as the Python rule builds it, so the policy's denial and warnings read as the webhook's. The
apiserver runs these after its mutating admission (the CRD defaults, `POLICY_DEFAULTS` or the relay's `/mutate`)
and after the CRD schema, so the object has the schema's types, a `decisionConditions` and both purge modes; what
the schema refuses first, and the rules CEL cannot decide, are named in failover/admission/cel/forms.py.
"""

from __future__ import annotations

from failover.admission.cel.checks import CelMutation, CelValidation
from failover.admission.cel.expressions import (
    api_group,
    clusters_by_name_only_count,
    clusters_by_name_only_unknown,
    label_key_problem,
    literal,
    placement_clusters,
    placement_is_single_cluster,
    placement_names_every_cluster,
    shown_label_key,
    strings,
    when,
)
from failover.admission.failover_warnings import NO_HEALTH_INTERPRETATION
from failover.admission.policy import APPLICATION, CLUSTER
from failover.core.api import (
    DEFAULT_GRACE_PERIOD_SECONDS,
    DEFAULT_PURGE_MODE,
    DEFAULT_TOLERATION_SECONDS,
    FAILBACK_ANNOTATION,
    PurgeMode,
)

APP = "object.spec.failover.application"
CLU = "object.spec.failover.cluster"
HAS_APPLICATION = "(has(object.spec.failover) && has(object.spec.failover.application))"
HAS_CLUSTER = "(has(object.spec.failover) && has(object.spec.failover.cluster))"
DEFAULT_MODE = literal(DEFAULT_PURGE_MODE.value)


def _state_preservation_denials(section: str, path: str, purge_mode: str) -> str:
    """policy.py `_validate_state_preservation` and `_validate_rule`, but the jsonPath (client-go's parser)."""
    sp_path = f"{path}.statePreservation"
    rules = f"{section}.statePreservation.rules"
    alias = "r.aliasLabelName"
    problem = label_key_problem(alias)
    duplicate = f"{rules}.exists(j, s, j < i && s.aliasLabelName == {alias})"
    message = (
        f"{literal(sp_path + '.rules[')} + string(i) + '].aliasLabelName: ' + ({problem} != ''"
        f" ? {shown_label_key(alias)} + ' is not a valid label key: ' + {problem}"
        f' : "\'" + {alias} + "\' is used by another rule; label keys must be unique")'
    )
    needs_directly = when(
        f"{purge_mode} != 'Directly'",
        f"{literal(sp_path + ': needs purgeMode Directly, but it is ')} + {purge_mode}"
        " + ': Karmada would accept it and never inject the preserved state; set purgeMode: Directly'",
    )
    per_rule = (
        f"(size({rules}) == 0 ? {strings(sp_path + '.rules: needs at least one rule of aliasLabelName and jsonPath')}"
        f" : {rules}.transformList(i, r, {problem} != '' || {duplicate}, {message}))"
    )
    return f"(has({section}.statePreservation) ? {needs_directly} + {per_rule} : [])"


def _multi_cluster_warning(section: str, path: str) -> str:
    return when(
        f"has({section}.statePreservation) && size({section}.statePreservation.rules) > 0 && !variables.singleCluster",
        literal(f"{path}.statePreservation: placement may pick >1 cluster; injection needs one: set maxGroups: 1"),
    )


def _application_denials() -> str:
    """policy.py `_validate_application`."""
    toleration = f"{APP}.decisionConditions.tolerationSeconds"
    toleration_path = f"{APPLICATION}.decisionConditions.tolerationSeconds"
    grace, grace_path = f"{APP}.gracePeriodSeconds", f"{APPLICATION}.gracePeriodSeconds"
    mode = "variables.applicationPurgeMode"
    not_positive = when(
        f"{grace} <= 0",
        f"{literal(grace_path + ': must be greater than 0, got ')} + string({grace})"
        f" + {literal(f'; omit it for the default {DEFAULT_GRACE_PERIOD_SECONDS}')}",
    )
    grace_denial = (
        f"(has({grace}) ? ({mode} != 'Gracefully'"
        f" ? [{literal(grace_path + ': only applies to purgeMode Gracefully, not ')} + {mode}"
        f" + '; remove it or set purgeMode: Gracefully'] : {not_positive}) : [])"
    )
    return (
        f"({HAS_APPLICATION} ? "
        + when(
            "!object.spec.?propagateDeps.orValue(false)",
            literal("spec.propagateDeps: must be true when spec.failover.application is set; add propagateDeps: true"),
        )
        + " + "
        + when(
            f"has({APP}.decisionConditions) && has({toleration}) && {toleration} < 0",
            f"{literal(toleration_path + ': must be 0 or more, got ')} + string({toleration})"
            f" + {literal(f'; omit it for the default {DEFAULT_TOLERATION_SECONDS}')}",
        )
        + f" + {grace_denial} + {_state_preservation_denials(APP, APPLICATION, mode)} : [])"
    )


def _warnings() -> str:
    """policy.py's warnings, then failover_warnings.py's, in their order; but those that read a jsonPath."""
    toleration = f"{APP}.decisionConditions.tolerationSeconds"
    health_keys = strings(*sorted(f"{group}/{kind}" for group, kind in NO_HEALTH_INTERPRETATION))
    selectors = "object.spec.resourceSelectors"
    no_health = (
        f"({HAS_APPLICATION} ? {selectors}.filter(s, {api_group('s.apiVersion')} + '/' + s.kind in {health_keys})"
        ".map(s, s.kind + ': Karmada has no health interpretation for it (#7843),"
        " so application failover never starts') : [])"
    )
    tolerates_every = (
        f"{HAS_CLUSTER} && object.spec.?placement.?clusterTolerations.orValue([]).exists(t,"
        " t.?key.orValue('') == '' && t.?operator.orValue('') == 'Exists'"
        " && t.?effect.orValue('') in ['', 'NoExecute'] && !has(t.tolerationSeconds))"
    )
    failback = (
        f"object.metadata.?annotations[?{literal(FAILBACK_ANNOTATION)}].orValue('') == 'true'"
        " && variables.singleCluster && size(object.spec.?placement.?clusterAffinities.orValue([])) == 0"
        f" && ({clusters_by_name_only_unknown()} || {clusters_by_name_only_count()} > 2)"
    )
    parts = (
        f"({HAS_APPLICATION} ? "
        + when(
            f"has({APP}.decisionConditions) && has({toleration}) && {toleration} == 0",
            literal(f"{APPLICATION}.decisionConditions.tolerationSeconds: 0 fails over on the first unhealthy report"),
        )
        + f" + {_multi_cluster_warning(APP, APPLICATION)} : [])",
        f"({HAS_CLUSTER} ? {_multi_cluster_warning(CLU, CLUSTER)} : [])",
        no_health,
        when(
            f"{placement_names_every_cluster()} && size(variables.namedClusters) == 1",
            "'spec.placement names only ' + variables.namedClusters[0]"
            " + ': a failover has no other cluster to go to (#5803)'",
        ),
        when(
            tolerates_every,
            literal(
                "spec.failover.cluster: clusterTolerations tolerate every NoExecute taint, so Karmada never evicts"
            ),
        ),
        when(
            failback,
            literal(
                "failback: with clusterAffinity Karmada breaks the tie by name; only ordered"
                " clusterAffinities always move back"
            ),
        ),
    )
    return "(" + " + ".join(parts) + ").distinct()"


POLICY_VALIDATION = CelValidation(
    variables=(
        ("singleCluster", placement_is_single_cluster()),
        ("namedClusters", placement_clusters()),
        ("applicationPurgeMode", f"({HAS_APPLICATION} ? {APP}.?purgeMode.orValue({DEFAULT_MODE}) : '')"),
        ("clusterPurgeMode", f"({HAS_CLUSTER} ? {CLU}.?purgeMode.orValue({DEFAULT_MODE}) : '')"),
    ),
    denials=(
        f"{_application_denials()} + ({HAS_CLUSTER}"
        f" ? {_state_preservation_denials(CLU, CLUSTER, 'variables.clusterPurgeMode')} : [])"
    ),
    warnings=_warnings(),
)


def _legacy_rewrite(section: str, has_section: str, pointer: str) -> str:
    legacy = (
        "{" + ", ".join(f"{literal(m.value)}: {literal(m.canonical.value)}" for m in PurgeMode if m.is_legacy) + "}"
    )
    return (
        f"({has_section} && {section}.?purgeMode.orValue('') in {legacy}"
        f" ? [JSONPatch{{op: 'replace', path: {literal(pointer)}, value: {legacy}[{section}.purgeMode]}}] : [])"
    )


def _defaults() -> str:
    """policy.py `default_policy` (new purge-mode names) and `mutate_policy`'s rewrite of the legacy ones."""
    base = "/spec/failover/application"
    conditions = f"{APP}.decisionConditions"
    gracefully = strings(*(m.value for m in PurgeMode if m.is_gracefully))
    application = (
        f"({HAS_APPLICATION} ? "
        f"(!has({conditions}) ? [JSONPatch{{op: 'add', path: {literal(base + '/decisionConditions')},"
        f" value: {{'tolerationSeconds': {DEFAULT_TOLERATION_SECONDS}}}}}]"
        f" : (!has({conditions}.tolerationSeconds) ? [JSONPatch{{op: 'add',"
        f" path: {literal(base + '/decisionConditions/tolerationSeconds')}, value: {DEFAULT_TOLERATION_SECONDS}}}]"
        " : []))"
        f" + (!has({APP}.purgeMode) ? [JSONPatch{{op: 'add', path: {literal(base + '/purgeMode')},"
        f" value: {DEFAULT_MODE}}}] : [])"
        f" + ({APP}.?purgeMode.orValue({DEFAULT_MODE}) in {gracefully} && !has({APP}.gracePeriodSeconds)"
        f" ? [JSONPatch{{op: 'add', path: {literal(base + '/gracePeriodSeconds')},"
        f" value: {DEFAULT_GRACE_PERIOD_SECONDS}}}] : [])"
        " : [])"
    )
    cluster = (
        f"({HAS_CLUSTER} && !has({CLU}.purgeMode)"
        f" ? [JSONPatch{{op: 'add', path: '/spec/failover/cluster/purgeMode', value: {DEFAULT_MODE}}}] : [])"
    )
    rewrites = " + ".join(
        (
            _legacy_rewrite(APP, HAS_APPLICATION, "/spec/failover/application/purgeMode"),
            _legacy_rewrite(CLU, HAS_CLUSTER, "/spec/failover/cluster/purgeMode"),
        )
    )
    return f"{application} + {cluster} + {rewrites}"


POLICY_DEFAULTS = CelMutation(variables=(), applies_to="has(object.spec.failover)", patch=_defaults())
