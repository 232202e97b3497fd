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


def group_kind_of(api_version: str, kind: str) -> GroupKind:
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    return GroupKind(group, kind)
