"""The config file as a JSON Schema, from the declarations (`declared()`): the chart's `config` value is checked by
helm against it (chart/failover-relay/values.schema.json, `definitions.relayConfig`), so `--set config.server.prot=1`
or an unquoted `mode: on` fails at `helm install`, naming the value, instead of at the relay's start.

`python -m relay.settings.json_schema chart/failover-relay/values.schema.json` writes it into that file;
tests/chart fails when the file is stale. The cross-setting checks (relay/settings/loading.py `check_settings`) are
the relay's alone."""

from __future__ import annotations

import json
import sys
import typing
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any

from relay.settings.loading import SECTIONS, Declared, declared, yaml_type

DEFINITION = "relayConfig"
# JSON Schema's names for what YAML gives a setting (relay/settings/loading.py `yaml_type`).
_TYPES = {bool: "boolean", int: "integer", str: "string", list: "array", dict: "object"}
WIDTH = 120  # values.schema.json's lines: a node that fits on one line is written on one


def setting_schema(entry: Declared) -> dict[str, Any]:
    """One setting's value: its type or choices, and its bounds."""
    kind, spec = entry.kind, entry.spec
    if isinstance(kind, type) and issubclass(kind, StrEnum):
        return {"enum": [member.value for member in kind]}
    wanted = yaml_type(kind)
    schema: dict[str, Any] = {"type": _TYPES[wanted] if isinstance(wanted, type) else "number"}
    if wanted is list:
        (item, _) = typing.get_args(kind)
        item_type = yaml_type(item)
        assert isinstance(item_type, type), item  # lists of strings or mappings
        schema["items"] = {"type": _TYPES[item_type]}
    for bound, keyword in ((spec.ge, "minimum"), (spec.gt, "exclusiveMinimum"), (spec.le, "maximum")):
        if bound is not None:
            schema[keyword] = bound
    if spec.lt is not None:
        schema["exclusiveMaximum"] = spec.lt
    return schema


def config_schema() -> dict[str, Any]:
    """The config file: its sections, each with its settings, nothing else."""
    sections: dict[str, dict[str, Any]] = {
        name: {"type": "object", "additionalProperties": False, "properties": {}} for name in SECTIONS
    }
    for key, entry in declared().items():
        section, _, name = key.partition(".")
        sections[section]["properties"][name] = setting_schema(entry)
    return {"type": "object", "additionalProperties": False, "properties": sections}


def compact_json(value: Any, indent: int = 0, prefix: int = 0) -> str:
    """JSON as values.schema.json is written: a node on one line when it fits in WIDTH, else one entry per line."""
    flat = json.dumps(value, ensure_ascii=False)
    if not isinstance(value, Mapping | list) or not value or indent + prefix + len(flat) < WIDTH:
        return flat
    inner = " " * (indent + 2)
    if isinstance(value, Mapping):
        entries = [
            f"{inner}{json.dumps(key)}: {compact_json(item, indent + 2, len(json.dumps(key)) + 2)}"
            for key, item in value.items()
        ]
        return "{\n" + ",\n".join(entries) + "\n" + " " * indent + "}"
    entries = [f"{inner}{compact_json(item, indent + 2)}" for item in value]
    return "[\n" + ",\n".join(entries) + "\n" + " " * indent + "]"


def with_config_schema(values_schema: Mapping[str, Any]) -> dict[str, Any]:
    """The chart's values schema with `config` checked against `config_schema()`."""
    updated = dict(values_schema)
    updated["definitions"] = {**values_schema["definitions"], DEFINITION: config_schema()}
    updated["properties"] = {**values_schema["properties"], "config": {"$ref": f"#/definitions/{DEFINITION}"}}
    return updated


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        sys.stderr.write("usage: python -m relay.settings.json_schema chart/failover-relay/values.schema.json\n")
        return 2
    path = Path(argv[0])
    path.write_text(compact_json(with_config_schema(json.loads(path.read_text()))) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
