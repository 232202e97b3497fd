"""Checks an object against a real CRD's structural schema the way the kube-apiserver treats it: type, enum and
format errors are refusals, and a field the schema does not know is pruned silently (so a patch that relies on it
is lost). The CRDs come from the Flink operator's release (`../shared/flink-operator/` beside the repository)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml

FLINK_OPERATOR_CRDS = Path(__file__).resolve().parents[1].parent / "shared" / "flink-operator"


@cache
def crd_schema(plural: str, version: str = "v1beta1") -> dict[str, Any]:
    document = yaml.safe_load((FLINK_OPERATOR_CRDS / f"{plural}.flink.apache.org-v1.yml").read_text())
    for served in document["spec"]["versions"]:
        if served["name"] == version:
            return served["schema"]["openAPIV3Schema"]
    raise LookupError(f"{plural} has no version {version}")


def schema_problems(obj: Mapping[str, Any], plural: str) -> list[str]:
    """Why the apiserver would refuse `obj`, and which of its fields it would prune; empty when it keeps it whole."""
    schema = crd_schema(plural)
    validator = jsonschema.Draft4Validator(schema)
    problems = [f"{'.'.join(map(str, error.absolute_path))}: {error.message}" for error in validator.iter_errors(obj)]
    problems.extend(f"{path}: pruned (unknown field)" for path in _pruned(obj, schema, ""))
    return problems


def _pruned(value: Any, schema: Mapping[str, Any], path: str) -> list[str]:
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return []
    found: list[str] = []
    if isinstance(value, dict):
        properties = schema.get("properties")
        additional = schema.get("additionalProperties")
        for key, child in value.items():
            where = f"{path}.{key}" if path else key
            if properties is not None and key in properties:
                found.extend(_pruned(child, properties[key], where))
            elif isinstance(additional, dict):
                found.extend(_pruned(child, additional, where))
            elif path == "" and key in ("apiVersion", "kind", "metadata"):  # the apiserver's own, not the schema's
                continue
            elif properties is not None:
                found.append(where)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            found.extend(_pruned(item, schema["items"], f"{path}[{index}]"))
    return found
