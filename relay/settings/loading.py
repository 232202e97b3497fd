"""The loader: the config file, then any other values by config key (the flags), read through the declarations.

`declared()` is the one walk over the dataclasses of relay/settings/declarations.py: every setting by its config key,
with its place in `Settings`, its declaration and its type. `load_settings` reads the YAML file through it, `apply`
converts and sets values by key (the file's and the flags' alike), and `check_settings` enforces every declared bound
and choice, then the checks across settings, on the result; so a value is refused the same way whichever way it came
in: `SettingsError`, one line naming the key (the command exits 2).

The config file is strict: an unknown key or a value of the wrong type stops start-up with a message naming it,
because a typo in a failure-mode setting should not silently fall back to a default.
"""

from __future__ import annotations

import math
import typing
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, fields, is_dataclass, replace
from datetime import timedelta
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import Any

from failover.core.loop_settings import FencingMode
from failover.core.names import is_dns_label
from failover.core.setting_spec import Spec, spec_of
from failover.state.state_roots import DirectoryRefused, parse_state_url
from relay.settings.declarations import ControllerMode, Settings, SettingsError
from relay.settings.masking import has_password, secret_in_url

SECTIONS = ("server", "logging", "savepoint", "controllers", "fence")
# A config file is a few kilobytes; profiles and storage options included, far below this.
MAX_CONFIG_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Declared:
    """One setting as the loader sees it: where it lives in Settings, its declaration and its type."""

    path: tuple[str, ...]  # attribute names from Settings down, e.g. ("savepoint", "failure_mode")
    spec: Spec
    kind: Any  # the annotation, without "| None"
    optional: bool
    default: Any

    @property
    def dest(self) -> str:
        """The argparse destination of its flag."""
        return "setting:" + self.spec.key


@cache
def declared() -> dict[str, Declared]:
    """Every setting by config key ("server.port"), from the dataclasses' fields."""
    found: dict[str, Declared] = {}

    def walk(cls: type, path: tuple[str, ...]) -> None:
        hints = typing.get_type_hints(cls)
        for item in fields(cls):
            hint = hints[item.name]
            if isinstance(hint, type) and is_dataclass(hint):
                walk(hint, (*path, item.name))
                continue
            spec = spec_of(item.metadata)
            if spec is None:  # a knob no configuration sets (failover/core/loop_settings.py says why)
                continue
            arguments = typing.get_args(hint)
            optional = type(None) in arguments and typing.get_origin(hint) is not tuple
            kind = next(a for a in arguments if a is not type(None)) if optional else hint
            default = item.default_factory() if item.default_factory is not MISSING else item.default
            yaml_type(kind)  # a type the loader cannot read stops here, at the first use of the declarations
            found[spec.key] = Declared((*path, item.name), spec, kind, optional, default)

    walk(Settings, ())
    return found


