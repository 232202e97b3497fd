"""What a reconcile decision returns beside its patch: the events it asks for, when to look again, patches of other
objects.

A decision is a plain function of (objects as the Kubernetes API returns them, `DecisionSettings`, `now`) that
returns a frozen result: a JSON merge patch (RFC 7386) to write, the events to record and when to look again. The
controllers apply the patch, record the events and requeue; they decide nothing themselves.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final, Literal

from failover.core.names import ObjectRef

# Final, so that mypy reads them as the Literal types `Event.type` takes.
NORMAL: Final = "Normal"
WARNING: Final = "Warning"

# Kubernetes truncates event messages at 1024 bytes; eviction task messages have the same limit in the CRD.
MAX_MESSAGE_LENGTH = 1024


@dataclass(frozen=True)
class BindingPatch:
    """A merge patch for one (Cluster)ResourceBinding, written by a decision about another object, and the
    resourceVersion of the binding it was decided on. The decision says what to change and on what it decided; the
    write service (controllers/access/binding_writes.py) sends the precondition, so the apiserver refuses the patch
    (409) when the binding moved on since: no decision writes `metadata.resourceVersion` itself."""

    binding: ObjectRef
    patch: Mapping[str, Any]
    version: str


@dataclass(frozen=True)
class Event:
    """A Kubernetes Event to record. `regarding` None means the object the decision was made for."""

    type: Literal["Normal", "Warning"]
    reason: str
    message: str
    regarding: ObjectRef | None = None


def earliest(*delays: timedelta | None) -> timedelta | None:
    """The shortest of the given requeue delays (None ignored), never negative."""
    present = [delay for delay in delays if delay is not None]
    return max(min(present), timedelta(0)) if present else None


def clip_message(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE_LENGTH else text[: MAX_MESSAGE_LENGTH - 1] + "…"


def whole_seconds(delta: timedelta) -> int:
    """A duration as the whole seconds an event message names."""
    return int(delta.total_seconds())
