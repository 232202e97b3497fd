"""The AdmissionReview wire format (admission.k8s.io/v1) and the errors of a bad request.

Two kinds of failure, as in kopf's `WebhookError` / `AdmissionError` split:
- `ReviewError` and its children: the *request* is bad (not JSON, not an AdmissionReview, wrong version, too big).
  The server answers with the error's 4xx status and a one-line reason; no AdmissionReview can be built.
- a denial: the request is a fine AdmissionReview but the *object* breaks a rule. That is an AdmissionReview
  response with `allowed: false`, built by the rules in `failover/`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, Mapping, NotRequired, TypedDict

API_VERSION = "admission.k8s.io/v1"
KIND = "AdmissionReview"


class GroupVersionKind(TypedDict):
    group: str
    version: str
    kind: str


class AdmissionRequestWire(TypedDict):
    uid: str
    kind: GroupVersionKind
    resource: NotRequired[Mapping[str, str]]
    name: NotRequired[str]
    namespace: NotRequired[str]
    operation: Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]
    userInfo: NotRequired[Mapping[str, Any]]
    object: NotRequired[Mapping[str, Any] | None]
    oldObject: NotRequired[Mapping[str, Any] | None]
    dryRun: NotRequired[bool]


class StatusWire(TypedDict):
    code: int
    message: str
    reason: NotRequired[str]


class AdmissionResponseWire(TypedDict):
    uid: str
    allowed: bool
    status: NotRequired[StatusWire]
    patch: NotRequired[str]
    patchType: NotRequired[Literal["JSONPatch"]]
    warnings: NotRequired[list[str]]
    auditAnnotations: NotRequired[dict[str, str]]


class AdmissionReviewWire(TypedDict):
    apiVersion: str
    kind: str
    request: NotRequired[AdmissionRequestWire]
    response: NotRequired[AdmissionResponseWire]


class ReviewError(Exception):
    """The HTTP request cannot be read as an AdmissionReview; answered with `status` and the message."""

    status = 400


class EmptyBody(ReviewError):
    pass


class BodyTooLarge(ReviewError):
    status = 413


class UnsupportedMediaType(ReviewError):
    status = 415


class MalformedReview(ReviewError):
    pass


class UnsupportedVersion(ReviewError):
    pass


OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})
# A uid is a Kubernetes UID (36 chars); anything much longer is not from an apiserver and is not echoed back.
MAX_UID_LENGTH = 128


@dataclass(frozen=True)
class AdmissionRequest:
    """The parts of an AdmissionReview request the handlers use, checked for type."""

    api_version: str
    uid: str
    group: str
    version: str
    kind: str
    operation: str
    namespace: str
    name: str
    object: Mapping[str, Any] | None
    old_object: Mapping[str, Any] | None
    dry_run: bool

    @property
    def group_kind(self) -> tuple[str, str]:
        return self.group, self.kind

    @property
    def display_name(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


def parse_review(body: bytes) -> AdmissionRequest:
    """Decode and check an AdmissionReview request body; raise a `ReviewError` naming the first problem."""
    if not body:
        raise EmptyBody("request body is empty; expected an AdmissionReview")
    try:
        review = json.loads(body)
    except (ValueError, RecursionError) as error:
        # RecursionError: json.loads on pathological nesting; a 400 like any other undecodable body.
        raise MalformedReview(f"request body is not JSON: {_short(error)}") from None
    if not isinstance(review, dict):
        raise MalformedReview("request body is not a JSON object; expected an AdmissionReview")
    kind = review.get("kind")
    if kind != KIND:
        raise MalformedReview(f"kind is {_short(kind)}; expected {KIND}")
    api_version = review.get("apiVersion")
    if api_version != API_VERSION:
        raise UnsupportedVersion(f"apiVersion {_short(api_version)} is not supported; expected {API_VERSION} "
                                 "(set admissionReviewVersions: [v1])")
    request = review.get("request")
    if not isinstance(request, dict):
        raise MalformedReview("request is missing or not an object")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid or len(uid) > MAX_UID_LENGTH:
        raise MalformedReview("request.uid is missing or not a short string")
    gvk = request.get("kind")
    if not isinstance(gvk, dict) or not all(isinstance(gvk.get(key), str) for key in ("group", "version", "kind")):
        raise MalformedReview("request.kind must be an object with string group, version and kind")
    operation = request.get("operation")
    if operation not in OPERATIONS:
        raise MalformedReview(f"request.operation is {_short(operation)}; expected one of "
                              + ", ".join(sorted(OPERATIONS)))
    obj = request.get("object")
    old = request.get("oldObject")
    if operation in ("CREATE", "UPDATE") and not isinstance(obj, dict):
        raise MalformedReview(f"request.object must be an object for {operation}")
    if obj is not None and not isinstance(obj, dict):
        raise MalformedReview("request.object must be an object or null")
    if old is not None and not isinstance(old, dict):
        raise MalformedReview("request.oldObject must be an object or null")
    namespace = request.get("namespace") or ""
    name = request.get("name") or ""
    dry_run = request.get("dryRun") or False
    if not isinstance(namespace, str) or not isinstance(name, str) or not isinstance(dry_run, bool):
        raise MalformedReview("request.namespace and request.name must be strings, request.dryRun a boolean")
    return AdmissionRequest(
        api_version=api_version,
        uid=uid,
        group=gvk["group"],
        version=gvk["version"],
        kind=gvk["kind"],
        operation=operation,
        namespace=namespace[:253],
        name=name[:253],
        object=obj,
        old_object=old,
        dry_run=dry_run,
    )


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value) if not isinstance(value, BaseException) else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
