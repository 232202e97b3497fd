"""Injection profiles: which kinds restart from a savepoint, which labels name the job, which fields get the path.

Built in, for the Flink operator's kinds (`flink.apache.org/v1beta1`):
- FlinkDeployment: `spec.job.initialSavepointPath`, configuration in `spec.flinkConfiguration`;
- FlinkSessionJob: `spec.job.initialSavepointPath`, `spec.flinkConfiguration` (the job's own overrides);
- FlinkBlueGreenDeployment (operator 1.14, FLINK-37515): `spec.template.spec.job.initialSavepointPath`,
  `spec.template.spec.flinkConfiguration`.
For these the decision also reads where the state is from the configuration, sets `upgradeMode` only where the
operator's validator accepts it and never touches `job.state` (failover/state/savepoint.py).

A job id is read from any of several trigger labels (`savepoint.jobIdLabel` first, then Karmada's conventions:
application failover, cluster failover, and `resourcebinding.karmada.io/failover-jobid` of Karmada PR #7478).

Other kinds are configured (`savepoint.profiles` in the config file), for example:

    - kind: MyStatefulJob
      group: example.com
      version: v1
      label: application.karmada.io/failover-jobid      # default: the trigger labels above
      layouts: ["{root}/{job_id}"]                       # default: savepoint.layouts
      targets:
        - {field: spec.restore.path, value: "{path}"}
        - {field: spec.restore.mode, value: savepoint, keep: [savepoint, last-state]}

A configured profile for a built-in kind replaces the built-in one. Every profile is checked when it is loaded, so
one that cannot work (a field path we cannot patch, a template with an unknown field) stops start-up with a
message naming it.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from failover.core.api import (
    DEFAULT_JOB_ID_LABEL,
    FLINK_BLUE_GREEN_DEPLOYMENT,
    FLINK_DEPLOYMENT,
    FLINK_SESSION_JOB,
    RESOURCES_BY_GROUP_KIND,
    GroupKind,
)
from failover.core.labels import label_key_problems
from failover.core.names import is_dns_subdomain
from failover.state.checkpoints import Layout, LayoutError, parse_layout

VALUE_FIELDS = frozenset({"path", "job_id", "namespace"})
# A dotted path of plain field names under spec: the only shape a JSONPatch can create without reading arrays.
_FIELD_PATH = re.compile(r"spec(\.[A-Za-z_][A-Za-z0-9_-]*)+\Z")
_KIND = re.compile(r"[A-Z][A-Za-z0-9]*\Z")
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


# Karmada's label conventions for a preserved job id: the application-failover guide, the cluster-failover guide,
# and the key of Karmada PR #7478 (the binding-level label).
TRIGGER_LABELS = (
    DEFAULT_JOB_ID_LABEL,
    "application.karmada.io/cluster-failover-jobid",
    "resourcebinding.karmada.io/failover-jobid",
)


@dataclass(frozen=True)
class FlinkShape:
    """Where a Flink operator kind keeps its job spec, its configuration and its "deployed once" marker."""

    job: tuple[str, ...]
    configuration: tuple[str, ...]
    # Set once the operator has deployed the resource (`ReconciliationStatus.isBeforeFirstDeployment` is its absence).
    last_reconciled_spec: tuple[str, ...]


@dataclass(frozen=True)
class InjectionProfile:
    name: str
    group: str
    version: str
    kind: str
    labels: tuple[str, ...]  # trigger labels, in order of preference
    layouts: tuple[Layout, ...]
    savepoint_layouts: tuple[Layout, ...]
    targets: tuple[TargetField, ...]
    flink: FlinkShape | None = None  # a Flink operator kind: upgradeMode, warnings and directories from the spec

    @property
    def label(self) -> str:
        """The first trigger label, named in denials."""
        return self.labels[0]

    @property
    def group_kind(self) -> GroupKind:
        return GroupKind(self.group, self.kind)

    @property
    def path_targets(self) -> tuple[TargetField, ...]:
        return tuple(target for target in self.targets if target.takes_path)


_DEPLOYMENT_SHAPE = FlinkShape(
    ("spec", "job"), ("spec", "flinkConfiguration"), ("status", "reconciliationStatus", "lastReconciledSpec")
)
FLINK_SHAPES = {
    FLINK_DEPLOYMENT: _DEPLOYMENT_SHAPE,
    FLINK_SESSION_JOB: _DEPLOYMENT_SHAPE,
    FLINK_BLUE_GREEN_DEPLOYMENT: FlinkShape(
        ("spec", "template", "spec", "job"),
        ("spec", "template", "spec", "flinkConfiguration"),
        ("status", "lastReconciledSpec"),
    ),
}


def trigger_labels(label: str) -> tuple[str, ...]:
    """The configured label first, then Karmada's conventions."""
    return (label, *(other for other in TRIGGER_LABELS if other != label))


