"""The AdmissionReview wire format (admission.k8s.io/v1): a request read, its answer completed, the errors of both.

A request is read and checked once (`parse_review`); the handlers return a `Verdict` (or None: not ours to judge);
the answer is completed once from the request and the verdict (`complete`, after controller-runtime's
`Response.Complete(req)`), so the uid is stamped in one place and the wire shape lives in this module alone.

Two kinds of failure, as in kopf's `WebhookError` / `AdmissionError` split:
- `ReviewError` and its children: the *request* is bad (not JSON, not an AdmissionReview, wrong version, too big).
  The server answers with the error's 4xx status and a one-line reason; no AdmissionReview can be built.
- a denial: the request is a fine AdmissionReview but the *object* breaks a rule. That is an AdmissionReview
  response with `allowed: false`, built by the rules in `failover/`.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Mapping
from typing import Any, Literal, NamedTuple, NotRequired, TypedDict, TypeGuard

from failover.core.names import object_key
from failover.core.verdict import Verdict, clip
from webhook.encoding import dumps

API_VERSION = "admission.k8s.io/v1"
KIND = "AdmissionReview"
FORBIDDEN = 403
INTERNAL_ERROR = 500


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


class ClientCertificateRequired(ReviewError):
    """mTLS is on and the caller presented no verified client certificate."""

    status = 401


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
# The objects we admit (Karmada policies, workloads with a pod template, their managedFields) nest a few dozen
# levels at most. 100 leaves room for any of them and keeps every recursive consumer of the object (deepcopy at two
# frames a level, the JSON encoder, jsonpatch) far inside Python's recursion limit of 1000 frames.
MAX_NESTING_DEPTH = 100


class AdmissionRequest(NamedTuple):
    """The parts of an AdmissionReview request the handlers use, checked for type. Immutable like a frozen
    dataclass, and built once per review at about a third of its cost."""

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
        return object_key(self.namespace, self.name)


def parse_review(body: bytes) -> AdmissionRequest:
    """Decode and check an AdmissionReview request body; raise a `ReviewError` naming the first problem."""
    if not body:
        raise EmptyBody("request body is empty; expected an AdmissionReview")
    review = _decode(body)
    if not isinstance(review, dict):
        raise MalformedReview("request body is not a JSON object; expected an AdmissionReview")
    kind = review.get("kind")
    if kind != KIND:
        raise MalformedReview(f"kind is {_short(kind)}; expected {KIND}")
    api_version = review.get("apiVersion")
    if api_version != API_VERSION:
        raise UnsupportedVersion(
            f"apiVersion {_short(api_version)} is not supported; expected {API_VERSION} "
            "(set admissionReviewVersions: [v1])"
        )
    request = review.get("request")
    if not isinstance(request, dict):
        raise MalformedReview("request is missing or not an object")
    uid = request.get("uid")
    if not _is_uid(uid):
        raise MalformedReview("request.uid is missing or not a short string of visible characters")
    gvk = request.get("kind")
    if isinstance(gvk, dict):
        group, version, kind = gvk.get("group"), gvk.get("version"), gvk.get("kind")
    else:
        group = version = kind = None
    # group is empty for the core API group; version and kind never are.
    if not (isinstance(group, str) and isinstance(version, str) and isinstance(kind, str) and version and kind):
        raise MalformedReview(
            "request.kind must be an object with string group, version and kind (version and kind not empty)"
        )
    operation = request.get("operation")
    if not isinstance(operation, str) or operation not in OPERATIONS:
        raise MalformedReview(
            f"request.operation is {_short(operation)}; expected one of " + ", ".join(sorted(OPERATIONS))
        )
    obj = request.get("object")
    old = request.get("oldObject")
    if operation in ("CREATE", "UPDATE") and not isinstance(obj, dict):
        raise MalformedReview(f"request.object must be an object for {operation}")
    if obj is not None and not isinstance(obj, dict):
        raise MalformedReview("request.object must be an object or null")
    if old is not None and not isinstance(old, dict):
        raise MalformedReview("request.oldObject must be an object or null")
    # The apiserver omits empty fields; null is read the same way, any other type is refused (not coerced).
    namespace = _or_default(request.get("namespace"), "")
    name = _or_default(request.get("name"), "")
    dry_run = _or_default(request.get("dryRun"), False)
    if not isinstance(namespace, str) or not isinstance(name, str) or not isinstance(dry_run, bool):
        raise MalformedReview("request.namespace and request.name must be strings, request.dryRun a boolean")
    return AdmissionRequest(
        api_version=api_version,
        uid=uid,
        group=group,
        version=version,
        kind=kind,
        operation=operation,
        namespace=namespace[:253],
        name=name[:253],
        object=obj,
        old_object=old,
        dry_run=dry_run,
    )


def _decode(body: bytes) -> Any:
    """JSON as the apiserver sends it: UTF-8, finite numbers, unique keys, bounded nesting."""
    try:
        # RFC 8259: JSON between systems is UTF-8. json.loads(bytes) would also guess UTF-16/32 from null bytes.
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise MalformedReview(f"request body is not UTF-8 (invalid byte at offset {error.start})") from None
    try:
        value = _DECODER.decode(text)
    except _Unacceptable as error:
        raise MalformedReview(f"request body is not acceptable JSON: {error}") from None
    except RecursionError:
        # json.loads recurses once per level and gives up near Python's recursion limit (about 990 levels).
        raise MalformedReview(f"request body nests deeper than {MAX_NESTING_DEPTH} levels") from None
    except ValueError as error:
        raise MalformedReview(f"request body is not JSON: {_short(error)}") from None
    # Nesting needs as many opening brackets as levels, and counting them (strings included) costs a fraction of a
    # walk; a typical review has a few dozen, so only bodies that could nest too deep are walked.
    if text.count("{") + text.count("[") > MAX_NESTING_DEPTH and _nesting_exceeds(value, MAX_NESTING_DEPTH):
        raise MalformedReview(f"request body nests deeper than {MAX_NESTING_DEPTH} levels")
    return value


class _Unacceptable(ValueError):
    """Valid for Python's json module, but not JSON an apiserver sends; the message says what and is one line."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # Which of two equal keys wins differs between decoders; the apiserver never sends both, so refuse the guess.
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Unacceptable(f"key {_short(key)} appears twice in one object")
            seen.add(key)
    return value


