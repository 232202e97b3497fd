"""Constructors of AdmissionReview responses (after controller-runtime's `admission/response.go`).

Every answer the server gives to a well-formed review is built here, so the wire shape lives in one place.
"""

from __future__ import annotations

import base64
import json
from typing import Any, Mapping, Sequence

from failover.verdict import Verdict, clip
from webhook.review import API_VERSION, KIND, AdmissionResponseWire, AdmissionReviewWire

FORBIDDEN = 403
INTERNAL_ERROR = 500


def review(api_version: str, response: AdmissionResponseWire) -> AdmissionReviewWire:
    return {"apiVersion": api_version or API_VERSION, "kind": KIND, "response": response}


def allowed(uid: str, warnings: Sequence[str] = (), audit: Mapping[str, str] | None = None) -> AdmissionResponseWire:
    response: AdmissionResponseWire = {"uid": uid, "allowed": True}
    return _decorate(response, warnings, audit)


def denied(uid: str, message: str, warnings: Sequence[str] = (), audit: Mapping[str, str] | None = None,
           code: int = FORBIDDEN) -> AdmissionResponseWire:
    response: AdmissionResponseWire = {
        "uid": uid,
        "allowed": False,
        "status": {"code": code, "message": message, "reason": "Forbidden" if code == FORBIDDEN else "Invalid"},
    }
    return _decorate(response, warnings, audit)


def patched(uid: str, patch: Sequence[Mapping[str, Any]], warnings: Sequence[str] = (),
            audit: Mapping[str, str] | None = None) -> AdmissionResponseWire:
    """An allowed response carrying a JSONPatch; an empty patch yields no patch fields at all (no-op mutation)."""
    response = allowed(uid, warnings, audit)
    if patch:
        response["patchType"] = "JSONPatch"
        # allow_nan=False: a non-finite number would make the patch invalid JSON for the apiserver; fail here instead.
        encoded = json.dumps(list(patch), separators=(",", ":"), allow_nan=False)
        response["patch"] = base64.b64encode(encoded.encode()).decode()
    return response


def errored(uid: str, message: str) -> AdmissionResponseWire:
    """The webhook itself failed on this object; the apiserver treats it as a rejection with our message."""
    return {"uid": uid, "allowed": False,
            "status": {"code": INTERNAL_ERROR, "message": message, "reason": "InternalError"}}


def from_verdict(uid: str, verdict: Verdict) -> AdmissionResponseWire:
    if not verdict.allowed:
        return denied(uid, verdict.message, verdict.warnings, verdict.audit)
    return patched(uid, verdict.patch, verdict.warnings, verdict.audit)


def _decorate(response: AdmissionResponseWire, warnings: Sequence[str],
              audit: Mapping[str, str] | None) -> AdmissionResponseWire:
    if warnings:
        # Clipped here too, not only by the rules: every warning on the wire stays within the advised length.
        response["warnings"] = [clip(warning) for warning in warnings]
    if audit:
        response["auditAnnotations"] = dict(audit)
    return response