def flink_profile(
    group_kind: GroupKind, labels: Sequence[str], layouts: Sequence[Layout], savepoint_layouts: Sequence[Layout] = ()
) -> InjectionProfile:
    shape = FLINK_SHAPES[group_kind]
    path_field = ".".join((*shape.job, "initialSavepointPath"))
    return InjectionProfile(
        name=group_kind.kind,
        group=group_kind.group,
        version=RESOURCES_BY_GROUP_KIND[group_kind].version,
        kind=group_kind.kind,
        labels=tuple(labels),
        layouts=tuple(layouts),
        savepoint_layouts=tuple(savepoint_layouts),
        targets=(TargetField(path_field, "{path}"),),
        flink=shape,
    )


def flink_deployment_profile(
    label: str, layouts: Sequence[Layout], savepoint_layouts: Sequence[Layout] = ()
) -> InjectionProfile:
    return flink_profile(FLINK_DEPLOYMENT, trigger_labels(label), layouts, savepoint_layouts)


def load_profiles(
    configs: Sequence[Any], *, label: str, layouts: Sequence[str], savepoint_layouts: Sequence[str] = ()
) -> dict[GroupKind, InjectionProfile]:
    """The built-in Flink profiles plus the configured ones, by group and kind; raises `ProfileError`."""
    _check_label("savepoint.jobIdLabel", label)
    labels = trigger_labels(label)
    default_layouts = _layouts("savepoint.layouts", layouts, required=True)
    default_savepoints = _layouts("savepoint.savepointLayouts", savepoint_layouts, required=False, savepoints=True)
    profiles = {kind: flink_profile(kind, labels, default_layouts, default_savepoints) for kind in FLINK_SHAPES}
    configured: set[GroupKind] = set()
    for index, config in enumerate(configs):
        profile = parse_profile(
            config, index, labels=labels, layouts=default_layouts, savepoint_layouts=default_savepoints
        )
        if profile.group_kind in configured:
            raise ProfileError(f"savepoint.profiles[{index}]: a second profile for {profile.group_kind}")
        configured.add(profile.group_kind)
        profiles[profile.group_kind] = profile
    return profiles


