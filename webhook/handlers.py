"""Routing of admission requests to the rules in `failover/`, by kind and operation.

The handlers translate only: an `AdmissionRequest` in, a response out. Every decision is made by a function of
`failover/` (validators and defaulters from `failover.rules`) or by a registered mutator (savepoint injection,
preserved-state labels), which are themselves thin adapters over `failover/` decisions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Awaitable, Callable, Mapping

from failover.api import GroupKind
from failover.rules import DEFAULTERS, VALIDATORS, Defaulter
from failover.verdict import Verdict
from webhook import responses
from webhook.review import AdmissionRequest, AdmissionResponseWire

Mutator = Callable[[AdmissionRequest], Awaitable[Verdict]]
ADMITTED_OPERATIONS = frozenset({"CREATE", "UPDATE"})


@dataclass(frozen=True)
class Outcome:
    """A response and the one-word verdict used in logs and metrics."""

    response: AdmissionResponseWire
    verdict: str
    reason: str = ""


def outcome_of(uid: str, verdict: Verdict) -> Outcome:
    if not verdict.allowed:
        return Outcome(responses.from_verdict(uid, verdict), "denied", verdict.message)
    return Outcome(responses.from_verdict(uid, verdict), "patched" if verdict.patch else "allowed")


@dataclass
class AdmissionHandlers:
    """The decisions behind `/validate` and `/mutate`. `mutators` adds kinds whose mutation needs I/O."""

    mutators: Mapping[GroupKind, Mutator] = field(default_factory=dict)
    defaulters: Mapping[GroupKind, Defaulter] = field(default_factory=lambda: DEFAULTERS)

    # (group, kind) of every kind a rule or a mutator serves.
    kinds: frozenset[tuple[str, str]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.kinds = frozenset((gk.group, gk.kind) for gk in (*VALIDATORS, *self.defaulters, *self.mutators))

    async def validate(self, request: AdmissionRequest) -> Outcome:
        validator = VALIDATORS.get(GroupKind(request.group, request.kind))
        if validator is None or request.operation not in ADMITTED_OPERATIONS or request.object is None:
            return Outcome(responses.allowed(request.uid), "allowed", "not-handled")
        return outcome_of(request.uid, validator(request.object))

    async def mutate(self, request: AdmissionRequest) -> Outcome:
        group_kind = GroupKind(request.group, request.kind)
        if request.operation not in ADMITTED_OPERATIONS or request.object is None:
            return Outcome(responses.allowed(request.uid), "allowed", "not-handled")
        defaulter = self.defaulters.get(group_kind)
        if defaulter is not None:
            return outcome_of(request.uid, Verdict(patch=defaulter(request.object)))
        mutator = self.mutators.get(group_kind)
        if mutator is not None:
            return outcome_of(request.uid, await mutator(request))
        return Outcome(responses.allowed(request.uid), "allowed", "not-handled")
