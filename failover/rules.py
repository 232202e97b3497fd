"""Which rules apply to which kind: the one table shared by the webhook and the offline `check`."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from failover.api import CLUSTER_PROPAGATION_POLICY, PROPAGATION_POLICY, WORKLOAD_REBALANCER, GroupKind
from failover.policy import default_policy, validate_policy
from failover.rebalancer_rules import validate_rebalancer
from failover.verdict import Verdict

Validator = Callable[[Mapping[str, Any]], Verdict]
Defaulter = Callable[[Mapping[str, Any]], tuple[dict[str, Any], ...]]

VALIDATORS: Mapping[GroupKind, Validator] = {
    PROPAGATION_POLICY: validate_policy,
    CLUSTER_PROPAGATION_POLICY: validate_policy,
    WORKLOAD_REBALANCER: validate_rebalancer,
}

DEFAULTERS: Mapping[GroupKind, Defaulter] = {
    PROPAGATION_POLICY: default_policy,
    CLUSTER_PROPAGATION_POLICY: default_policy,
}


def _default_policy_legacy(policy: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
    return default_policy(policy, legacy_purge_modes=True)


# For Karmada v1.12-v1.14, whose CRDs know only the legacy purge-mode names (`purgeModeSpelling: legacy`).
LEGACY_DEFAULTERS: Mapping[GroupKind, Defaulter] = {
    PROPAGATION_POLICY: _default_policy_legacy,
    CLUSTER_PROPAGATION_POLICY: _default_policy_legacy,
}


def defaulters_for(purge_mode_spelling: str) -> Mapping[GroupKind, Defaulter]:
    """The defaulters that write purge modes in `purge_mode_spelling` ("new" or "legacy")."""
    return LEGACY_DEFAULTERS if purge_mode_spelling == "legacy" else DEFAULTERS


def group_kind_of(api_version: str, kind: str) -> GroupKind:
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    return GroupKind(group, kind)
