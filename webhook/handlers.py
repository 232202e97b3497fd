"""Routing of admission requests to the rules in `failover/`, by kind and operation.

The handlers translate only: an `AdmissionRequest` in, a `Verdict` out, or None when the request is not ours to
judge (a kind no webhook of `failover.registry.WEBHOOKS` serves, DELETE, CONNECT). The server completes the response.
Every decision is made by a function of `failover/` (validators and defaulters from `failover.registry`) or by a
registered mutator (savepoint injection, preserved-state labels), themselves thin adapters over `failover/`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Awaitable, Callable, Mapping

from failover.api import GroupKind
from failover.registry import ADMITTED_OPERATIONS, DEFAULTERS, VALIDATORS, Defaulter
from failover.verdict import Verdict
from webhook.review import AdmissionRequest

Mutator = Callable[[AdmissionRequest], Awaitable[Verdict]]


@dataclass
class AdmissionHandlers:
    """The decisions behind `/validate` and `/mutate`. `mutators` adds kinds whose mutation needs I/O."""

    mutators: Mapping[GroupKind, Mutator] = field(default_factory=dict)
    defaulters: Mapping[GroupKind, Defaulter] = field(default_factory=lambda: DEFAULTERS)

    # (group, kind) of every kind a rule or a mutator serves.
    kinds: frozenset[tuple[str, str]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.kinds = frozenset((gk.group, gk.kind) for gk in (*VALIDATORS, *self.defaulters, *self.mutators))

    async def validate(self, request: AdmissionRequest) -> Verdict | None:
        validator = VALIDATORS.get(GroupKind(request.group, request.kind))
        if validator is None or request.operation not in ADMITTED_OPERATIONS or request.object is None:
            return None
        return validator(request.object)

    async def mutate(self, request: AdmissionRequest) -> Verdict | None:
        if request.operation not in ADMITTED_OPERATIONS or request.object is None:
            return None
        group_kind = GroupKind(request.group, request.kind)
        defaulter = self.defaulters.get(group_kind)
        if defaulter is not None:
            return defaulter(request.object)
        mutator = self.mutators.get(group_kind)
        if mutator is not None:
            return await mutator(request)
        return None
