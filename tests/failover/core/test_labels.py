"""Label key and value syntax (apimachinery IsQualifiedName / IsValidLabelValue) and JSON Pointer escaping."""

from __future__ import annotations

from typing import Any

import pytest

from failover.core.labels import escape_json_pointer, label_key_problems, label_value_problems


@pytest.mark.parametrize(
    "key",
    [
        "application.karmada.io/failover-jobid",  # application failover guide
        "application.karmada.io/cluster-failover-jobid",  # cluster failover guide
        "cluster.karmada.io/failover-jobid",  # stateful cluster failover proposal
        "resourcebinding.karmada.io/failover-jobid",  # PR #7478
        "jobid",
        "Job_ID.v2",
        "a",
        "9",
        pytest.param("a" * 63, id="name-63"),
        pytest.param("x" * 63 + "/" + "a" * 63, id="prefix-and-name-63"),
        pytest.param(("a" * 63 + ".") * 3 + "b" * 61 + "/name", id="prefix-253"),
        "k8s.io/a-b_c.d",
    ],
)
def test_valid_label_keys(key: str) -> None:
    assert label_key_problems(key) == []


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("", "must be a non-empty string"),
        pytest.param("a" * 64, "name part must be at most 63 characters", id="name-64"),
        ("-jobid", "starting and ending alphanumeric"),
        ("jobid-", "starting and ending alphanumeric"),
        ("job id", "alphanumerics, '-', '_' or '.'"),
        ("jöbid", "alphanumerics"),
        ("jobid\n", "alphanumerics"),
        ("/jobid", "prefix before '/' must not be empty"),
        ("example.com/", "name part must not be empty"),
        ("/", "prefix before '/' must not be empty"),
        ("Example.com/jobid", "lowercase DNS subdomain"),
        ("example_com/jobid", "lowercase DNS subdomain"),
        ("example..com/jobid", "lowercase DNS subdomain"),
        ("-example.com/jobid", "lowercase DNS subdomain"),
        ("例え.jp/jobid", "lowercase DNS subdomain"),
        pytest.param("a" * 254 + "/jobid", "prefix must be at most 253 characters", id="prefix-254"),
        ("a/b/c", "must contain at most one '/', as in example.com/name"),
        ("application.karmada.io/failover/state/jobid", "at most one '/'"),
        pytest.param("x" * 100_000, "at most 63 characters", id="huge"),
    ],
)
def test_invalid_label_keys(key: str, problem: str) -> None:
    problems = label_key_problems(key)

    assert problems
    assert problem in problems[0]


def test_every_problem_of_a_key_is_listed() -> None:
    assert label_key_problems("Bad_Prefix/-name") == [
        "prefix must be a lowercase DNS subdomain such as example.com",
        "name part must be alphanumerics, '-', '_' or '.', starting and ending alphanumeric",
    ]


@pytest.mark.parametrize("value", [None, 1, ["a"], b"jobid"])
def test_non_string_key_and_value_are_problems(value: Any) -> None:
    assert label_key_problems(value) == ["must be a non-empty string"]
    assert label_value_problems(value) == ["must be a string"]


@pytest.mark.parametrize(
    "value",
    ["", "5b3c8a1f0e2d4c6b8a9f7e6d5c4b3a21", "RUNNING", "v1.2_3-rc", pytest.param("a" * 63, id="value-63"), "0"],
)
def test_valid_label_values(value: str) -> None:
    assert label_value_problems(value) == []


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        pytest.param("a" * 64, "at most 63 characters", id="value-64"),
        ("s3://bucket/path", "alphanumerics"),
        ("-leading", "starting and ending alphanumeric"),
        ("trailing.", "starting and ending alphanumeric"),
        ("two words", "alphanumerics"),
        ("café", "alphanumerics"),
        ("job\n", "alphanumerics"),
        pytest.param("x" * 1_000_000, "at most 63 characters", id="huge"),
    ],
)
def test_invalid_label_values(value: str, problem: str) -> None:
    assert problem in label_value_problems(value)[0]


@pytest.mark.parametrize(
    ("token", "escaped"),
    [
        ("application.karmada.io/failover-jobid", "application.karmada.io~1failover-jobid"),
        ("a~b", "a~0b"),
        ("~/", "~0~1"),
        ("~1", "~01"),  # `~` first, or `~1` would turn into `/`
        ("plain", "plain"),
    ],
)
def test_escape_json_pointer(token: str, escaped: str) -> None:
    assert escape_json_pointer(token) == escaped
