"""Completing the answer: the AdmissionReview v1 response shapes the apiserver accepts, from a request and a verdict."""

from __future__ import annotations

import base64
import json

import pytest

from failover.core.verdict import MAX_WARNING_LENGTH, Finding, Verdict
from tests.admission_reviews import admission_review, decoded_patch
from tests.policies import flink_policy
from webhook.review import AdmissionRequest, complete, encode, failed, parse_review

UID = "705ab4f5-6393-11e8-b7cc-42010a800002"
DEFAULT_PURGE = [{"op": "add", "path": "/spec/failover/application/purgeMode", "value": "Gracefully"}]
REQUEST: AdmissionRequest = parse_review(json.dumps(admission_review(flink_policy(), uid=UID)).encode())


def patched(patch, warnings=()):
    return complete(REQUEST, Verdict(patch=tuple(patch), warnings=tuple(warnings)))


def test_not_ours_to_judge_is_the_minimal_answer():
    assert complete(REQUEST, None) == {"uid": UID, "allowed": True}


def test_allowed_carries_warnings_and_audit_annotations():
    response = complete(REQUEST, Verdict(warnings=("legacy purge mode",), audit={"failover-relay/rule": "purge-mode"}))

    assert response == {
        "uid": UID,
        "allowed": True,
        "warnings": ["legacy purge mode"],
        "auditAnnotations": {"failover-relay/rule": "purge-mode"},
    }


def test_denied_is_forbidden_with_the_message():
    response = complete(
        REQUEST, Verdict(denials=(Finding("spec.propagateDeps", "must be true; set spec.propagateDeps: true"),))
    )

    assert response == {
        "uid": UID,
        "allowed": False,
        "status": {
            "code": 403,
            "message": "spec.propagateDeps: must be true; set spec.propagateDeps: true",
            "reason": "Forbidden",
        },
    }


def test_patched_carries_a_base64_json_patch():
    response = patched(DEFAULT_PURGE, ["defaulted purgeMode"])

    assert response["allowed"] is True and response["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(response["patch"], validate=True)) == DEFAULT_PURGE
    assert decoded_patch(response) == DEFAULT_PURGE
    assert response["warnings"] == ["defaulted purgeMode"]


def test_empty_patch_yields_no_patch_fields():
    response = patched([])

    assert response == {"uid": UID, "allowed": True}


def test_patch_with_a_non_finite_number_is_refused_rather_than_sent_as_invalid_json():
    with pytest.raises(ValueError):
        patched([{"op": "add", "path": "/spec/x", "value": float("nan")}])


def test_patch_keeps_non_ascii_values_intact():
    patch = [{"op": "add", "path": "/metadata/labels/é", "value": "✓"}]

    assert decoded_patch(patched(patch)) == patch


def test_long_warnings_are_clipped_to_the_advised_length():
    response = complete(REQUEST, Verdict(warnings=("w" * 500, "short")))

    first, second = response["warnings"]
    assert len(first) == MAX_WARNING_LENGTH and first.endswith("…")
    assert second == "short"


def test_warnings_equal_once_clipped_are_sent_once():
    response = complete(REQUEST, Verdict(warnings=("y" * 500, "y" * 400, "short")))

    assert response["warnings"] == ["y" * (MAX_WARNING_LENGTH - 1) + "…", "short"]


def test_warnings_of_a_denial_and_a_patch_are_clipped_too():
    long = "x" * 121
    denial = Verdict(denials=(Finding("spec", "no"),), warnings=(long,))

    assert len(complete(REQUEST, denial)["warnings"][0]) == MAX_WARNING_LENGTH
    assert len(patched(DEFAULT_PURGE, [long])["warnings"][0]) == MAX_WARNING_LENGTH


def test_no_warnings_means_no_warnings_field():
    assert "warnings" not in complete(REQUEST, Verdict(warnings=()))
    assert "auditAnnotations" not in complete(REQUEST, Verdict(warnings=(), audit={}))


def test_failed_is_a_500_inside_the_review():
    response = failed(REQUEST, "failover-relay could not evaluate PropagationPolicy: KeyError")

    assert response == {
        "uid": UID,
        "allowed": False,
        "status": {
            "code": 500,
            "message": "failover-relay could not evaluate PropagationPolicy: KeyError",
            "reason": "InternalError",
        },
    }


def test_encode_wraps_a_response_with_the_requests_api_version():
    assert json.loads(encode(REQUEST, complete(REQUEST, None))) == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": UID, "allowed": True},
    }


def test_encode_without_an_api_version_answers_v1():
    request = REQUEST._replace(api_version="")
    assert json.loads(encode(request, complete(request, None)))["apiVersion"] == "admission.k8s.io/v1"


def test_denying_verdict_becomes_a_denial_with_every_finding():
    verdict = Verdict(
        denials=(
            Finding("spec.propagateDeps", "must be true"),
            Finding("spec.failover.application.decisionConditions.tolerationSeconds", "must not be negative"),
        ),
        warnings=("legacy purge mode",),
        patch=tuple(DEFAULT_PURGE),
    )

    response = complete(REQUEST, verdict)

    assert response["allowed"] is False and "patch" not in response
    assert response["status"]["message"] == (
        "spec.propagateDeps: must be true; "
        "spec.failover.application.decisionConditions.tolerationSeconds: must not be negative"
    )
    assert response["warnings"] == ["legacy purge mode"]


def test_allowing_verdict_with_defaults_becomes_a_patch():
    response = complete(REQUEST, Verdict(patch=tuple(DEFAULT_PURGE)))

    assert decoded_patch(response) == DEFAULT_PURGE


def test_allowing_verdict_without_defaults_has_no_patch():
    assert complete(REQUEST, Verdict()) == {"uid": UID, "allowed": True}


def test_the_uid_is_the_requests_own():
    other = REQUEST._replace(uid="another-uid")
    denial = Verdict(denials=(Finding("spec", "no"),))

    assert {complete(other, verdict)["uid"] for verdict in (None, Verdict(), denial)} == {"another-uid"}
    assert failed(other, "boom")["uid"] == "another-uid"


def test_encoded_review_is_ascii_json_even_with_a_lone_surrogate():
    body = encode(REQUEST, complete(REQUEST, Verdict(denials=(Finding("metadata", "bad label \ud800"),))))

    body.decode("ascii")
    assert json.loads(body)["response"]["status"]["message"] == "metadata: bad label \ud800"
