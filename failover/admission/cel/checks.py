"""A rule of failover/admission written as CEL, for the apiserver to run without the relay.

`failover-relay manifests admission-policies` (relay/commands/manifests/admission_policies.py) renders a
`CelValidation` as a ValidatingAdmissionPolicy and a `CelMutation` as a MutatingAdmissionPolicy, for the kinds the
admission registry (failover/admission/registry.py) sends the same rule's webhook.
"""

from __future__ import annotations

from dataclasses import dataclass

# The oldest apiserver that runs what is rendered: MutatingAdmissionPolicy is v1 (and on by default) from 1.36
# (KEP-3962); the expressions need 1.34's CEL (failover/admission/cel/expressions.py). Karmada v1.19 installs a
# karmada-apiserver of 1.36.
KUBERNETES_VERSION_FOR_POLICIES = "1.36"


@dataclass(frozen=True)
class CelValidation:
    """A validating rule: named CEL variables in order (a later one reads an earlier one as `variables.NAME`), and two
    expressions, each a list of strings: the denials, in the order the Python rule finds them (the policy denies with
    all of them joined by "; ", as `Verdict.message` does), and the warnings (deduplicated, in order)."""

    variables: tuple[tuple[str, str], ...]
    denials: str
    warnings: str


@dataclass(frozen=True)
class CelMutation:
    """A defaulting rule: named CEL variables, a condition for the objects it applies to, and a list of JSONPatch
    operations (`JSONPatch{op: ..., path: ..., value: ...}`)."""

    variables: tuple[tuple[str, str], ...]
    applies_to: str
    patch: str
