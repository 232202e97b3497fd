"""A CustomResourceDefinition's structural schema applied to an object, as the kube-apiserver applies it.

In the order of a write through the apiserver (k8s.io/apiextensions-apiserver `pkg/apiserver`):

1. `unknown_fields`: strict decoding, what `kubectl apply` (field validation Strict, the default since Kubernetes
   1.27) reports as `strict decoding error: unknown field "spec.x"`; with `--validate=false` the field is pruned.
2. `defaulted`: null values of non-nullable fields are pruned and `default`s filled in (`structuraldefaulting`).
3. `schema_findings`: types, enums, required fields, bounds, formats int32/int64, list uniqueness
   (`x-kubernetes-list-type` set and map), `x-kubernetes-int-or-string`, and ObjectMeta (name, labels,
   annotations) as `ValidateObjectMetaAccessor` checks it.

Messages follow the apiserver's field errors (`Unsupported value: "X": supported values: ...`, `Required value`),
each with the field path, so `check` reads like `kubectl apply`. Pure functions of the schema and the object.
"""

from __future__ import annotations

import copy
import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from failover.core.fields import is_int
from failover.core.labels import label_key_problems, label_value_problems
from failover.core.verdict import Findings

Schema = Mapping[str, Any]

OBJECT_META_FIELDS = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)
TOP_LEVEL_FIELDS = frozenset({"apiVersion", "kind", "metadata"})
INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
# ValidateAnnotationsSize: all annotations together, keys and values.
MAX_ANNOTATIONS_BYTES = 256 * 1024


@dataclass(frozen=True)
class KindSchema:
    """The openAPIV3Schema one served version of a CRD declares for its kind."""

    group: str
    version: str
    kind: str
    namespaced: bool
    schema: Schema

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"


def unknown_fields(findings: Findings, schema: Schema, obj: Mapping[str, Any]) -> None:
    """Deny every field the schema does not declare (the apiserver's strict decoding)."""
    for key in obj:
        if key in TOP_LEVEL_FIELDS:
            continue
        _unknown(findings, _property(schema, key), obj[key], key, schema)
    metadata = obj.get("metadata")
    if isinstance(metadata, dict):
        for key in metadata:
            if key not in OBJECT_META_FIELDS:
                findings.deny(f"metadata.{key}", _unknown_message(key, OBJECT_META_FIELDS))


def _unknown(findings: Findings, schema: Schema | None, value: Any, path: str, parent: Schema) -> None:
    if schema is None:
        if not parent.get("x-kubernetes-preserve-unknown-fields"):
            findings.deny(path, _unknown_message(path.rpartition(".")[2], (parent.get("properties") or {}).keys()))
        return
    if schema.get("x-kubernetes-preserve-unknown-fields") and "properties" not in schema:
        return
    if isinstance(value, dict) and _is_object(schema):
        if "properties" in schema or not isinstance(schema.get("additionalProperties"), dict):
            if not schema.get("additionalProperties") and not schema.get("x-kubernetes-embedded-resource"):
                for key, item in value.items():
                    _unknown(findings, _property(schema, key), item, f"{path}.{key}", schema)
            return
        for key, item in value.items():
            _unknown(findings, schema["additionalProperties"], item, f"{path}[{_quote(key)}]", schema)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            _unknown(findings, schema["items"], item, f"{path}[{index}]", schema)


def _unknown_message(key: str, known: Any) -> str:
    close = difflib.get_close_matches(key, list(known), n=1) or [k for k in known if k.lower() == key.lower()]
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown field (strict decoding error: Karmada refuses it; with --validate=false it is dropped){hint}"


