"""Kubernetes JSONPath templates as client-go evaluates them for Karmada: parsing, rendering, errors, warnings.

The cases marked client-go-* are client-go's own (k8s.io/client-go util/jsonpath/jsonpath_test.go) on JSON-decoded
input, the way Karmada's `parseJSONValue` (pkg/util/helper/failover.go) decodes a status.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from failover.core.jsonpath import (
    MAX_TEMPLATE_LENGTH,
    JSONPathError,
    JSONPathNotFound,
    JSONPathSyntaxError,
    go_float,
    go_json,
    parse_template,
)
from tests.failover.karmada_examples import FLINK_REFLECTED_STATUS, load

STATUS = load(FLINK_REFLECTED_STATUS)
JOB_ID = "5b3c8a1f0e2d4c6b8a9f7e6d5c4b3a21"

OBJ: dict[str, Any] = {
    "items": [{"name": "a", "state": "RUNNING", "n": 1}, {"name": "b", "state": "FAILED", "n": 2}],
    "labels": {"app.kubernetes.io/name": "foo", "with-dash": "d"},
    "café": "unicode-key",
    "日本": {"語": "jp"},
    "flags": {"ready": True, "ratio": 0.5, "none": None},
}

# Inputs of client-go's own tests (util/jsonpath/jsonpath_test.go), decoded from JSON as Karmada decodes a status.
POINTS = json.loads("""[{"id": "i1", "x": 4, "y": -5}, {"id": "i2", "x": -2, "y": -5, "z": 1},
  {"id": "i3", "x": 8, "y": 3}, {"id": "i4", "x": -6, "y": -1}, {"id": "i5", "x": 0, "y": 2, "z": 1},
  {"id": "i6", "x": 1, "y": 4}]""")
NODES = json.loads("""{"kind": "List", "items": [
  {"kind": "None", "metadata": {"name": "127.0.0.1", "labels": {"kubernetes.io/hostname": "127.0.0.1"}},
   "status": {"capacity": {"cpu": "4"}, "ready": true,
              "addresses": [{"type": "LegacyHostIP", "address": "127.0.0.1"}]}},
  {"kind": "None", "metadata": {"name": "127.0.0.2", "labels": {"kubernetes.io/hostname": "127.0.0.2"}},
   "status": {"capacity": {"cpu": "8"}, "ready": false,
              "addresses": [{"type": "LegacyHostIP", "address": "127.0.0.2"},
                            {"type": "another", "address": "127.0.0.3"}]}}],
  "users": [{"name": "myself", "user": {}}, {"name": "e2e", "user": {"username": "admin", "password": "secret"}}]}""")
TYPES = json.loads("""{"bools": [true, false, true, false], "integers": [1, 2, 3, 4], "floats": [1.0, 2.2, 3.3, 4.0],
  "strings": ["one", "two", "three", "four"], "interfaces": [true, "one", 1, 1.1],
  "maps": [{"name": "one", "value": 1}, {"name": "two", "value": 2.02}]}""")
CONTAINERS = {"spec": {"containers": [{"name": f"fake{i}"} for i in range(6)]}}
PODS = {
    "items": [
        {"metadata": {"name": "pod1"}, "spec": {"containers": [{"name": "foo"}, {"name": "bar"}]}},
        {"metadata": {"name": "pod2"}, "spec": {"containers": [{"name": "baz"}]}},
    ]
}


@pytest.mark.parametrize(
    ("template", "obj", "rendered"),
    [
        pytest.param("{ .jobStatus.jobId }", STATUS, JOB_ID, id="documented-flink-job-id"),
        pytest.param("{.jobStatus.jobId}", STATUS, JOB_ID, id="no-spaces"),
        pytest.param("{$.jobStatus.jobId}", STATUS, JOB_ID, id="dollar-root"),
        pytest.param("{@.jobStatus.jobId}", STATUS, JOB_ID, id="at-root"),
        pytest.param("{ .jobStatus['jobId'] }", STATUS, JOB_ID, id="single-quoted"),
        pytest.param(
            "{.jobStatus.savepointInfo.lastSavepoint.location}",
            STATUS,
            "s3://checkpoints/streaming/foo/savepoint-5b3c8a-1",
            id="deep",
        ),
        pytest.param("job-{ .jobStatus.jobName }-{ .jobStatus.state }", STATUS, "job-foo-RUNNING", id="literal-text"),
        pytest.param('{"job-"}{.jobStatus.jobId}', STATUS, f"job-{JOB_ID}", id="literal-action"),
        pytest.param("true", STATUS, "true", id="no-braces-is-literal-text-karmada-5788"),
        pytest.param(".jobStatus.jobId", STATUS, ".jobStatus.jobId", id="path-without-braces-is-text"),
        pytest.param("", STATUS, "", id="empty"),
        pytest.param("{ .taskManager.replicas }", STATUS, "2", id="number-as-float64"),
        pytest.param(
            "{ .jobStatus.checkpointInfo.lastCheckpoint }",
            STATUS,
            '{"formatType":"FULL","timeStamp":1730000000000,"triggerType":"PERIODIC"}',
            id="object-as-go-json-sorted",
        ),
        pytest.param(
            "{ .jobStatus.checkpointInfo.lastCheckpoint.timeStamp }",
            STATUS,
            "1.73e+12",
            id="large-number-prints-as-go-float",
        ),
        pytest.param("{.items[0].name}", OBJ, "a", id="index"),
        pytest.param("{.items[-1].name}", OBJ, "b", id="negative-index"),
        pytest.param("{.items[*].name}", OBJ, "a b", id="wildcard-joined-by-space"),
        pytest.param("{.items[0:1].name}", OBJ, "a", id="slice"),
        pytest.param("{..state}", OBJ, "RUNNING FAILED", id="recursive"),
        pytest.param('{.items[?(@.state == "FAILED")].name}', OBJ, "b", id="filter"),
        pytest.param("{.items[?(@.state == 'FAILED')].name}", OBJ, "b", id="filter-single-quotes"),
        pytest.param("{.items[?(@.n > 1.0)].name}", OBJ, "b", id="filter-float-literal"),
        pytest.param("{.items[?(@.state)].name}", OBJ, "a b", id="filter-exists"),
        pytest.param("{.labels['app\\.kubernetes\\.io/name']}", OBJ, "foo", id="escaped-dots-in-key"),
        pytest.param("{.labels.app\\.kubernetes\\.io/name}", OBJ, "foo", id="escaped-dots-in-path"),
        pytest.param("{.labels.with-dash}", OBJ, "d", id="dash-in-dotted-name"),
        pytest.param("{.café}", OBJ, "unicode-key", id="unicode-dotted-name"),
        pytest.param("{.日本['語']}", OBJ, "jp", id="unicode-quoted-name"),
        pytest.param("{.flags.ready}", OBJ, "true", id="boolean"),
        pytest.param("{.flags.ratio}", OBJ, "0.5", id="float"),
        pytest.param("{.flags.none}", OBJ, "null", id="null"),
        pytest.param("{.a}}", {"a": "x"}, "x}", id="stray-closing-brace-is-literal"),
        pytest.param("{1}", {}, "1", id="integer-literal"),
        pytest.param("{true}", {}, "true", id="bool-literal"),
        # client-go's own cases (jsonpath_test.go), on JSON-decoded input.
        pytest.param("hello jsonpath", None, "hello jsonpath", id="client-go-plain"),
        pytest.param("{..}", [1, 2, 3], "[1,2,3]", id="client-go-recursive"),
        pytest.param('{"{"}', None, "{", id="client-go-quote"),
        pytest.param("{[1,3,4]}", [0, 1, 2, 3, 4], "1 3 4", id="client-go-union"),
        pytest.param("{[0:2]}", ["Monday", "Tudesday"], "Monday Tudesday", id="client-go-array"),
        pytest.param("{[?(@.z)].id}", POINTS, "i2 i5", id="client-go-exists-filter"),
        pytest.param("{[0]['id']}", POINTS, "i1", id="client-go-bracket-key"),
        pytest.param(
            "{range .items[*]}{.metadata.name}, {end}{.kind}",
            NODES,
            "127.0.0.1, 127.0.0.2, List",
            id="client-go-range-item",
        ),
        pytest.param(
            '{range .items[*]}{.metadata.name}{"\\t"}{end}',
            NODES,
            "127.0.0.1\t127.0.0.2\t",
            id="client-go-range-item-with-quote",
        ),
        pytest.param(
            "{.items[*].status.addresses[*].address}",
            NODES,
            "127.0.0.1 127.0.0.2 127.0.0.3",
            id="client-go-range-addresses",
        ),
        pytest.param(
            "{range .items[*]}{range .status.addresses[*]}{.address}, {end}{end}",
            NODES,
            "127.0.0.1, 127.0.0.2, 127.0.0.3, ",
            id="client-go-double-range",
        ),
        pytest.param(
            "{.items[*]['metadata.name', 'status.capacity']}",
            NODES,
            '127.0.0.1 127.0.0.2 {"cpu":"4"} {"cpu":"8"}',
            id="client-go-union-nodes-capacity",
        ),
        pytest.param(
            "{range .items[*]}[{.metadata.name}, {.status.capacity}] {end}",
            NODES,
            '[127.0.0.1, {"cpu":"4"}] [127.0.0.2, {"cpu":"8"}] ',
            id="client-go-range-nodes-capacity",
        ),
        pytest.param('{.users[?(@.name=="e2e")].user.password}', NODES, "secret", id="client-go-user-password"),
        pytest.param(
            "{.items[0].metadata.labels.kubernetes\\.io/hostname}", NODES, "127.0.0.1", id="client-go-hostname"
        ),
        pytest.param(
            '{.items[?(@.metadata.labels.kubernetes\\.io/hostname=="127.0.0.1")].kind}',
            NODES,
            "None",
            id="client-go-hostname-filter",
        ),
        pytest.param("{.items[?(@..ready==true)].metadata.name}", NODES, "127.0.0.1", id="client-go-bool-item"),
        pytest.param("{..name}", NODES, "127.0.0.1 127.0.0.2 myself e2e", id="client-go-recursive-name"),
        pytest.param("{ .bools[-1] }", TYPES, "false", id="client-go-bool-slice-index"),
        pytest.param("{ .bools[:4:2] }", TYPES, "true true", id="client-go-bool-step"),
        pytest.param("{ .integers }", TYPES, "[1,2,3,4]", id="client-go-integer-slice"),
        pytest.param("{ .integers[-2] }", TYPES, "3", id="client-go-integer-index-reverse"),
        pytest.param("{ .floats }", TYPES, "[1,2.2,3.3,4]", id="client-go-float-slice"),
        pytest.param("{ .floats[0:2] }", TYPES, "1 2.2", id="client-go-float-sub-slice"),
        pytest.param("{ .strings }", TYPES, '["one","two","three","four"]', id="client-go-string-slice"),
        pytest.param("{ .interfaces[:4:2] }", TYPES, "true 1", id="client-go-interface-step"),
        pytest.param("{ .maps[0] }", TYPES, '{"name":"one","value":1}', id="client-go-map-index"),
        pytest.param("{.spec.containers[0:0].name}", CONTAINERS, "", id="client-go-empty-slice"),
        pytest.param(
            "{.spec.containers[0:-1].name}", CONTAINERS, "fake0 fake1 fake2 fake3 fake4", id="client-go-negative-end"
        ),
        pytest.param("{.spec.containers[-2:].name}", CONTAINERS, "fake4 fake5", id="client-go-negative-start"),
        pytest.param("{.spec.containers[5:5].name}", CONTAINERS, "", id="client-go-empty-at-end"),
        pytest.param("{.spec.containers[0:6:5].name}", CONTAINERS, "fake0 fake5", id="client-go-step-5"),
        pytest.param(
            '{range .items[*]}{.metadata.name}{":"}{range @.spec.containers[*]}{.name}{","}{end}{"+"}{end}',
            PODS,
            "pod1:foo,bar,+pod2:baz,+",
            id="client-go-nested-range",
        ),
    ],
)
def test_render(template: str, obj: Any, rendered: str) -> None:
    assert parse_template(template).render(obj) == rendered


@pytest.mark.parametrize(
    ("template", "obj", "error"),
    [
        pytest.param("{.hello}", NODES, "hello is not found", id="client-go-nonexistent-field"),
        pytest.param(
            "{.items[0].metadata.labels[0]}",
            NODES,
            "map[string]interface {} is not array or slice",
            id="client-go-invalid-array",
        ),
        pytest.param(
            "{.items[?(@.kind<>10)]}", NODES, "unrecognized filter operator <>", id="client-go-invalid-filter-operator"
        ),
        pytest.param(
            "{.spec.containers[-7].name}", CONTAINERS, "array index out of bounds", id="client-go-index-out-of-bounds"
        ),
        pytest.param(
            "{.spec.containers[3:1].name}",
            CONTAINERS,
            "starting index 3 is greater than ending index 1",
            id="client-go-start-after-end",
        ),
        pytest.param("{.spec.containers[0:6:0].name}", CONTAINERS, "step must be > 0", id="client-go-zero-step"),
        # Karmada decodes the status into `any`: numbers are float64, an integer literal is Go's int.
        pytest.param(
            "{.items[?(@.n > 1)].name}",
            OBJ,
            "incompatible types for comparison",
            id="integer-literal-against-a-float64",
        ),
        pytest.param("{.labels['app.kubernetes.io/name']}", OBJ, "app is not found", id="unescaped-dots-in-key"),
        pytest.param(
            '{.items[?(@.missing == "x")].name}',
            OBJ,
            "missing is not found",
            id="client-go-filter-on-a-sometimes-missing-key",
        ),
    ],
)
def test_evaluation_errors_are_client_gos(template: str, obj: Any, error: str) -> None:
    with pytest.raises(JSONPathError, match=re.escape(error)):
        parse_template(template).render(obj)


def test_a_filter_matching_nothing_renders_empty_like_client_go() -> None:
    assert parse_template('{ .items[?(@.state == "GONE")].name }').render(OBJ) == ""


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
        pytest.param("{ .jobStatus.jobId", "unclosed action", id="unclosed"),
        pytest.param("{ .a\n}", "unclosed action", id="newline-in-action"),
        pytest.param("{\t.a}", "unrecognized character in action: U+0009", id="tab"),
        pytest.param('{ .a["b"] }', 'invalid array index "b"', id="double-quoted-key"),
        pytest.param("{ .a['it\\'s'] }", "invalid array index", id="quote-in-key"),
        pytest.param("{ .a[b] }", "invalid array index b", id="bare-subscript"),
        pytest.param("{ .a[0 }", "unterminated array", id="unterminated-array"),
        pytest.param("{ .a[?(@.b == 1) }", "unclosed array expect ]", id="unclosed-filter"),
        pytest.param("{ .a[?(@.b == 1", "unterminated filter", id="unterminated-filter"),
        pytest.param('{"abc}', "unterminated quoted string", id="unterminated-quote"),
        pytest.param("{" + "." * 60 + "Price}", "invalid multiple recursive descent", id="client-go-superrecurfields"),
        pytest.param("{ jobStatus.jobId }", "unrecognized identifier 'jobStatus'", id="no-leading-dot"),
        pytest.param("{end}", "{end} without a {range}", id="end-without-range"),
        pytest.param("{range .a[*]}{@}{end}{end}", "{end} without a {range}", id="client-go-redundant-end"),
        pytest.param(
            "{ .a }" + "x" * MAX_TEMPLATE_LENGTH, f"longer than {MAX_TEMPLATE_LENGTH} characters", id="too-long"
        ),
    ],
)
def test_syntax_errors(template: str, reason: str) -> None:
    with pytest.raises(JSONPathSyntaxError) as error:
        parse_template(template)

    assert reason in str(error.value)


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        pytest.param("true", "no {...} action", id="constant-karmada-5788"),
        pytest.param("{range .items[*]}{.name}{end}", "range loop", id="range"),
        pytest.param("{.items[*].name}", "several values", id="wildcard"),
        pytest.param("{..name}", "several values", id="recursive"),
        pytest.param("{.items[0:2].name}", "several values", id="slice"),
        pytest.param("{.items[?(@.n > 1)].name}", "int literal", id="integer-filter"),
    ],
)
def test_valid_forms_that_may_not_yield_one_label_value_are_flagged(template: str, problem: str) -> None:
    assert any(problem in found for found in parse_template(template).unusable_as_label())


@pytest.mark.parametrize(
    "template",
    [
        "{ .jobStatus.jobId }",
        '{"job-"}{.jobStatus.jobId}',
        "{.items[0].name}",
        "{.items[-1].name}",
        '{.items[?(@.state == "x")].name}',
    ],
)
def test_single_value_forms_are_not_flagged(template: str) -> None:
    assert parse_template(template).unusable_as_label() == []


@pytest.mark.parametrize("value", [None, 1, ["{ .a }"], {"jsonPath": "{ .a }"}, b"{ .a }"])
def test_non_string_is_a_syntax_error(value: Any) -> None:
    with pytest.raises(JSONPathSyntaxError, match="must be a string"):
        parse_template(value)


def test_template_at_the_length_limit_parses() -> None:
    template = "{ .a }" + "x" * (MAX_TEMPLATE_LENGTH - 6)

    assert parse_template(template).render({"a": "v"}) == "v" + "x" * (MAX_TEMPLATE_LENGTH - 6)


@pytest.mark.parametrize(
    ("template", "obj"),
    [
        pytest.param("{ .jobStatus.jobID }", STATUS, id="documented-typo-matches-nothing"),
        pytest.param("{ .status.jobStatus.jobId }", STATUS, id="status-prefix-is-not-reflected"),
        pytest.param("{ .a.b }", {"a": "scalar"}, id="field-of-scalar"),
        pytest.param("{ .a }", [], id="list-root"),
        pytest.param("{ .a }", None, id="null-root"),
        pytest.param("found-{ .jobStatus.jobId }-{ .missing }", STATUS, id="second-expression-missing"),
    ],
)
def test_missing_key_is_an_error_like_karmada(template: str, obj: Any) -> None:
    with pytest.raises(JSONPathNotFound, match="is not found"):
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
def test_parse_raises_only_syntax_errors_and_render_only_evaluation_errors(template: str, obj: Any) -> None:
    try:
        parsed = parse_template(template)
    except JSONPathSyntaxError:
        return
    assert isinstance(parsed.field_names(), frozenset)
    assert isinstance(parsed.unusable_as_label(), list)
    try:
        assert isinstance(parsed.render(obj), str)
    except JSONPathError:
        pass


@pytest.mark.parametrize(
    ("number", "fmt", "marshal"),
    [
        (2.0, "2", "2"),
        (0.5, "0.5", "0.5"),
        (1e6, "1e+06", "1000000"),
        (123456.0, "123456", "123456"),
        (1730000000000.0, "1.73e+12", "1730000000000"),
        (1e21, "1e+21", "1e+21"),
        (0.0001, "0.0001", "0.0001"),
        (0.00001, "1e-05", "0.00001"),
        (1e-7, "1e-07", "1e-7"),
        (-2.5, "-2.5", "-2.5"),
    ],
)
def test_numbers_print_as_go_prints_a_float64(number: float, fmt: str, marshal: str) -> None:
    assert go_float(number) == fmt
    assert go_json(number) == marshal


def test_go_json_sorts_keys_and_escapes_html() -> None:
    assert go_json({"b": "<&>", "a": [1, None, True]}) == '{"a":[1,null,true],"b":"\\u003c\\u0026\\u003e"}'
