"""What a rule concludes about an object: denials, warnings, JSONPatch operations and audit annotations.

Rules build a `Verdict`; the webhook completes an AdmissionReview response from it (`webhook.review.complete`) and
the `check` CLI prints it as lines of text. "Verdict" means this and only this: the metric label and log field of
that name carry its `summary`. Nothing here knows about HTTP.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Kubernetes advises admission warnings of at most 120 characters (longer ones may be truncated by clients). Rules
# write them whole, with the reason first; only the AdmissionReview response clips them (webhook.review.complete),
# so that `check` and `inject` print them in full.
MAX_WARNING_LENGTH = 120


def clip(text: str, limit: int = MAX_WARNING_LENGTH) -> str:
    """Shorten `text` to `limit` characters, marking the cut with an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


# The rule of a denial from `failover.core.fields`: a field of the wrong type, which a CRD schema refuses before any
# admission webhook or policy sees the object (`failover.admission.rules.Rule.WRONG_TYPE` names it).
WRONG_TYPE = "wrong-type"


@dataclass(frozen=True)
class Finding:
    """One problem, located by its field path (`spec.failover.application.purgeMode`), and the rule that found it
    (a `failover.admission.rules.Rule` value; "" for Karmada's own checks that `check` replays)."""

    path: str
    message: str
    rule: str = field(default="", compare=False)

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass(frozen=True)
class Verdict:
    """The outcome of applying rules to one object."""

    denials: tuple[Finding, ...] = ()
    warnings: tuple[str, ...] = ()
    patch: tuple[Mapping[str, Any], ...] = ()
    audit: Mapping[str, str] = field(default_factory=dict)
    # warning -> the rule that gave it, for the warnings a rule tagged (failover/admission/rules.py).
    warning_rules: Mapping[str, str] = field(default_factory=dict, compare=False)

    @property
    def allowed(self) -> bool:
        return not self.denials

    @property
    def summary(self) -> str:
        """One word for logs and the `verdict` metric label: denied, patched or allowed."""
        return "denied" if self.denials else "patched" if self.patch else "allowed"

    @property
    def message(self) -> str:
        """All denials on one line, the way kubectl prints an admission error."""
        return "; ".join(str(denial) for denial in self.denials)

    def merged(self, other: Verdict) -> Verdict:
        return Verdict(
            denials=self.denials + other.denials,
            warnings=self.warnings + other.warnings,
            patch=self.patch + other.patch,
            audit={**self.audit, **other.audit},
            warning_rules={**self.warning_rules, **other.warning_rules},
        )


ALLOWED = Verdict()


class Findings:
    """Collects denials and warnings while a rule walks an object."""

    def __init__(self) -> None:
        self._denials: list[Finding] = []
        self._warnings: list[str] = []
        self._warning_rules: dict[str, str] = {}

    def deny(self, path: str, message: str, rule: str = "") -> None:
        self._denials.append(Finding(path, message, rule))

    def warn(self, message: str, rule: str = "") -> None:
        if message not in self._warnings:
            self._warnings.append(message)
            if rule:
                self._warning_rules[message] = rule

    @property
    def denied(self) -> bool:
        return bool(self._denials)

    def verdict(self, patch: tuple[Mapping[str, Any], ...] = ()) -> Verdict:
        return Verdict(
            denials=tuple(self._denials),
            warnings=tuple(self._warnings),
            patch=patch,
            warning_rules=dict(self._warning_rules),
        )