def _no_constant(name: str) -> float:
    raise _Unacceptable(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise _Unacceptable(f"number {_short(text)} is out of range")
    return number


# One decoder for every body: `json.loads` with hooks builds a new JSONDecoder (and its scanner) on each call.
# Duplicate keys are refused by the pairs hook, in the one pass that decodes. A faster decoder that refuses them
# itself (jiter's catch_duplicate_keys, plus a scan for numbers that overflow to infinity, which it lets through)
# measured 18.7 µs against this decoder's 20.5 µs on the benchmark's policy review, while it halves the ceiling's own
# decoding: it would not pay for itself against the same-stack ceiling (docs/benchmarks.md).
_DECODER = json.JSONDecoder(object_pairs_hook=_unique_keys, parse_constant=_no_constant, parse_float=_finite)


def _nesting_exceeds(value: Any, limit: int) -> bool:
    """True when arrays/objects nest more than ``limit`` deep; level by level, so the check itself cannot recurse."""
    level = [value] if isinstance(value, (dict, list)) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        deeper: list[Any] = []
        for container in level:
            children = container.values() if isinstance(container, dict) else container
            deeper += [child for child in children if isinstance(child, (dict, list))]
        level = deeper
    return False


def _is_uid(value: object) -> TypeGuard[str]:
    # Echoed into the response and the logs: control characters, spaces and lone surrogates would let a caller
    # forge log lines; an apiserver's uid is a UUID and has none of them.
    return isinstance(value, str) and 0 < len(value) <= MAX_UID_LENGTH and value.isprintable() and " " not in value


def _or_default(value: Any, default: Any) -> Any:
    return default if value is None else value


def _short(value: Any, limit: int = 60) -> str:
    """A one-line, bounded rendering of a value for an error message; containers are named, not printed."""
    if isinstance(value, dict):
        return "a JSON object"
    if isinstance(value, list):
        return "a JSON array"
    text = repr(value) if not isinstance(value, BaseException) else str(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# The patch keeps the standard library's encoder for allow_nan=False: a non-finite number would make the patch invalid
# JSON for the apiserver (orjson would write null), so it fails here instead. One encoder for every patch:
# json.dumps with arguments builds a new one per call.
_PATCH_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


def complete(request: AdmissionRequest, verdict: Verdict | None) -> AdmissionResponseWire:
    """The answer to `request`: None (nothing of ours) allows; a denial is a 403 naming every finding; an allowing
    verdict carries its JSONPatch, if any (an empty patch means no patch fields at all: a no-op mutation)."""
    response: AdmissionResponseWire = {"uid": request.uid, "allowed": verdict is None or verdict.allowed}
    if verdict is None:
        return response
    if not verdict.allowed:
        response["status"] = {"code": FORBIDDEN, "message": verdict.message, "reason": "Forbidden"}
    elif verdict.patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(_PATCH_ENCODER.encode(list(verdict.patch)).encode()).decode()
    if verdict.warnings:
        # Rules write warnings whole (check and inject print them so); on the wire they keep the advised length.
        response["warnings"] = list(dict.fromkeys(clip(warning) for warning in verdict.warnings))
    if verdict.audit:
        response["auditAnnotations"] = dict(verdict.audit)
    return response


def failed(request: AdmissionRequest, message: str) -> AdmissionResponseWire:
    """The relay itself failed on this object; the apiserver treats it as a rejection with our message."""
    return {
        "uid": request.uid,
        "allowed": False,
        "status": {"code": INTERNAL_ERROR, "message": message, "reason": "InternalError"},
    }


def encode(request: AdmissionRequest, response: AdmissionResponseWire) -> bytes:
    """The AdmissionReview carrying `response`, in the request's apiVersion, as the HTTP body."""
    review: AdmissionReviewWire = {"apiVersion": request.api_version or API_VERSION, "kind": KIND, "response": response}
    return dumps(review)


# The body of a plain allow, around the uid: the same bytes `encode(request, complete(request, None))` writes.
_ALLOWED_HEAD = dumps({"apiVersion": API_VERSION, "kind": KIND, "response": {"uid": ""}})[:-4]
_ALLOWED_TAIL = b',"allowed":true}}'


def answer(request: AdmissionRequest, verdict: Verdict | None) -> bytes:
    """The HTTP body answering `request` with `verdict`. A plain allow (the answer to most reviews) is two constant
    pieces around the encoded uid instead of a response dict built and encoded field by field."""
    if (
        verdict is None or not (verdict.denials or verdict.patch or verdict.warnings or verdict.audit)
    ) and request.api_version == API_VERSION:
        return b"%s%s%s" % (_ALLOWED_HEAD, dumps(request.uid), _ALLOWED_TAIL)
    return encode(request, complete(request, verdict))