def parse_profile(
    config: Any,
    index: int,
    *,
    labels: tuple[str, ...],
    layouts: tuple[Layout, ...],
    savepoint_layouts: tuple[Layout, ...],
) -> InjectionProfile:
    where = f"savepoint.profiles[{index}]"
    if not isinstance(config, dict):
        raise ProfileError(f"{where}: must be a mapping with group, version, kind and targets")
    unknown = set(config) - _PROFILE_KEYS
    if unknown:
        raise ProfileError(
            f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))}; known: {', '.join(sorted(_PROFILE_KEYS))}"
        )
    group = _string(config, "group", where, is_dns_subdomain, "a lowercase API group such as flink.apache.org")
    version = _string(config, "version", where, _VERSION.match, "a Kubernetes API version such as v1beta1")
    kind = _string(config, "kind", where, _KIND.match, "a kind such as FlinkSessionJob")
    name = config.get("name", kind)
    if not isinstance(name, str) or not name:
        raise ProfileError(f"{where}.name: must be a non-empty string")
    if "label" in config:
        _check_label(f"{where}.label", config["label"])
        labels = (config["label"],)
    targets_config = config.get("targets")
    if not isinstance(targets_config, list) or not targets_config:
        raise ProfileError(f"{where}.targets: needs at least one {{field, value}} entry")
    targets = tuple(_target(target, f"{where}.targets[{i}]") for i, target in enumerate(targets_config))
    if not any(target.takes_path for target in targets):
        raise ProfileError(f'{where}.targets: no target takes the checkpoint; give one the value "{{path}}"')
    fields = [target.field for target in targets]
    for i, field in enumerate(fields):
        if field in fields[:i]:
            raise ProfileError(f"{where}.targets: field {field} is set twice")
        if any(other.startswith(field + ".") for other in fields):
            raise ProfileError(f"{where}.targets: field {field} contains another target field")
    return InjectionProfile(
        name=name,
        group=group,
        version=version,
        kind=kind,
        labels=labels,
        layouts=_layouts(f"{where}.layouts", config["layouts"], True) if "layouts" in config else layouts,
        savepoint_layouts=(
            _layouts(f"{where}.savepointLayouts", config["savepointLayouts"], False, savepoints=True)
            if "savepointLayouts" in config
            else savepoint_layouts
        ),
        targets=targets,
    )


def _target(config: Any, where: str) -> TargetField:
    if not isinstance(config, dict):
        raise ProfileError(f"{where}: must be a mapping with field and value")
    unknown = set(config) - _TARGET_KEYS
    if unknown:
        raise ProfileError(f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))}; known: field, value, keep")
    field = config.get("field")
    if not isinstance(field, str) or not _FIELD_PATH.match(field):
        raise ProfileError(
            f"{where}.field: {field!r} is not a dotted field path under spec (spec.job.path); "
            "list indexes and other syntax cannot be patched"
        )
    value = config.get("value")
    if not isinstance(value, str):
        raise ProfileError(f'{where}.value: must be a string such as "{{path}}"')
    try:
        parsed = list(string.Formatter().parse(value))
    except ValueError as error:
        raise ProfileError(f"{where}.value {value!r}: {error}") from None
    for _, name, spec, conversion in parsed:
        if name is not None and (name not in VALUE_FIELDS or spec or conversion):
            raise ProfileError(
                f"{where}.value {value!r}: unknown field {{{name}}}; use {{path}}, {{job_id}} or {{namespace}}"
            )
    keep = config.get("keep", [])
    if not isinstance(keep, list) or not all(isinstance(item, str) for item in keep):
        raise ProfileError(f"{where}.keep: must be a list of strings")
    return TargetField(field=field, value=value, keep=frozenset(keep))


def _layouts(where: str, templates: Any, required: bool, savepoints: bool = False) -> tuple[Layout, ...]:
    if isinstance(templates, str) or not isinstance(templates, (list, tuple)):
        raise ProfileError(f"{where}: must be a list of layout templates")
    if required and not templates:
        raise ProfileError(f"{where}: needs at least one layout template")
    try:
        return tuple(parse_layout(template, savepoints=savepoints) for template in templates)
    except LayoutError as error:
        raise ProfileError(f"{where}: {error}") from None


def _string(config: Mapping[str, Any], key: str, where: str, valid: Callable[[str], Any], example: str) -> str:
    value = config.get(key)
    if not isinstance(value, str) or not valid(value):
        raise ProfileError(f"{where}.{key}: {value!r} is not {example}")
    return value


def _check_label(where: str, label: Any) -> None:
    problems = label_key_problems(label) if isinstance(label, str) else ["must be a string"]
    if problems:
        raise ProfileError(f"{where}: {label!r} is not a valid label key: {problems[0]}")
