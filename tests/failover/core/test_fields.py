"""Typed readers: the value when it has the type, None when absent or null, a denial naming the path otherwise."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from failover.core.fields import INT32_MAX, INT32_MIN, bool_at, int32_at, list_at, mapping_at, object_name, str_at
from failover.core.verdict import Findings

Reader = Callable[[Findings, Any, str, str], Any]


def read(reader: Reader, parent: dict[str, Any]) -> tuple[Any, list[str]]:
    findings = Findings()
    value = reader(findings, parent, "field", "spec.field")
    return value, [str(denial) for denial in findings.verdict().denials]


@pytest.mark.parametrize(
    ("reader", "value"),
    [
        (mapping_at, {"a": 1}),
        (mapping_at, {}),
        (list_at, [1, "a"]),
        (list_at, []),
        (str_at, "text"),
        (str_at, ""),
        (str_at, "ünïcödé"),
        (bool_at, True),
        (bool_at, False),
        (int32_at, 0),
        (int32_at, 300),
        (int32_at, -1),
        (int32_at, INT32_MAX),
        (int32_at, INT32_MIN),
    ],
)
def test_value_of_the_expected_type_is_returned(reader: Reader, value: Any) -> None:
    assert read(reader, {"field": value}) == (value, [])


@pytest.mark.parametrize("reader", [mapping_at, list_at, str_at, bool_at, int32_at])
@pytest.mark.parametrize("parent", [{}, {"field": None}, {"other": 1}])
def test_absent_or_null_is_none_without_denial(reader: Reader, parent: dict[str, Any]) -> None:
    assert read(reader, parent) == (None, [])


@pytest.mark.parametrize(
    ("reader", "value", "denial"),
    [
        (mapping_at, [], "spec.field: must be an object, got a list"),
        (mapping_at, "a: 1", "spec.field: must be an object, got a string"),
        (mapping_at, 0, "spec.field: must be an object, got a number"),
        (list_at, {"a": 1}, "spec.field: must be a list, got an object"),
        (list_at, "a,b", "spec.field: must be a list, got a string"),
        (list_at, True, "spec.field: must be a list, got a boolean"),
        (str_at, 1, "spec.field: must be a string, got a number"),
        (str_at, 1.5, "spec.field: must be a string, got a number"),
        (str_at, ["a"], "spec.field: must be a string, got a list"),
        (str_at, False, "spec.field: must be a string, got a boolean"),
        (bool_at, "true", "spec.field: must be true or false, got a string"),
        (bool_at, 1, "spec.field: must be true or false, got a number"),
        (bool_at, 0, "spec.field: must be true or false, got a number"),
        (bool_at, {}, "spec.field: must be true or false, got an object"),
        (int32_at, True, "spec.field: must be an integer, got a boolean"),
        (int32_at, False, "spec.field: must be an integer, got a boolean"),
        (int32_at, "300", "spec.field: must be an integer, got a string"),
        (int32_at, 1.5, "spec.field: must be an integer, got a number"),
        (int32_at, float("inf"), "spec.field: must be an integer, got a number"),
        (int32_at, float("nan"), "spec.field: must be an integer, got a number"),
        (int32_at, [300], "spec.field: must be an integer, got a list"),
        (int32_at, b"300", "spec.field: must be an integer, got bytes"),
        (int32_at, INT32_MAX + 1, "spec.field: must be between -2147483648 and 2147483647 (a 32-bit integer)"),
        (int32_at, INT32_MIN - 1, "spec.field: must be between -2147483648 and 2147483647 (a 32-bit integer)"),
        (int32_at, 2**63, "spec.field: must be between -2147483648 and 2147483647 (a 32-bit integer)"),
        pytest.param(
            int32_at,
            10**5000,
            "spec.field: must be between -2147483648 and 2147483647 (a 32-bit integer)",
            id="int32_at-5000-digits",
        ),
        (int32_at, 1e300, "spec.field: must be between -2147483648 and 2147483647 (a 32-bit integer)"),
    ],
)
def test_wrong_type_is_denied_with_the_path(reader: Reader, value: Any, denial: str) -> None:
    assert read(reader, {"field": value}) == (None, [denial])


@pytest.mark.parametrize(("value", "number"), [(300.0, 300), (-0.0, 0), (2147483647.0, INT32_MAX)])
def test_integral_float_is_read_as_integer_like_go_json(value: float, number: int) -> None:
    result, denials = read(int32_at, {"field": value})

    assert denials == []
    assert result == number
    assert type(result) is int


@pytest.mark.parametrize(
    ("obj", "name"),
    [
        ({"metadata": {"name": "foo", "namespace": "streaming"}}, "streaming/foo"),
        ({"metadata": {"name": "foo"}}, "foo"),
        ({"metadata": {"generateName": "rebalance-"}}, "rebalance-"),
        ({"metadata": {"name": "foo", "namespace": None}}, "foo"),
        ({"metadata": {"name": ["foo"]}}, ""),
        ({"metadata": {"name": "foo", "namespace": 3}}, ""),
        ({"metadata": "foo"}, ""),
        ({}, ""),
    ],
)
def test_object_name(obj: dict[str, Any], name: str) -> None:
    assert object_name(obj) == name
