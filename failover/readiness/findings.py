"""What the readiness check says about one condition: a `Finding` (ok / warning / problem, the evidence, the fix), and
the sections of the docs a fix points to (each stated once here; a test holds them to the docs' headings)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum


class Status(StrEnum):
    OK = "ok"
    WARNING = "warning"  # the failover works, but worse than it could, or the check could not see
    PROBLEM = "problem"  # a failover now would lose the state, run two copies, or never happen


# Where each fix is written: (file, heading).
CONTROLLERS_DOC = ("docs/operations.md", "Turning off the Karmada controllers failover-relay replaces")
DEAD_CLUSTER_DOC = ("docs/operations.md", "Cluster failover and a dead cluster")
STORAGE_FENCE_DOC = ("docs/operations.md", "The storage fence")
MEMBER_DOC = ("docs/operations.md", "On member clusters")
CERTIFICATES_DOC = ("docs/operations.md", "Certificates")
FAILURE_POLICIES_DOC = ("docs/operations.md", "Failure policies and their trade-offs")
CONTROL_PLANE_DOC = ("docs/operations.md", "On the Karmada control plane")
STATE_LOST_DOC = ("docs/restore.md", "Warnings where state will be lost")
FLINK_STATE_DOC = ("docs/restore.md", "Where Flink writes state")
NEVER_DOC = ("docs/troubleshooting.md", "Failover never happens")
NO_STATE_DOC = ("docs/troubleshooting.md", "A job started without its state, or is parked")
TWO_COPIES_DOC = ("docs/troubleshooting.md", "Two copies running")
PLANNED_MOVES_DOC = ("docs/operations.md", "Planned moves")
CLAIM_MODE_DOC = ("docs/restore.md", "The claim mode")
FIX_DOCS = (
    CONTROLLERS_DOC,
    DEAD_CLUSTER_DOC,
    STORAGE_FENCE_DOC,
    MEMBER_DOC,
    CERTIFICATES_DOC,
    FAILURE_POLICIES_DOC,
    CONTROL_PLANE_DOC,
    STATE_LOST_DOC,
    FLINK_STATE_DOC,
    NEVER_DOC,
    NO_STATE_DOC,
    TWO_COPIES_DOC,
    PLANNED_MOVES_DOC,
    CLAIM_MODE_DOC,
)


def doc(section: tuple[str, str]) -> str:
    return f'{section[0]}, "{section[1]}"'


@dataclass(frozen=True)
class Finding:
    check: str  # what is checked, a short kebab-case name
    status: Status
    evidence: str  # what was seen, in one or two sentences
    fix: str = ""  # where the docs say how to fix it ("" when there is nothing to fix)

    def as_dict(self) -> dict[str, str]:
        found = {"check": self.check, "status": self.status.value, "evidence": self.evidence}
        if self.fix:
            found["fix"] = self.fix
        return found


def ok(check: str, evidence: str) -> Finding:
    return Finding(check, Status.OK, evidence)


def warning(check: str, evidence: str, fix: tuple[str, str]) -> Finding:
    return Finding(check, Status.WARNING, evidence, doc(fix))


def problem(check: str, evidence: str, fix: tuple[str, str]) -> Finding:
    return Finding(check, Status.PROBLEM, evidence, doc(fix))


def counts(findings: Iterable[Finding]) -> dict[str, int]:
    """How many findings of each status, every status named (the summary line and `-o json`)."""
    found = dict.fromkeys((status.value for status in Status), 0)
    for finding in findings:
        found[finding.status.value] += 1
    return found