def defaulted(schema: Schema, obj: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `obj` with non-nullable nulls pruned and the schema's defaults filled in."""
    result = copy.deepcopy(dict(obj))
    for key in list(result):
        if key in TOP_LEVEL_FIELDS:
            continue
        child = _property(schema, key)
        if child is not None:
            result[key] = _default(child, result[key])
    _fill_defaults(schema, result)
    return result


def _default(schema: Schema, value: Any) -> Any:
    if isinstance(value, dict) and _is_object(schema):
        for key in [key for key, item in value.items() if item is None]:
            child = _property(schema, key)
            if child is not None and not child.get("nullable"):
                del value[key]
        for key, item in value.items():
            child = _property(schema, key)
            if child is not None:
                value[key] = _default(child, item)
        _fill_defaults(schema, value)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            value[index] = _default(schema["items"], item)
    return value


def _fill_defaults(schema: Schema, value: dict[str, Any]) -> None:
    for key, child in (schema.get("properties") or {}).items():
        if key not in value and "default" in child:
            value[key] = _default(child, copy.deepcopy(child["default"]))


def schema_findings(findings: Findings, kind: KindSchema, obj: Mapping[str, Any]) -> None:
    """Deny what the apiserver's schema validation and ObjectMeta validation deny."""
    _validate_metadata(findings, obj.get("metadata"), kind.namespaced)
    for key, value in obj.items():
        if key in TOP_LEVEL_FIELDS:
            continue
        child = _property(kind.schema, key)
        if child is not None:
            _validate(findings, child, value, key)
    for key in kind.schema.get("required") or ():
        if key not in obj and key not in TOP_LEVEL_FIELDS:
            findings.deny(key, "Required value")


def _validate(findings: Findings, schema: Schema, value: Any, path: str) -> None:
    if value is None:
        if not schema.get("nullable"):
            findings.deny(path, f'Invalid value: "null": {path} in body must be of type {_type(schema)}: "null"')
        return
    if schema.get("x-kubernetes-int-or-string"):
        if not (isinstance(value, str) or _is_integer(value)):
            findings.deny(path, f"Invalid value: {_show(value)}: must be an integer or a string")
        return
    expected = schema.get("type")
    if expected and not _has_type(value, expected):
        findings.deny(
            path,
            f'Invalid value: "{_json_type(value)}": {path} in body must be of type {expected}: "{_json_type(value)}"',
        )
        return
    enum = schema.get("enum")
    if enum is not None and value not in enum:
        supported = ", ".join(json.dumps(choice) for choice in enum)
        findings.deny(path, f"Unsupported value: {_show(value)}: supported values: {supported}")
    if expected == "integer":
        low, high = INT32 if schema.get("format") == "int32" else INT64
        if not low <= value <= high:
            findings.deny(path, f"Invalid value: must be a {schema.get('format') or 'int64'} integer")
            return
    if expected in ("integer", "number"):
        if "minimum" in schema and value < schema["minimum"]:
            findings.deny(
                path,
                f"Invalid value: {_show(value)}: {path} in body should be greater than or equal to {schema['minimum']}",
            )
        if "maximum" in schema and value > schema["maximum"]:
            findings.deny(
                path,
                f"Invalid value: {_show(value)}: {path} in body should be less than or equal to {schema['maximum']}",
            )
    if expected == "string":
        if "minLength" in schema and len(value) < schema["minLength"]:
            findings.deny(
                path,
                f"Invalid value: {_show(value)}: {path} in body should be at least {schema['minLength']} chars long",
            )
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            findings.deny(path, f"Too long: may not be more than {schema['maxLength']} bytes")
    if isinstance(value, list):
        _validate_list(findings, schema, value, path)
    elif isinstance(value, dict):
        _validate_object(findings, schema, value, path)


def _validate_list(findings: Findings, schema: Schema, value: list[Any], path: str) -> None:
    if "minItems" in schema and len(value) < schema["minItems"]:
        findings.deny(
            path, f"Invalid value: {len(value)}: {path} in body should have at least {schema['minItems']} items"
        )
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        findings.deny(path, f"Too many: {len(value)}: must have at most {schema['maxItems']} items")
    items = schema.get("items")
    if isinstance(items, dict):
        for index, item in enumerate(value):
            _validate(findings, items, item, f"{path}[{index}]")
    list_type = schema.get("x-kubernetes-list-type")
    if list_type == "set":
        seen: set[str] = set()
        for index, item in enumerate(value):
            key = json.dumps(item, sort_keys=True)
            if key in seen:
                findings.deny(f"{path}[{index}]", f"Duplicate value: {_show(item)}")
            seen.add(key)
    elif list_type == "map":
        keys = schema.get("x-kubernetes-list-map-keys") or ()
        seen = set()
        for index, item in enumerate(value):
            if not isinstance(item, dict):
                continue
            key = json.dumps([item.get(name) for name in keys])
            if key in seen:
                shown = ", ".join(f"{name}: {_show(item.get(name))}" for name in keys)
                findings.deny(f"{path}[{index}]", f"Duplicate value: {{{shown}}}")
            seen.add(key)


def _validate_object(findings: Findings, schema: Schema, value: Mapping[str, Any], path: str) -> None:
    for key in schema.get("required") or ():
        if key not in value:
            findings.deny(f"{path}.{key}", "Required value")
    properties = schema.get("properties")
    additional = schema.get("additionalProperties")
    for key, item in value.items():
        child = properties.get(key) if properties else None
        if child is not None:
            _validate(findings, child, item, f"{path}.{key}")
        elif isinstance(additional, dict):
            _validate(findings, additional, item, f"{path}[{_quote(key)}]")


def _validate_metadata(findings: Findings, metadata: Any, namespaced: bool) -> None:
    if not isinstance(metadata, dict):
        findings.deny(
            "metadata",
            "Required value: name or generateName is required"
            if metadata is None
            else f"Invalid value: must be an object, got {_json_type(metadata)}",
        )
        return
    name, generate = metadata.get("name"), metadata.get("generateName")
    if not name and not generate:
        findings.deny("metadata.name", "Required value: name or generateName is required")
    for key in ("name", "generateName", "namespace"):
        value = metadata.get(key)
        if value is not None and not isinstance(value, str):
            findings.deny(f"metadata.{key}", f"Invalid value: must be a string, got {_json_type(value)}")
    if isinstance(name, str) and name and ("/" in name or "%" in name or name in (".", "..")):
        findings.deny("metadata.name", f"Invalid value: {_show(name)}: may not contain '/' or '%', nor be '.' or '..'")
    for section, problems in (("labels", _label_problems), ("annotations", _annotation_problems)):
        entries = metadata.get(section)
        if entries is None:
            continue
        if not isinstance(entries, dict) or not all(isinstance(v, str) for v in entries.values()):
            findings.deny(f"metadata.{section}", "Invalid value: must be a map of strings")
            continue
        for path, message in problems(entries):
            findings.deny(f"metadata.{section}{path}", message)


def _label_problems(labels: Mapping[str, str]) -> list[tuple[str, str]]:
    out = []
    for key, value in labels.items():
        for problem in label_key_problems(key):
            out.append(("", f"Invalid value: {_show(key)}: {problem}"))
        for problem in label_value_problems(value):
            out.append((f"[{_quote(key)}]", f"Invalid value: {_show(value)}: {problem}"))
    return out


def _annotation_problems(annotations: Mapping[str, str]) -> list[tuple[str, str]]:
    out = [
        ("", f"Invalid value: {_show(key)}: {problem}") for key in annotations for problem in label_key_problems(key)
    ]
    size = sum(len(key) + len(value) for key, value in annotations.items())
    if size > MAX_ANNOTATIONS_BYTES:
        out.append(("", f"Too long: must have at most {MAX_ANNOTATIONS_BYTES} bytes"))
    return out


def _property(schema: Schema, key: str) -> Schema | None:
    properties = schema.get("properties")
    if properties and key in properties:
        return cast(Schema, properties[key])  # a structural schema's properties are schemas
    additional = schema.get("additionalProperties")
    return additional if isinstance(additional, dict) else None


def _is_object(schema: Schema) -> bool:
    return schema.get("type") == "object" or "properties" in schema or "additionalProperties" in schema


def _is_integer(value: Any) -> bool:
    # JSON has one number type: 1000.0 (what kubectl sends for YAML's 1e3) decodes into an integer field.
    return is_int(value) or (isinstance(value, float) and value.is_integer())


def _has_type(value: Any, expected: str) -> bool:
    if expected == "integer":
        return _is_integer(value)
    if expected == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if expected == "string":
        return isinstance(value, str)
    if expected == "boolean":
        return isinstance(value, bool)
    if expected == "array":
        return isinstance(value, list)
    if expected == "object":
        return isinstance(value, dict)
    return True


def _type(schema: Schema) -> str:
    return str(schema.get("type") or "object")


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "integer" if _is_integer(value) else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _show(value: Any, limit: int = 60) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = (
        json.dumps(value, ensure_ascii=False, default=str)
        if not isinstance(value, (dict, list))
        else ("{...}" if isinstance(value, dict) else "[...]")
    )
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _quote(key: str) -> str:
    return json.dumps(key, ensure_ascii=False)
