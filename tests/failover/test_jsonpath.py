"""Kubernetes JSONPath templates over jsonpath-ng: parsing, field names, rendering, and the errors of each."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from failover.jsonpath import MAX_TEMPLATE_LENGTH, JSONPathNotFound, JSONPathSyntaxError, parse_template
from tests.failover.karmada_examples import FLINK_REFLECTED_STATUS, load

STATUS = load(FLINK_REFLECTED_STATUS)
JOB_ID = "5b3c8a1f0e2d4c6b8a9f7e6d5c4b3a21"

OBJ: dict[str, Any] = {
    "items": [{"name": "a", "state": "RUNNING", "n": 1}, {"name": "b", "state": "FAILED", "n": 2}],
    "labels": {"app.kubernetes.io/name": "foo", "with-dash": "d", "it's": "q", 'say "hi"': "h", "back\\slash": "s"},
    "café": "unicode-key",
    "日本": {"語": "jp"},
    "flags": {"ready": True, "ratio": 0.5, "none": None},
}


@pytest.mark.parametrize(
    ("template", "obj", "rendered"),
    [
        pytest.param("{ .jobStatus.jobId }", STATUS, JOB_ID, id="documented-flink-job-id"),
        pytest.param("{.jobStatus.jobId}", STATUS, JOB_ID, id="no-spaces"),
        pytest.param("{$.jobStatus.jobId}", STATUS, JOB_ID, id="dollar-root"),
        pytest.param("{@.jobStatus.jobId}", STATUS, JOB_ID, id="at-root"),
        pytest.param("{ .jobStatus['jobId'] }", STATUS, JOB_ID, id="single-quoted"),
        pytest.param('{ .jobStatus["jobId"] }', STATUS, JOB_ID, id="double-quoted"),
        pytest.param("{.jobStatus.savepointInfo.lastSavepoint.location}", STATUS,
                     "s3://checkpoints/streaming/foo/savepoint-5b3c8a-1", id="deep"),
        pytest.param("job-{ .jobStatus.jobName }-{ .jobStatus.state }", STATUS, "job-foo-RUNNING", id="literal-text"),
        pytest.param("{ .taskManager.replicas }", STATUS, "2", id="number-as-json"),
        pytest.param("{ .jobStatus.checkpointInfo.lastCheckpoint }", STATUS,
                     '{"timeStamp":1730000000000,"triggerType":"PERIODIC","formatType":"FULL"}', id="object-as-json"),
        pytest.param("{.items[0].name}", OBJ, "a", id="index"),
        pytest.param("{.items[-1].name}", OBJ, "b", id="negative-index"),
        pytest.param("{.items[*].name}", OBJ, "a b", id="wildcard-joined-by-space"),
        pytest.param("{.items[0:1].name}", OBJ, "a", id="slice"),
        pytest.param("{..state}", OBJ, "RUNNING FAILED", id="recursive"),
        pytest.param('{.items[?(@.state == "FAILED")].name}', OBJ, "b", id="filter"),
        pytest.param("{.items[?(@.n > 1)].name}", OBJ, "b", id="filter-number"),
        pytest.param("{.labels['app.kubernetes.io/name']}", OBJ, "foo", id="key-with-dots-and-slash"),
        pytest.param("{.labels.with-dash}", OBJ, "d", id="dash-in-dotted-name"),
        pytest.param("{.labels['it\\'s']}", OBJ, "q", id="escaped-quote"),
        pytest.param("{.labels['say \"hi\"']}", OBJ, "h", id="double-quote-in-name"),
        pytest.param("{.labels['back\\\\slash']}", OBJ, "s", id="backslash-in-name"),
        pytest.param("{.café}", OBJ, "unicode-key", id="unicode-dotted-name"),
        pytest.param("{.日本['語']}", OBJ, "jp", id="unicode-quoted-name"),
        pytest.param("{.flags.ready}", OBJ, "true", id="boolean-as-json"),
        pytest.param("{.flags.ratio}", OBJ, "0.5", id="float-as-json"),
        pytest.param("{.flags.none}", OBJ, "null", id="null-as-json"),
        pytest.param("{.a}}", {"a": "x"}, "x}", id="stray-closing-brace-is-literal"),
    ],
)
def test_render(template: str, obj: Any, rendered: str) -> None:
    assert parse_template(template).render(obj) == rendered


@pytest.mark.parametrize(
    ("template", "names"),
    [
        pytest.param("{ .jobStatus.jobID }", {"jobStatus", "jobID"}, id="documented-typo"),
        pytest.param("{ .jobStatus['jobID'] }", {"jobStatus", "jobID"}, id="quoted"),
        pytest.param("{ ..jobID }", {"jobID"}, id="recursive"),
        pytest.param('{ .jobs[?(@.jobID == "x")].state }', {"jobs", "jobID", "state"}, id="filter"),
        pytest.param("id-{ .a.b }-{ .c }", {"a", "b", "c"}, id="several-expressions"),
        pytest.param("{ .items[*] }", {"items"}, id="wildcard"),
    ],
)
def test_field_names(template: str, names: set[str]) -> None:
    assert parse_template(template).field_names() == names


@pytest.mark.parametrize(
    ("template", "reason"),
    [
        pytest.param("", "has no {...} expression", id="empty"),
        pytest.param(".jobStatus.jobId", "has no {...} expression; write it as '{ .status.field }'", id="no-braces"),
        pytest.param("true", "has no {...} expression", id="constant-text"),
        pytest.param("{}", "empty expression at offset 0", id="empty-expression"),
        pytest.param("{   }", "empty expression", id="blank-expression"),
        pytest.param("{ .jobStatus.jobId", "unclosed '{' at offset 0", id="unclosed"),
        pytest.param("{ .a { .b } }", "nested '{'", id="nested"),
        pytest.param("{range .items[*]}{.name}{end}", "range/end loops are not supported", id="range"),
        pytest.param("{end}", "range/end loops are not supported", id="end"),
        pytest.param('{"literal"}', "literal expressions are not supported", id="literal-expression"),
        pytest.param("{$}", "selects the whole object; name a field", id="whole-object"),
        pytest.param("{ jobStatus.jobId }", "unexpected 'j' at offset 2; paths start with '.'", id="no-leading-dot"),
        pytest.param("{ .jobStatus. }", "expected a field name", id="trailing-dot"),
        pytest.param("{ .a[b] }", "unrecognized subscript at offset 4", id="bare-subscript"),
        pytest.param("{ .a[::2] }", "unrecognized subscript", id="stepped-slice"),
        pytest.param("{ .a[?(@.b == 1) }", "unclosed '[' at offset 4", id="unclosed-filter"),
        pytest.param("{ .a['b }", "unclosed '{' at offset 0", id="unclosed-quote-hides-the-brace"),
        pytest.param("{ .a[?(@.b === 1)] }", "'.a[?(@.b === 1)]': Parse error", id="jsonpath-ng-rejects-filter"),
        pytest.param("id-{ .a }-{  $.b[c] }", "unrecognized subscript at offset 16", id="offset-counts-from-template"),
        pytest.param("{ .a }" + "x" * MAX_TEMPLATE_LENGTH, f"longer than {MAX_TEMPLATE_LENGTH} characters",
                     id="too-long"),
    ],
)
def test_syntax_errors(template: str, reason: str) -> None:
    with pytest.raises(JSONPathSyntaxError) as error:
        parse_template(template)

    assert reason in str(error.value)


@pytest.mark.parametrize("value", [None, 1, ["{ .a }"], {"jsonPath": "{ .a }"}, b"{ .a }"])
def test_non_string_is_a_syntax_error(value: Any) -> None:
    with pytest.raises(JSONPathSyntaxError, match="must be a string"):
        parse_template(value)


def test_jsonpath_ng_error_message_does_not_echo_a_long_expression() -> None:
    with pytest.raises(JSONPathSyntaxError) as error:
        parse_template("{ .a[?(@.b === " + "1" * 900 + ")] }")

    assert len(str(error.value)) < 250


def test_template_at_the_length_limit_parses() -> None:
    template = "{ .a }" + "x" * (MAX_TEMPLATE_LENGTH - 6)

    assert parse_template(template).render({"a": "v"}) == "v" + "x" * (MAX_TEMPLATE_LENGTH - 6)


@pytest.mark.parametrize(
    ("template", "obj"),
    [
        pytest.param("{ .jobStatus.jobID }", STATUS, id="documented-typo-matches-nothing"),
        pytest.param("{ .status.jobStatus.jobId }", STATUS, id="status-prefix-is-not-reflected"),
        pytest.param("{ .items[5].name }", OBJ, id="index-out-of-range"),
        pytest.param('{ .items[?(@.state == "GONE")].name }', OBJ, id="filter-matches-nothing"),
        pytest.param("{ .a.b }", {"a": "scalar"}, id="field-of-scalar"),
        pytest.param("{ .a }", [], id="list-root"),
        pytest.param("{ .a }", None, id="null-root"),
        pytest.param("found-{ .jobStatus.jobId }-{ .missing }", STATUS, id="second-expression-missing"),
    ],
)
def test_missing_key_is_an_error_like_karmada(template: str, obj: Any) -> None:
    with pytest.raises(JSONPathNotFound, match="matches nothing"):
        parse_template(template).render(obj)


def test_parsed_templates_are_reused_and_stay_correct() -> None:
    first = parse_template("{ .jobStatus.jobId }")

    assert parse_template("{ .jobStatus.jobId }") is first
    assert first.render(STATUS) == JOB_ID
    assert first.render({"jobStatus": {"jobId": "other"}}) == "other"


TEMPLATE_CHARS = st.sampled_from(list("{}[]().@$*?:'\"\\ =<>!&|-_/0123456789abcjobIdé\n~`,"))
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.sampled_from("abc"), children, max_size=3),
    max_leaves=10,
)


@settings(max_examples=120, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(TEMPLATE_CHARS, max_size=24) | st.text(max_size=24), JSON_VALUES)
def test_parse_raises_only_syntax_errors_and_render_only_not_found(template: str, obj: Any) -> None:
    try:
        parsed = parse_template(template)
    except JSONPathSyntaxError:
        return
    assert isinstance(parsed.field_names(), frozenset)
    try:
        assert isinstance(parsed.render(obj), str)
    except JSONPathNotFound:
        pass
