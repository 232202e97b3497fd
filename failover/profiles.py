"""Injection profiles: which kinds restart from a savepoint, which label names the job, which fields get the path.

FlinkDeployment (`flink.apache.org/v1beta1`) is built in: `spec.job.initialSavepointPath` gets the checkpoint,
`spec.job.upgradeMode` becomes `savepoint` unless it already restores state (`savepoint`, `last-state`), and
`spec.job.state` becomes `running` (the fields users set by hand or through Kyverno, Karmada issue #4969).

Other kinds are configured (`savepoint.profiles` in the config file), for example:

    - kind: FlinkSessionJob
      group: flink.apache.org
      version: v1beta1
      label: application.karmada.io/failover-jobid      # default: savepoint.jobIdLabel
      layouts: ["{root}/{namespace}/{job_id}/checkpoints"]  # default: savepoint.layouts
      targets:
        - {field: spec.job.initialSavepointPath, value: "{path}"}
        - {field: spec.job.upgradeMode, value: savepoint, keep: [savepoint, last-state]}

A configured profile for FlinkDeployment replaces the built-in one. Every profile is checked when it is loaded, so
one that cannot work (a field path we cannot patch, a template with an unknown field) stops start-up with a
message naming it.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from failover.api import FLINK_DEPLOYMENT, FLINK_DEPLOYMENTS, GroupKind
from failover.checkpoints import Layout, LayoutError, parse_layout
from failover.labels import label_key_problems

VALUE_FIELDS = frozenset({"path", "job_id", "namespace"})
# A dotted path of plain field names under spec: the only shape a JSONPatch can create without reading arrays.
_FIELD_PATH = re.compile(r"spec(\.[A-Za-z_][A-Za-z0-9_-]*)+\Z")
_KIND = re.compile(r"[A-Z][A-Za-z0-9]*\Z")
_GROUP = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
_VERSION = re.compile(r"v[0-9]+((alpha|beta)[0-9]+)?\Z")
_PROFILE_KEYS = frozenset({"name", "group", "version", "kind", "label", "layouts", "savepointLayouts", "targets"})
_TARGET_KEYS = frozenset({"field", "value", "keep"})


class ProfileError(ValueError):
    """A profile in the config cannot work; the message names the profile and the key."""


@dataclass(frozen=True)
class TargetField:
    """One field a profile sets: `value` is a template over {path}, {job_id}, {namespace}."""

    field: str
    value: str
    keep: frozenset[str] = frozenset()  # current values that are left as they are

    @property
    def parts(self) -> tuple[str, ...]:
        return tuple(self.field.split("."))

    @property
    def takes_path(self) -> bool:
        return "{path}" in self.value

    def render(self, path: str, job_id: str, namespace: str) -> str:
        return self.value.format(path=path, job_id=job_id, namespace=namespace)


@dataclass(frozen=True)
class InjectionProfile:
    name: str
    group: str
    version: str
    kind: str
    label: str
    layouts: tuple[Layout, ...]
    savepoint_layouts: tuple[Layout, ...]
    targets: tuple[TargetField, ...]

    @property
    def group_kind(self) -> GroupKind:
        return GroupKind(self.group, self.kind)

    @property
    def path_targets(self) -> tuple[TargetField, ...]:
        return tuple(target for target in self.targets if target.takes_path)


FLINK_TARGETS = (
    TargetField("spec.job.initialSavepointPath", "{path}"),
    TargetField("spec.job.upgradeMode", "savepoint", frozenset({"savepoint", "last-state"})),
    TargetField("spec.job.state", "running"),
)


def flink_deployment_profile(label: str, layouts: Sequence[Layout],
                             savepoint_layouts: Sequence[Layout] = ()) -> InjectionProfile:
    return InjectionProfile(
        name="FlinkDeployment", group=FLINK_DEPLOYMENTS.group, version=FLINK_DEPLOYMENTS.version,
        kind=FLINK_DEPLOYMENTS.kind,
        label=label, layouts=tuple(layouts), savepoint_layouts=tuple(savepoint_layouts), targets=FLINK_TARGETS)


def load_profiles(configs: Sequence[Any], *, label: str, layouts: Sequence[str],
                  savepoint_layouts: Sequence[str] = ()) -> dict[GroupKind, InjectionProfile]:
    """The built-in FlinkDeployment profile plus the configured ones, by group and kind; raises `ProfileError`."""
    _check_label("savepoint.jobIdLabel", label)
    default_layouts = _layouts("savepoint.layouts", layouts, required=True)
    default_savepoints = _layouts("savepoint.savepointLayouts", savepoint_layouts, required=False)
    profiles = {FLINK_DEPLOYMENT: flink_deployment_profile(label, default_layouts, default_savepoints)}
    configured: set[GroupKind] = set()
    for index, config in enumerate(configs):
        profile = parse_profile(config, index, label=label, layouts=default_layouts,
                                savepoint_layouts=default_savepoints)
        if profile.group_kind in configured:
            raise ProfileError(f"savepoint.profiles[{index}]: a second profile for {profile.group_kind}")
        configured.add(profile.group_kind)
        profiles[profile.group_kind] = profile
    return profiles


def parse_profile(config: Any, index: int, *, label: str, layouts: tuple[Layout, ...],
                  savepoint_layouts: tuple[Layout, ...]) -> InjectionProfile:
    where = f"savepoint.profiles[{index}]"
    if not isinstance(config, dict):
        raise ProfileError(f"{where}: must be a mapping with group, version, kind and targets")
    unknown = set(config) - _PROFILE_KEYS
    if unknown:
        raise ProfileError(f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))}; "
                           f"known: {', '.join(sorted(_PROFILE_KEYS))}")
    group = _string(config, "group", where, _GROUP, "a lowercase API group such as flink.apache.org")
    version = _string(config, "version", where, _VERSION, "a Kubernetes API version such as v1beta1")
    kind = _string(config, "kind", where, _KIND, "a kind such as FlinkSessionJob")
    name = config.get("name", kind)
    if not isinstance(name, str) or not name:
        raise ProfileError(f"{where}.name: must be a non-empty string")
    profile_label = config.get("label", label)
    _check_label(f"{where}.label", profile_label)
    targets_config = config.get("targets")
    if not isinstance(targets_config, list) or not targets_config:
        raise ProfileError(f"{where}.targets: needs at least one {{field, value}} entry")
    targets = tuple(_target(target, f"{where}.targets[{i}]") for i, target in enumerate(targets_config))
    if not any(target.takes_path for target in targets):
        raise ProfileError(f"{where}.targets: no target takes the checkpoint; give one the value \"{{path}}\"")
    fields = [target.field for target in targets]
    for i, field in enumerate(fields):
        if field in fields[:i]:
            raise ProfileError(f"{where}.targets: field {field} is set twice")
        if any(other.startswith(field + ".") for other in fields):
            raise ProfileError(f"{where}.targets: field {field} contains another target field")
    return InjectionProfile(
        name=name, group=group, version=version, kind=kind, label=profile_label,
        layouts=_layouts(f"{where}.layouts", config["layouts"], True) if "layouts" in config else layouts,
        savepoint_layouts=(_layouts(f"{where}.savepointLayouts", config["savepointLayouts"], False)
                           if "savepointLayouts" in config else savepoint_layouts),
        targets=targets)


def _target(config: Any, where: str) -> TargetField:
    if not isinstance(config, dict):
        raise ProfileError(f"{where}: must be a mapping with field and value")
    unknown = set(config) - _TARGET_KEYS
    if unknown:
        raise ProfileError(f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))}; known: field, value, keep")
    field = config.get("field")
    if not isinstance(field, str) or not _FIELD_PATH.match(field):
        raise ProfileError(f"{where}.field: {field!r} is not a dotted field path under spec (spec.job.path); "
                           "list indexes and other syntax cannot be patched")
    value = config.get("value")
    if not isinstance(value, str):
        raise ProfileError(f"{where}.value: must be a string such as \"{{path}}\"")
    try:
        parsed = list(string.Formatter().parse(value))
    except ValueError as error:
        raise ProfileError(f"{where}.value {value!r}: {error}") from None
    for _, name, spec, conversion in parsed:
        if name is not None and (name not in VALUE_FIELDS or spec or conversion):
            raise ProfileError(f"{where}.value {value!r}: unknown field {{{name}}}; "
                               "use {path}, {job_id} or {namespace}")
    keep = config.get("keep", [])
    if not isinstance(keep, list) or not all(isinstance(item, str) for item in keep):
        raise ProfileError(f"{where}.keep: must be a list of strings")
    return TargetField(field=field, value=value, keep=frozenset(keep))


def _layouts(where: str, templates: Any, required: bool) -> tuple[Layout, ...]:
    if isinstance(templates, str) or not isinstance(templates, (list, tuple)):
        raise ProfileError(f"{where}: must be a list of layout templates")
    if required and not templates:
        raise ProfileError(f"{where}: needs at least one layout template")
    try:
        return tuple(parse_layout(template) for template in templates)
    except LayoutError as error:
        raise ProfileError(f"{where}: {error}") from None


def _string(config: Mapping[str, Any], key: str, where: str, pattern: re.Pattern[str], example: str) -> str:
    value = config.get(key)
    if not isinstance(value, str) or not pattern.match(value):
        raise ProfileError(f"{where}.{key}: {value!r} is not {example}")
    return value


def _check_label(where: str, label: Any) -> None:
    problems = label_key_problems(label) if isinstance(label, str) else ["must be a string"]
    if problems:
        raise ProfileError(f"{where}: {label!r} is not a valid label key: {problems[0]}")
