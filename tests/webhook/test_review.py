"""parse_review: a well-formed AdmissionReview v1 is read; every bad body is one ReviewError with a 4xx and one line."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.admission_reviews import admission_review
from tests.policies import flink_policy
from webhook.review import (
    MAX_NESTING_DEPTH,
    MAX_UID_LENGTH,
    EmptyBody,
    MalformedReview,
    ReviewError,
    UnsupportedVersion,
    parse_review,
)


def encoded(review: Any) -> bytes:
    return json.dumps(review).encode()


def review_with(**request_fields: Any) -> dict[str, Any]:
    review = admission_review(flink_policy(), uid="705ab4f5-6393-11e8-b7cc-42010a800002")
    review["request"].update(request_fields)
    return review


def without(review: dict[str, Any], *path: str) -> dict[str, Any]:
    *parents, last = path
    container = review
    for key in parents:
        container = container[key]
    del container[last]
    return review


def refusal(body: bytes) -> ReviewError:
    with pytest.raises(ReviewError) as refused:
        parse_review(body)
    error = refused.value
    assert 400 <= error.status < 500
    message = str(error)
    assert message and "\n" not in message and len(message) <= 200
    return error


# --- the happy path ---------------------------------------------------------------------------------------------


def test_create_review_is_read_with_its_fields():
    policy = flink_policy()
    review = admission_review(policy, uid="705ab4f5-6393-11e8-b7cc-42010a800002", dry_run=True)

    request = parse_review(encoded(review))

    assert request.api_version == "admission.k8s.io/v1"
    assert request.uid == "705ab4f5-6393-11e8-b7cc-42010a800002"
    assert (request.group, request.version, request.kind) == ("policy.karmada.io", "v1alpha1", "PropagationPolicy")
    assert request.group_kind == ("policy.karmada.io", "PropagationPolicy")
    assert request.operation == "CREATE"
    assert (request.namespace, request.name, request.display_name) == ("default", "flink-pp", "default/flink-pp")
    assert request.object == policy and request.old_object is None
    assert request.dry_run is True


def test_update_review_carries_the_old_object():
    old = flink_policy(purgeMode="Never")

    request = parse_review(encoded(admission_review(flink_policy(), "UPDATE", old=old)))

    assert request.operation == "UPDATE" and request.old_object == old


def test_delete_review_may_have_no_object():
    review = review_with(operation="DELETE", object=None, oldObject=flink_policy())

    request = parse_review(encoded(review))

    assert request.object is None and request.old_object == flink_policy()


def test_cluster_scoped_object_has_no_namespace():
    review = without(review_with(), "request", "namespace")

    request = parse_review(encoded(review))

    assert request.namespace == "" and request.display_name == "flink-pp"


def test_core_group_is_the_empty_string():
    request = parse_review(encoded(review_with(kind={"group": "", "version": "v1", "kind": "ConfigMap"})))

    assert request.group == "" and request.kind == "ConfigMap"


def test_null_optional_fields_read_as_absent():
    request = parse_review(encoded(review_with(namespace=None, name=None, dryRun=None)))

    assert (request.namespace, request.name, request.dry_run) == ("", "", False)


def test_nesting_up_to_the_limit_is_read():
    deep: Any = "leaf"
    for _ in range(MAX_NESTING_DEPTH - 3):  # under the review, request and object levels
        deep = [deep]
    review = review_with(object={"spec": deep})

    assert parse_review(encoded(review)).object == {"spec": deep}


# --- not an AdmissionReview at all --------------------------------------------------------------------------------


def test_empty_body_is_refused():
    error = refusal(b"")

    assert isinstance(error, EmptyBody) and error.status == 400 and "empty" in str(error)


@pytest.mark.parametrize("body", [b"not json", b"{", b'{"kind": "AdmissionReview",}', b"\x00\x01\x02", b"   "])
def test_body_that_is_not_json_is_refused(body):
    error = refusal(body)

    assert isinstance(error, MalformedReview) and str(error).startswith("request body is not JSON")


@pytest.mark.parametrize("body", [b"[]", b'"AdmissionReview"', b"42", b"null", b"true"])
def test_json_that_is_not_an_object_is_refused(body):
    assert str(refusal(body)) == "request body is not a JSON object; expected an AdmissionReview"


@pytest.mark.parametrize("kind", ["AdmissionRequest", None, 7, "admissionreview"])
def test_other_kind_is_refused(kind):
    review = review_with()
    review["kind"] = kind

    error = refusal(encoded(review))

    assert isinstance(error, MalformedReview) and "expected AdmissionReview" in str(error)


def test_missing_kind_is_refused():
    assert "kind is None" in str(refusal(encoded(without(review_with(), "kind"))))


def test_v1beta1_review_is_refused_with_the_fix():
    review = review_with()
    review["apiVersion"] = "admission.k8s.io/v1beta1"

    error = refusal(encoded(review))

    assert isinstance(error, UnsupportedVersion) and error.status == 400
    assert str(error) == (
        "apiVersion 'admission.k8s.io/v1beta1' is not supported; expected admission.k8s.io/v1 "
        "(set admissionReviewVersions: [v1])"
    )


@pytest.mark.parametrize("api_version", [None, "v1", "admission.k8s.io/v2", ["admission.k8s.io/v1"]])
def test_other_api_version_is_refused(api_version):
    review = review_with()
    review["apiVersion"] = api_version

    assert isinstance(refusal(encoded(review)), UnsupportedVersion)


def test_huge_value_in_an_error_message_is_shortened():
    review = review_with()
    review["apiVersion"] = "x" * 100_000

    assert len(str(refusal(encoded(review)))) < 200


def test_container_in_an_error_message_is_named_not_printed():
    review = review_with()
    review["kind"] = {"secret": "s3cr3t"}

    message = str(refusal(encoded(review)))

    assert "a JSON object" in message and "s3cr3t" not in message


# --- an AdmissionReview with a bad request ------------------------------------------------------------------------


@pytest.mark.parametrize("request_value", ["missing", None, [], "CREATE", 1])
def test_missing_or_non_object_request_is_refused(request_value):
    review = review_with()
    if request_value == "missing":
        del review["request"]
    else:
        review["request"] = request_value

    assert str(refusal(encoded(review))) == "request is missing or not an object"


@pytest.mark.parametrize("uid", ["missing", None, "", 42, ["a"], {"id": "a"}, True, "u" * (MAX_UID_LENGTH + 1)])
def test_missing_empty_mistyped_or_overlong_uid_is_refused(uid):
    review = without(review_with(), "request", "uid") if uid == "missing" else review_with(uid=uid)

    assert str(refusal(encoded(review))) == "request.uid is missing or not a short string of visible characters"


@pytest.mark.parametrize("uid", ["a\nlevel=error forged", "a b", "\t", "a\u0000", "\ud800", "a\u202e"])
def test_uid_that_could_forge_a_log_line_is_refused(uid):
    assert str(refusal(encoded(review_with(uid=uid)))).startswith("request.uid is missing or not a short string")


def test_uid_of_the_maximum_length_is_read():
    assert parse_review(encoded(review_with(uid="u" * MAX_UID_LENGTH))).uid == "u" * MAX_UID_LENGTH


@pytest.mark.parametrize(
    "gvk",
    [
        "missing",
        None,
        "policy.karmada.io/v1alpha1, Kind=PropagationPolicy",
        {"group": "policy.karmada.io", "version": "v1alpha1"},
        {"group": "policy.karmada.io", "kind": "PropagationPolicy"},
        {"version": "v1alpha1", "kind": "PropagationPolicy"},
        {"group": "policy.karmada.io", "version": 1, "kind": "PropagationPolicy"},
        {"group": "policy.karmada.io", "version": "v1alpha1", "kind": ""},
        {"group": "policy.karmada.io", "version": "", "kind": "PropagationPolicy"},
    ],
)
def test_request_kind_with_missing_or_mistyped_fields_is_refused(gvk):
    review = without(review_with(), "request", "kind") if gvk == "missing" else review_with(kind=gvk)

    assert str(refusal(encoded(review))).startswith("request.kind must be an object with string group, version")


@pytest.mark.parametrize("operation", ["missing", "create", "PATCH", None, 1])
def test_unknown_operation_is_refused(operation):
    review = (
        without(review_with(), "request", "operation") if operation == "missing" else review_with(operation=operation)
    )

    message = str(refusal(encoded(review)))

    assert message.startswith("request.operation is") and "CONNECT, CREATE, DELETE, UPDATE" in message


@pytest.mark.parametrize("operation", ["CREATE", "UPDATE"])
@pytest.mark.parametrize("obj", ["missing", None, [], "policy"])
def test_create_or_update_without_an_object_is_refused(operation, obj):
    review = without(review_with(), "request", "object") if obj == "missing" else review_with(object=obj)
    review["request"]["operation"] = operation
    review["request"]["oldObject"] = flink_policy()

    assert str(refusal(encoded(review))) == f"request.object must be an object for {operation}"


def test_delete_with_a_non_object_object_is_refused():
    review = review_with(operation="DELETE", object="gone")

    assert str(refusal(encoded(review))) == "request.object must be an object or null"


@pytest.mark.parametrize("old", ["policy", [], 0])
def test_non_object_old_object_is_refused(old):
    assert (
        str(refusal(encoded(review_with(operation="UPDATE", oldObject=old))))
        == "request.oldObject must be an object or null"
    )


@pytest.mark.parametrize(
    "field, value",
    [
        ("namespace", 7),
        ("namespace", []),
        ("namespace", False),
        ("name", {"n": 1}),
        ("name", 0),
        ("dryRun", "true"),
        ("dryRun", 0),
        ("dryRun", ""),
    ],
)
def test_mistyped_namespace_name_or_dry_run_is_refused_not_coerced(field, value):
    assert str(refusal(encoded(review_with(**{field: value})))) == (
        "request.namespace and request.name must be strings, request.dryRun a boolean"
    )


# --- hostile JSON -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 100_000 + b"]" * 100_000,
        b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
        b"[" * 100_000,
    ],
    ids=["lists", "objects", "unclosed"],
)
def test_pathological_nesting_is_a_400_not_a_recursion_error(body):
    error = refusal(body)

    assert isinstance(error, MalformedReview)
    assert str(error) == f"request body nests deeper than {MAX_NESTING_DEPTH} levels"


def test_nesting_just_past_the_limit_inside_the_object_is_refused():
    deep: Any = "leaf"
    for _ in range(MAX_NESTING_DEPTH - 2):
        deep = [deep]

    assert "nests deeper than" in str(refusal(encoded(review_with(object={"spec": deep}))))


def test_many_brackets_side_by_side_or_inside_strings_are_not_nesting():
    # Over the limit in count, so the body is walked, but three levels deep.
    spec = {"text": "[{" * 300, "items": [[{}] for _ in range(200)]}

    assert parse_review(encoded(review_with(object={"spec": spec}))).object == {"spec": spec}


@pytest.mark.parametrize(
    "body",
    [
        b'{"kind": "AdmissionReview\xff"}',
        b'{"kind": "\xc3"}',
        b'{"kind": "\xed\xa0\x80"}',  # a UTF-16 surrogate encoded as UTF-8
    ],
)
def test_invalid_utf8_is_refused(body):
    assert str(refusal(body)).startswith("request body is not UTF-8 (invalid byte at offset ")


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32"])
def test_other_unicode_encodings_are_refused(encoding):
    assert "not UTF-8" in str(refusal(json.dumps(review_with()).encode(encoding)))


def test_byte_order_mark_is_refused():
    assert "not JSON" in str(refusal(b"\xef\xbb\xbf" + encoded(review_with())))


def test_non_ascii_text_is_read():
    review = review_with(name="politique-é", uid="uid-✓")

    request = parse_review(json.dumps(review, ensure_ascii=False).encode())

    assert (request.name, request.uid) == ("politique-é", "uid-✓")


@pytest.mark.parametrize(
    "body",
    [
        b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","kind":"AdmissionReview","request":{}}',
        b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"a","uid":"b",'
        b'"kind":{"group":"","version":"v1","kind":"ConfigMap"},"operation":"CREATE","object":{}}}',
        b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"a",'
        b'"kind":{"group":"","version":"v1","kind":"ConfigMap"},"operation":"CREATE",'
        b'"object":{"spec":{"replicas":1,"replicas":100}}}}',
    ],
    ids=["top level", "uid", "inside the object"],
)
def test_duplicate_keys_are_refused(body):
    message = str(refusal(body))

    assert message.startswith("request body is not acceptable JSON: key '") and "appears twice" in message


@pytest.mark.parametrize(
    "number, shown",
    [
        (b"1e999", "number '1e999' is out of range"),
        (b"-1e999", "number '-1e999' is out of range"),
        (b"NaN", "NaN is not a JSON number"),
        (b"Infinity", "Infinity is not a JSON number"),
        (b"-Infinity", "-Infinity is not a JSON number"),
    ],
)
def test_non_finite_numbers_are_refused(number, shown):
    body = encoded(review_with(object={"spec": {"replicas": "PLACEHOLDER"}})).replace(b'"PLACEHOLDER"', number)

    assert str(refusal(body)) == f"request body is not acceptable JSON: {shown}"


def test_integer_with_thousands_of_digits_is_refused():
    body = encoded(review_with(object={"spec": {"replicas": "PLACEHOLDER"}})).replace(b'"PLACEHOLDER"', b"9" * 5000)

    assert str(refusal(body)).startswith("request body is not JSON")


def test_large_and_small_finite_numbers_are_read():
    body = encoded(review_with(object={"spec": {"a": "A", "b": "B", "c": "C"}}))
    body = body.replace(b'"A"', b"1.7976931348623157e308").replace(b'"B"', b"1e-400").replace(b'"C"', b"-0.0")

    spec = parse_review(body).object["spec"]

    assert spec == {"a": 1.7976931348623157e308, "b": 0.0, "c": -0.0}


def test_every_review_error_is_a_4xx_with_a_one_line_message():
    """A sweep over the cases above through one assertion: the contract the server relies on."""
    bodies = [
        b"",
        b"x",
        b"[]",
        b"{}",
        encoded({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1"}),
        b"[" * 5000,
        b"\xff",
        b'{"a":NaN}',
        b'{"a":1,"a":2}',
        encoded(review_with(uid="\n" * 3)),
    ]
    for body in bodies:
        refusal(body)
