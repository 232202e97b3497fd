"""Routing of admission requests to the rules in `failover/`, by kind and operation.

The handlers translate only: an `AdmissionRequest` in, a `Verdict` out, or None when the request is not ours to
judge (a kind no webhook of `failover.admission.registry.WEBHOOKS` serves, DELETE, CONNECT). The server completes
the response. Every decision is made by a function of `failover/` (validators and defaulters from
`failover.admission.registry`) or by a registered mutator (savepoint injection, preserved-state labels), themselves
thin adapters over `failover/`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from failover.admission.registry import ADMITTED_OPERATIONS, DEFAULTERS, VALIDATORS, Defaulter, Validator
from failover.core.api import GroupKind
from failover.core.verdict import Verdict
from webhook.review import AdmissionRequest

Mutator = Callable[[AdmissionRequest], Awaitable[Verdict]]


@dataclass
class AdmissionHandlers:
    """The decisions behind `/validate` and `/mutate`. `mutators` adds kinds whose mutation needs I/O."""

    mutators: Mapping[GroupKind, Mutator] = field(default_factory=dict)
    defaulters: Mapping[GroupKind, Defaulter] = field(default_factory=lambda: DEFAULTERS)

    # (group, kind) of every kind a rule or a mutator serves.
    kinds: frozenset[tuple[str, str]] = field(init=False, repr=False, compare=False)
    # The same tables keyed by the request's (group, kind) tuple: no GroupKind is built per review.
    _validators: dict[tuple[str, str], Validator] = field(init=False, repr=False, compare=False)
    _mutations: dict[tuple[str, str], tuple[Defaulter | None, Mutator | None]] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        self.kinds = frozenset((gk.group, gk.kind) for gk in (*VALIDATORS, *self.defaulters, *self.mutators))
        self._validators = {(gk.group, gk.kind): validator for gk, validator in VALIDATORS.items()}
        self._mutations = {
            (gk.group, gk.kind): (self.defaulters.get(gk), self.mutators.get(gk))
            for gk in (*self.defaulters, *self.mutators)
        }

    async def validate(self, request: AdmissionRequest) -> Verdict | None:
        validator = self._validators.get(request.group_kind)
        if validator is None or request.operation not in ADMITTED_OPERATIONS or request.object is None:
            return None
        return validator(request.object)

    async def mutate(self, request: AdmissionRequest) -> Verdict | None:
        if request.operation not in ADMITTED_OPERATIONS or request.object is None:
            return None
        defaulter, mutator = self._mutations.get(request.group_kind, (None, None))
        if defaulter is not None:
            return defaulter(request.object)
        if mutator is not None:
            return await mutator(request)
        return None
