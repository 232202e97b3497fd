"""Every config file the documentation shows loads as `serve --config` loads it, and every declared setting
round-trips from YAML with its declared type (`savepoint.storageOptions`, which every S3 user needs, among them)."""

from __future__ import annotations

import re
import typing
from collections.abc import Iterator, Mapping
from datetime import timedelta
from enum import StrEnum
from pathlib import Path
from typing import Any, NamedTuple

import jsonschema
import pytest
import yaml

from relay.cli import build_parser
from relay.settings import SECTIONS, Declared, Settings, declared, open_injection, settings_of
from relay.settings.json_schema import config_schema

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# What the documentation's shell variables stand for in a test (docs/quickstart.md exports them).
VARIABLES = {"CHECKPOINTS": "s3://flink-state/checkpoints"}

FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>```+|~~~+)\s*(?P<info>[\w-]*)")
HEREDOC = re.compile(r"<<-?\s*(?P<quote>['\"]?)(?P<word>\w+)(?P=quote)")
TOP_LEVEL_KEY = re.compile(r"^(?P<key>[A-Za-z_][\w.-]*)\s*:", re.MULTILINE)
VARIABLE = re.compile(r"\$(?:\{(?P<braced>\w+)\}|(?P<plain>[A-Za-z_]\w*))")


class Example(NamedTuple):
    where: str  # "docs/operations.md:543"
    text: str


def fenced_blocks(path: Path) -> Iterator[tuple[int, str, str]]:
    """(line, info string, dedented text) of each fenced code block, at any indentation (list items included)."""
    lines = path.read_text().splitlines()
    index = 0
    while index < len(lines):
        start = FENCE.match(lines[index])
        index += 1
        if not start:
            continue
        indent, fence, body = len(start["indent"]), start["fence"], []
        while index < len(lines) and not lines[index].strip().startswith(fence):
            line = lines[index]
            body.append(line[indent:] if line[:indent].strip() == "" else line.lstrip())
            index += 1
        index += 1
        yield index - len(body) - 1, start["info"].lower(), "\n".join(body) + "\n"


def heredocs(script: str) -> Iterator[tuple[str, str]]:
    """(the command line, the body) of each here-document in a shell block."""
    lines = script.splitlines()
    for number, line in enumerate(lines):
        found = HEREDOC.search(line)
        if found:
            body = []
            for inner in lines[number + 1 :]:
                if inner.strip() == found["word"]:
                    break
                body.append(inner)
            yield line, "\n".join(body) + "\n"


def is_relay_config(text: str, label: str) -> bool:
    """A relay config file: its top-level keys are settings sections. Kubernetes objects (apiVersion, kind) and chart
    values (they have keys of their own, such as mode and config, or are named as a values file or fed to helm)
    are not."""
    keys = {match["key"] for match in TOP_LEVEL_KEY.finditer(text)}
    if not keys or not keys <= set(SECTIONS):
        return False
    first = text.lstrip().partition("\n")[0]
    return not any(word in (first if first.startswith("#") else "") + label for word in ("values", "helm"))


def documented_configs() -> list[Example]:
    found = []
    for path in DOCUMENTS:
        name = path.relative_to(ROOT).as_posix()
        for line, info, text in fenced_blocks(path):
            if info in ("yaml", "yml") and is_relay_config(text, ""):
                found.append(Example(f"{name}:{line}", text))
            elif info in ("sh", "bash", "shell", "console", ""):
                for command, body in heredocs(text):
                    if is_relay_config(body, command):
                        found.append(Example(f"{name}:{line} ({command.strip()})", body))
    return found


EXAMPLES = documented_configs()


def substituted(text: str) -> str:
    def value(match: re.Match[str]) -> str:
        name = match["braced"] or match["plain"]
        if name not in VARIABLES:
            pytest.fail(f"the example uses ${name}: add a test value for it to VARIABLES")
        return VARIABLES[name]

    return VARIABLE.sub(value, text)


def load_as_serve(path: Path) -> Settings:
    """The settings `failover-relay serve --config PATH` starts with (`settings_of`: the file, the flags, the checks),
    and the stores it opens."""
    settings = settings_of(build_parser().parse_args(["serve", "--config", str(path)]))
    if settings.savepoint.checkpoint_root:
        open_injection(settings.savepoint)
    return settings


def test_the_documented_config_examples_are_found() -> None:
    # The example of docs/operations.md "Configuration file" at least: a parser that finds nothing tests nothing.
    assert any(example.where.startswith("docs/operations.md:") for example in EXAMPLES)
    assert any("storageOptions" in example.text for example in EXAMPLES)


@pytest.mark.parametrize("example", EXAMPLES, ids=[example.where for example in EXAMPLES])
def test_every_documented_config_file_loads(tmp_path: Path, example: Example) -> None:
    path = tmp_path / "relay.yaml"
    path.write_text(substituted(example.text))
    settings = load_as_serve(path)
    document = yaml.safe_load(path.read_text())
    if "storageOptions" in (document.get("savepoint") or {}):
        assert dict(settings.savepoint.storage_options) == document["savepoint"]["storageOptions"]
    # The chart's `config` value takes the same file (relay/settings/json_schema.py, what helm checks it against).
    jsonschema.validate(document, config_schema())


# Settings whose values are checked beyond their type get a value that passes those checks; every other one gets a
# generic value of its declared type.
VALID = {
    "server.serviceName": "failover-relay",
    "server.namespace": "karmada-system",
    "savepoint.checkpointRoot": "s3://flink/checkpoints",
    "savepoint.layouts": ["{root}/{namespace}/{job_id}/checkpoints"],
    "savepoint.savepointLayouts": ["{root}/savepoints/{namespace}/{job_id}"],
    "savepoint.allowedRoots": ["s3://flink/savepoints", "/mnt/savepoints"],
    "savepoint.jobIdLabel": "example.com/job-id",
    "savepoint.storageOptions": {
        "endpoint_url": "http://minio.storage.svc:9000",
        "key": "flink",
        "secret": "flink-secret",
        "client_kwargs": {"region_name": "eu-west-1"},
        "config_kwargs": {"retries": {"max_attempts": 2}},
    },
    "savepoint.profiles": [
        {
            "kind": "FlinkSessionJob",
            "group": "flink.apache.org",
            "version": "v1beta1",
            "targets": [{"field": "spec.job.initialSavepointPath", "value": "{path}"}],
        }
    ],
}
# What a setting needs beside it to pass the checks across settings.
COMPANIONS: dict[str, dict[str, Any]] = {
    "server.serviceName": {"server.namespace": "karmada-system"},
    "server.namespace": {"server.serviceName": "failover-relay"},
    "server.member": {"savepoint.checkpointRoot": "s3://flink/checkpoints"},
    "fence.storage": {"savepoint.checkpointRoot": "s3://flink/checkpoints"},
    "fence.memberCluster": {"server.member": True, "savepoint.checkpointRoot": "s3://flink/checkpoints"},
    "fence.memberKubeconfig": {
        "server.member": True,
        "savepoint.checkpointRoot": "s3://flink/checkpoints",
        "fence.memberCluster": "member1",
    },
}


def valid_value(entry: Declared) -> Any:
    """A value of the setting's declared type, within its bounds, other than its default where one exists."""
    kind, spec, default = entry.kind, entry.spec, entry.default
    if spec.key in VALID:
        return VALID[spec.key]
    if kind is bool:
        return True if default is None else not default
    if kind in (int, float, timedelta):
        low = spec.ge if spec.ge is not None else spec.gt
        high = spec.le if spec.le is not None else spec.lt
        default = default.total_seconds() if isinstance(default, timedelta) else default
        start = default if default is not None else (low or 0)
        step = 1 if kind is int else 0.5
        kind = float if kind is timedelta else kind
        for candidate in (start + step, start - step, start + 2 * step):
            if all(
                (
                    spec.ge is None or candidate >= spec.ge,
                    spec.gt is None or candidate > spec.gt,
                    spec.le is None or candidate <= spec.le,
                    spec.lt is None or candidate < spec.lt,
                    high is None or low is None or low <= candidate <= high,
                )
            ):
                return kind(candidate)
        raise AssertionError(f"no value within the bounds of {spec.key}")
    if kind is str:
        return f"example-{spec.key.rpartition('.')[2].lower()}"
    if kind is Path:
        return f"/etc/failover-relay/{spec.key.rpartition('.')[2]}"
    if isinstance(kind, type) and issubclass(kind, StrEnum):
        return next(member.value for member in kind if member != default)
    raise AssertionError(f"{spec.key}: no sample for type {kind!r}; add one to VALID")


def as_declared(entry: Declared, value: Any) -> Any:
    """`value` as the setting holds it once loaded."""
    kind = entry.kind
    if typing.get_origin(kind) is tuple:
        return tuple(value)
    if kind is Path:
        return Path(value)
    if kind is timedelta:  # given in seconds
        return timedelta(seconds=value)
    if isinstance(kind, type) and issubclass(kind, StrEnum):
        return kind(value)
    return value


def held(settings: Settings, entry: Declared) -> Any:
    value: Any = settings
    for attribute in entry.path:
        value = getattr(value, attribute)
    return value


def as_yaml(values: Mapping[str, Any]) -> str:
    document: dict[str, dict[str, Any]] = {}
    for key, value in values.items():
        section, _, name = key.partition(".")
        document.setdefault(section, {})[name] = value
    return yaml.safe_dump(document)


@pytest.mark.parametrize("key", list(declared()))
def test_every_setting_round_trips_from_yaml_with_its_declared_type(tmp_path: Path, key: str) -> None:
    entry = declared()[key]
    value = valid_value(entry)
    path = tmp_path / "relay.yaml"
    path.write_text(as_yaml({key: value, **COMPANIONS.get(key, {})}))
    loaded = held(load_as_serve(path), entry)
    assert loaded == as_declared(entry, value)
    assert loaded != entry.default
    origin = typing.get_origin(entry.kind) or entry.kind
    assert isinstance(loaded, origin)


def configuration_example() -> str:
    """The YAML of docs/operations.md "Configuration file", as the page shows it."""
    text = (ROOT / "docs" / "operations.md").read_text()
    section = text[text.index("\n## Configuration file\n") :]
    start = section.index("```yaml\n") + len("```yaml\n")
    return section[start : section.index("\n```", start)]


