"""Typed reads from untrusted objects.

Admission objects arrive as parsed JSON of any shape. Each reader returns the value when it has the expected type,
`None` when it is absent (or null), and records a denial naming the field path when it has the wrong type, so a
rule never raises on a malformed object.

Parsed JSON objects are dicts, so objects are recognised with `isinstance(value, dict)`: a check against
`typing.Mapping` goes through the ABC machinery and cost a tenth of a policy's validation time in the admission
profile (docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard, TypeVar

from failover.core.names import object_key
from failover.core.verdict import WRONG_TYPE, Findings

INT32_MAX = 2**31 - 1
INT32_MIN = -(2**31)

T = TypeVar("T")


def is_int(value: Any) -> TypeGuard[int]:
    """An integer from parsed JSON; `True` is an `int` in Python but a boolean in JSON."""
    return isinstance(value, int) and not isinstance(value, bool)


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def mapping_at(findings: Findings, parent: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any] | None:
    return _typed_at(findings, parent, key, path, dict, "an object")


def list_at(findings: Findings, parent: Mapping[str, Any], key: str, path: str) -> list[Any] | None:
    return _typed_at(findings, parent, key, path, list, "a list")


def str_at(findings: Findings, parent: Mapping[str, Any], key: str, path: str) -> str | None:
    return _typed_at(findings, parent, key, path, str, "a string")


def bool_at(findings: Findings, parent: Mapping[str, Any], key: str, path: str) -> bool | None:
    return _typed_at(findings, parent, key, path, bool, "true or false")


def required_spec(findings: Findings, obj: Any, kind: str, missing: str, rule: str) -> Mapping[str, Any] | None:
    """The `spec` of an object under review, or None with a denial under `rule` when there is none to check: the object
    is not one (it must be `kind`), its spec is not an object, or it has no spec (`missing` says what is required)."""
    if not isinstance(obj, dict):
        findings.deny("(object)", f"must be {kind} object", rule)
        return None
    spec = mapping_at(findings, obj, "spec", "spec")
    if spec is None and obj.get("spec") is None:
        findings.deny("spec", missing, rule)
    return spec


def _typed_at(
    findings: Findings, parent: Mapping[str, Any], key: str, path: str, expected: type[T], must_be: str
) -> T | None:
    """The value at `key` when it is an `expected` (None when absent or null); of another type, None and a denial at
    `path` saying what it must be and what it is."""
    value = parent.get(key)
    if value is None or isinstance(value, expected):
        return value
    findings.deny(path, f"must be {must_be}, got {_type_name(value)}", WRONG_TYPE)
    return None


def int32_at(findings: Findings, parent: Mapping[str, Any], key: str, path: str) -> int | None:
    """An int32 field (Karmada declares its seconds fields `*int32`); 300.0 is accepted as 300, like JSON decoding in
    Go."""
    value = parent.get(key)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not is_int(value):
        findings.deny(path, f"must be an integer, got {_type_name(value)}", WRONG_TYPE)
        return None
    if not INT32_MIN <= value <= INT32_MAX:
        # The value itself is not echoed: a Python int of more than 4300 digits cannot even be formatted.
        findings.deny(path, f"must be between {INT32_MIN} and {INT32_MAX} (a 32-bit integer)", WRONG_TYPE)
        return None
    return value


def non_negative_int32_at(
    findings: Findings, parent: Mapping[str, Any], key: str, path: str, if_omitted: str, rule: str
) -> int | None:
    """An int32 count of seconds that must be 0 or more (`int32_at`); a negative one is denied under `rule`, saying
    what omitting the field does (`if_omitted`). The value is returned as read, negative or not."""
    value = int32_at(findings, parent, key, path)
    if value is not None and value < 0:
        findings.deny(path, f"must be 0 or more, got {value}; omit it {if_omitted}", rule)
    return value


def object_name(obj: Mapping[str, Any]) -> str:
    """`namespace/name` (or `name`) of an object, for messages; tolerant of malformed metadata."""
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        return ""
    name = metadata.get("name") or metadata.get("generateName") or ""
    namespace = metadata.get("namespace") or ""
    if not isinstance(name, str) or not isinstance(namespace, str):
        return ""
    return object_key(namespace, name)