def load_settings(path: Path | None) -> Settings:
    """Read the config file (or nothing) into Settings, refusing unknown keys, wrong types and values out of bounds."""
    settings = Settings()
    if path is None:
        return settings
    try:
        with path.open("rb") as file:  # bounded by what is read, not by stat(): /dev/zero has size 0
            data = file.read(MAX_CONFIG_BYTES + 1)
    except OSError as error:
        raise SettingsError(f"cannot read config file {path}: {error.strerror}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise SettingsError(f"config file {path} is larger than {MAX_CONFIG_BYTES} bytes")
    # Imported here: only a config file needs PyYAML (~0.9 MiB of RSS), and a member relay runs without one.
    import yaml

    from relay.yaml_keys import duplicate_key

    try:
        # Composed once: the nodes are checked for a key given twice, then constructed (yaml.safe_load would parse
        # the text again).
        loader = yaml.SafeLoader(data.decode("utf-8"))
        try:
            node = loader.get_single_node()
            duplicate = None if node is None else duplicate_key(node)
            if duplicate is not None:
                key, line, first = duplicate
                raise SettingsError(f"config file {path}:{line}: key {key!r} already given at line {first}")
            document = (None if node is None else loader.construct_document(node)) or {}
        finally:
            loader.dispose()
    except UnicodeDecodeError as error:
        raise SettingsError(f"config file {path} is not UTF-8 (byte {error.start})") from None
    except yaml.YAMLError as error:
        raise SettingsError(f"config file {path} is not valid YAML: {' '.join(str(error).split())}") from None
    except RecursionError:  # PyYAML composes nested collections recursively
        raise SettingsError(f"config file {path} nests too deeply") from None
    if not isinstance(document, dict):
        raise SettingsError(
            f"config file {path} must be a mapping with server, logging, savepoint and controllers sections"
        )
    unknown = set(document) - set(SECTIONS)
    if unknown:
        raise SettingsError(f"config file {path}: unknown section(s) {', '.join(sorted(map(str, unknown)))}")
    values: dict[str, Any] = {}
    for name in SECTIONS:
        section = document.get(name) or {}
        if not isinstance(section, dict):
            raise SettingsError(f"config section {name!r} must be a mapping")
        keys = [key.partition(".")[2] for key in declared() if key.startswith(name + ".")]
        for key, value in section.items():
            if key not in keys:
                raise SettingsError(f"{name}.{key}: unknown setting; known: {', '.join(keys)}")
            values[f"{name}.{key}"] = value
    settings = apply(settings, values)
    check_settings(settings)
    return settings


def apply(settings: Settings, values: Mapping[str, Any]) -> Settings:
    """`settings` with each config key in `values` set, after its type is checked and converted."""
    changes: dict[tuple[str, ...], Any] = {}
    for key, value in values.items():
        entry = declared()[key]
        changes[entry.path] = _convert(entry, value)
    return _replace_paths(settings, changes)


def _replace_paths(obj: Any, changes: Mapping[tuple[str, ...], Any]) -> Any:
    direct = {path[0]: value for path, value in changes.items() if len(path) == 1}
    nested: dict[str, dict[tuple[str, ...], Any]] = {}
    for path, value in changes.items():
        if len(path) > 1:
            nested.setdefault(path[0], {})[path[1:]] = value
    for name, inner in nested.items():
        direct[name] = _replace_paths(getattr(obj, name), inner)
    return replace(obj, **direct) if direct else obj


def yaml_type(kind: Any) -> type | tuple[type, ...]:
    """What a value parsed from YAML must be an instance of for a setting of type `kind`.

    `kind` is an annotation, and a generic one (`tuple[str, ...]`, `Mapping[str, Any]`) is no class: isinstance()
    refuses it, so each is mapped to the class YAML gives (a list, a dict) by its origin. `declared()` asks for every
    setting, so a setting of a type not handled here fails at import, never in a user's config file."""
    origin = typing.get_origin(kind)
    if origin is tuple:
        return list
    if kind is Mapping or origin is Mapping:
        return dict
    if isinstance(kind, type) and issubclass(kind, StrEnum):
        return str
    if kind is Path:
        return str
    if kind in (float, timedelta):
        return (int, float)
    if kind in (bool, int, str):
        return typing.cast(type, kind)
    raise TypeError(f"a setting of type {kind!r} cannot be read from YAML: add it to relay.settings.loading.yaml_type")


def _parsed_as(value: Any, kind: Any) -> bool:
    """Whether YAML gave `value` the type a setting of type `kind` needs (a function: the value stays Any)."""
    return isinstance(value, yaml_type(kind))


def _convert(entry: Declared, value: Any) -> Any:
    """A value from the file or a flag as the field's type, or SettingsError naming the key."""
    key, kind = entry.spec.key, entry.kind
    origin = typing.get_origin(kind)
    # bool is an int in Python; it is accepted only where a bool is expected.
    if (isinstance(value, bool) and kind is not bool) or not _parsed_as(value, kind):
        hint = " (quote it: YAML reads on/off/yes/no as booleans)" if isinstance(value, bool) else ""
        raise SettingsError(f"{key}: wrong type {type(value).__name__}, expected {_expected(entry)}{hint}")
    if isinstance(value, dict):  # fsspec takes the options as keyword arguments; their values may nest
        name = next((name for name in value if not isinstance(name, str)), None)
        if name is not None:
            raise SettingsError(f"{key}: option names must be strings ({name!r} is {type(name).__name__})")
    if origin is tuple:
        return tuple(value)
    if kind is timedelta:  # given in seconds; the bounds are checked on them
        if not math.isfinite(value):
            raise SettingsError(f"{key} must be a finite number, not {value}")
        return timedelta(seconds=value)
    if kind is Path:
        if not value.strip():  # Path("") is the working directory, never what was meant
            raise SettingsError(f"{key} must not be empty")
        return Path(value)
    if isinstance(kind, type) and issubclass(kind, StrEnum):
        if value not in kind._value2member_map_:
            raise SettingsError(f"{key} {value!r}: use {_choices(entry)}")
        return kind(value)
    return value


# What YAML must give for a setting, in the words of an error message.
_TYPE_WORDS = {bool: "true or false", int: "a whole number", str: "a string", list: "a list", dict: "a mapping"}


def _expected(entry: Declared) -> str:
    """The value a setting takes, for "wrong type" messages: its choices, or the YAML type."""
    kind = entry.kind
    if isinstance(kind, type) and issubclass(kind, StrEnum):
        return _choices(entry)
    wanted = yaml_type(kind)
    return _TYPE_WORDS.get(wanted, wanted.__name__) if isinstance(wanted, type) else "a number"


def _choices(entry: Declared) -> str:
    return entry.spec.choices_hint or "one of " + ", ".join(member.value for member in entry.kind)


def check_settings(settings: Settings) -> None:
    """Every declared bound and choice, then the checks across settings; the file's and the flags' values alike."""
    for entry in declared().values():
        value: Any = settings
        for attribute in entry.path:
            value = getattr(value, attribute)
        _check_bounds(entry, value)
    for key, name in (("server.serviceName", settings.service_name), ("server.namespace", settings.namespace)):
        # certs/serving_names.py spells the certificate's Service names from these as they are.
        if name is not None and not is_dns_label(name):
            raise SettingsError(f"{key} {name!r} is not a valid Kubernetes name (RFC 1123 label)")
    if bool(settings.service_name) != bool(settings.namespace):
        raise SettingsError("serviceName and namespace go together (they make the certificate's Service names)")
    savepoint = settings.savepoint
    if settings.member:
        if not savepoint.checkpoint_root:
            raise SettingsError(
                "server.member serves the savepoint mutation only: it needs savepoint.checkpointRoot "
                "(or --checkpoint-root)"
            )
        if settings.controllers.mode == ControllerMode.ON or savepoint.work_labels or savepoint.work_savepoints:
            raise SettingsError(
                "server.member runs no reconcile loop and no Work mutation: drop controllers.mode "
                "on, savepoint.workLabels and savepoint.workSavepoints"
            )
    _check_fence(settings)
    if not savepoint.layouts:
        raise SettingsError("savepoint.layouts needs at least one template")
    if savepoint.checkpoint_root is not None and not savepoint.checkpoint_root.strip():
        raise SettingsError("savepoint.checkpointRoot must be a path or URL such as s3://bucket/checkpoints")
    if savepoint.checkpoint_root is not None and has_password(savepoint.checkpoint_root):
        # The root is the prefix of every injected initialSavepointPath, audit annotation and log line.
        raise SettingsError(
            "savepoint.checkpointRoot must not carry a password (user:password@host): it would be "
            "written into every injected path; give credentials in savepoint.storageOptions"
        )
    problem = None if savepoint.checkpoint_root is None else secret_in_url(savepoint.checkpoint_root)
    if problem:
        raise SettingsError(
            f"savepoint.checkpointRoot must not carry {problem}: it would be written into every "
            "injected path and log line; give credentials in savepoint.storageOptions"
        )
    for index, root in enumerate(savepoint.allowed_roots):
        try:  # the same checks as a directory a workload names: absolute, no '..', no credentials
            parse_state_url(root)
        except DirectoryRefused as error:
            raise SettingsError(f"savepoint.allowedRoots[{index}]: {error}") from None
    savepoint.injection_profiles()  # a profile or layout that cannot work stops start-up here, not at a failover


def _check_fence(settings: Settings) -> None:
    """The storage fence's settings against the rest: each side needs the checkpoint storage, and only its own mode."""
    fence, root = settings.fence, settings.savepoint.checkpoint_root
    if fence.storage:  # insisted on; by default it is on only where it works (Settings.storage_fence_on)
        if settings.member:
            raise SettingsError("fence.storage is the control plane's; a member relay takes fence.memberCluster")
        if not root:
            raise SettingsError("fence.storage writes fence records below savepoint.checkpointRoot: set it")
        if settings.controllers.decisions.fencing == FencingMode.OFF:
            raise SettingsError(
                "fence.storage speeds up fencing: it needs controllers.fencing notReady or noExecuteTaint"
            )
    if fence.member_cluster is not None:
        if not settings.member:
            raise SettingsError("fence.memberCluster is for a member relay (server.member, --member)")
        if not is_dns_label(fence.member_cluster):
            raise SettingsError(
                f"fence.memberCluster {fence.member_cluster!r} is not a Karmada cluster name (a DNS label)"
            )
    elif fence.member_kubeconfig is not None:
        raise SettingsError("fence.memberKubeconfig is used only with fence.memberCluster")


def _check_bounds(entry: Declared, value: Any) -> None:
    spec, key = entry.spec, entry.spec.key
    if value is None:
        return
    if isinstance(entry.kind, type) and issubclass(entry.kind, StrEnum):
        if value not in entry.kind._value2member_map_:
            raise SettingsError(f"{key} {value!r}: use {_choices(entry)}")
        return
    if entry.kind is Path and not str(value).strip():
        raise SettingsError(f"{key} must not be empty")
    if isinstance(value, timedelta):
        value = value.total_seconds()
    elif entry.kind not in (int, float):
        return
    if isinstance(value, float) and not math.isfinite(value):
        # NaN compares false with every bound, so it would pass them all (a cache TTL of NaN never expires).
        raise SettingsError(f"{key} must be a finite number, not {value}")
    low = spec.ge if spec.ge is not None else spec.gt
    high = spec.le if spec.le is not None else spec.lt
    if (
        (spec.ge is not None and value < spec.ge)
        or (spec.gt is not None and value <= spec.gt)
        or (spec.le is not None and value > spec.le)
        or (spec.lt is not None and value >= spec.lt)
    ):
        short = key.rpartition(".")[2]
        if low is not None and high is not None:
            if spec.gt is not None and spec.le is not None:
                bounds = f"more than {low:g} and at most {high:g}"
            else:
                bounds = f"between {low:g} and {high:g}"
        elif low is not None:
            bounds = f"{low:g} or more" if spec.ge is not None else f"more than {low:g}"
        else:
            bounds = f"at most {high:g}" if spec.le is not None else f"less than {high:g}"
        raise SettingsError(f"{key} must be {bounds} ({short} {value!r} is out of range)")
