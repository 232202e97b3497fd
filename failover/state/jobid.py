"""Flink JobIDs: the only job identifiers failover-relay ever joins into a storage path.

A JobID is 16 random bytes printed as 32 lowercase hex characters (Flink's `AbstractID.toString`); the operator
reports it in `status.jobStatus.jobId`, and Karmada's state preservation copies it into a label on the migrated
workload. The label value is untrusted text from another cluster, so it is checked here before anything else
touches it: a value like `../../etc` must be refused, never resolved against the checkpoint root.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

JOB_ID_LENGTH = 32
_JOB_ID = re.compile(r"[0-9a-f]{32}\Z")
# How much of a refused value is echoed in messages: enough to recognise it, short enough for a 120-char warning.
_ECHO_LIMIT = 32


class InvalidJobId(ValueError):
    """The value is not a Flink JobID; the message says why and quotes (a clipped copy of) the value."""


@dataclass(frozen=True)
class JobId:
    """A checked Flink JobID. Constructing one with anything but 32 lowercase hex characters raises `InvalidJobId`."""

    value: str

    def __post_init__(self) -> None:
        problem = job_id_problem(self.value)
        if problem:
            raise InvalidJobId(problem)

    def __str__(self) -> str:
        return self.value


def job_id_problem(value: Any) -> str | None:
    """Why `value` is not a Flink JobID, or None when it is one."""
    if not isinstance(value, str):
        return f"job id must be a string, got {type(value).__name__}"
    if _JOB_ID.match(value):
        return None
    shown = value if len(value) <= _ECHO_LIMIT else value[: _ECHO_LIMIT - 1] + "…"
    if len(value) != JOB_ID_LENGTH:
        return f"job id {shown!r} is not a Flink JobID (32 lowercase hex chars, got {len(value)})"
    return f"job id {shown!r} is not a Flink JobID (32 lowercase hex chars)"


def parse_job_id(value: Any) -> JobId:
    """The checked JobId for `value`; raises `InvalidJobId`."""
    problem = job_id_problem(value)
    if problem:
        raise InvalidJobId(problem)
    return JobId(value)