def test_the_configuration_file_section_names_every_setting() -> None:
    """docs/operations.md "Configuration file" shows every setting, set or commented out, under its section."""
    example = configuration_example()
    shown: set[str] = set()
    current = ""
    for line in example.splitlines():
        top = re.match(r"^(\w+):", line)
        if top:
            current = top.group(1)
            continue
        key = re.match(r"^  (?:# )?(\w+):", line)
        if key:
            shown.add(f"{current}.{key.group(1)}")
    missing = sorted(set(declared()) - shown)
    assert missing == [], f"not in docs/operations.md's configuration example: {missing}"


# Set in the example as a relay in a cluster runs (manifests/deploy/deployment.yaml), not to their defaults.
IN_CLUSTER_VALUES = {
    "server.host",
    "server.certDir",
    "server.serviceName",
    "server.namespace",
    "server.drainSeconds",
    "logging.format",
    "savepoint.checkpointRoot",
}


def test_the_configuration_file_section_gives_each_default_as_declared() -> None:
    example = yaml.safe_load(configuration_example())
    drifted = []
    for name, values in example.items():
        for key, value in (values or {}).items():
            entry = declared()[f"{name}.{key}"]
            default = entry.default
            default = default.total_seconds() if isinstance(default, timedelta) else default
            default = list(default) if isinstance(default, tuple) else default
            if f"{name}.{key}" not in IN_CLUSTER_VALUES and value != default:
                drifted.append(f"{name}.{key}: {value!r}, declared {default!r}")
    assert drifted == []
