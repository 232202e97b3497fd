"""How a setting is declared: one dataclass field carrying its config file key, default, bounds and command-line flag.

A setting is declared where it is read: the reconcile decisions' knobs in `failover.core.loop_settings`, the server's
and the savepoint lookup's in relay/settings/declarations.py. The loader (relay/settings/loading.py `declared`) walks
the dataclasses and reads every field's `Spec`, so the file, the flags and the bounds check all come from this one
declaration. A `timedelta` field is given in seconds (its key ends in `Seconds`).
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Spec:
    """How one setting is named, bounded and given on the command line (the field's metadata)."""

    key: str  # "section.configKey" in the config file
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    flag: str | None = None
    # A flag that takes no argument and sets this value (--failback, --no-cabundle-sync); None: the flag takes one.
    flag_value: Any = None
    help: str | None = None  # "{default}" is replaced by the declared default
    choices_hint: str | None = None  # how to name the allowed values in an error, instead of listing them


def setting(
    key: str,
    default: Any = MISSING,
    *,
    default_factory: Any = MISSING,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    lt: float | None = None,
    flag: str | None = None,
    flag_value: Any = None,
    help: str | None = None,
    choices_hint: str | None = None,
) -> Any:
    """A dataclass field that is a setting (see the module docstring)."""
    spec = Spec(key, ge, gt, le, lt, flag, flag_value, help, choices_hint)
    return field(default=default, default_factory=default_factory, metadata={"setting": spec})


def spec_of(metadata: Any) -> Spec | None:
    """The declaration in a field's metadata; None for a field that is not a setting."""
    spec = metadata.get("setting")
    return spec if isinstance(spec, Spec) else None
