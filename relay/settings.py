"""Settings of `failover-relay`: each declared once, read from defaults, the YAML config file, then flags.

Every setting is one dataclass field declared with `setting(...)` (failover/core/setting_spec.py): its config file
key, its default, its bounds and (when it has one) its command-line flag; its type is the field's annotation. The
reconcile decisions' settings are declared where the decisions read them (failover/core/loop_settings.py
`DecisionSettings`, nested here as `controllers.decisions`); the server's, the savepoint lookup's and the storage
fence's below. One loader reads the file through these declarations, one function turns parsed flags into
overrides, and one check enforces the bounds on the result, so a value is refused the same way whichever way it came
in: exit 2 with one line naming the key.

To add a setting: add a field `name: type = setting("section.configKey", default, ge=..., flag="--name",
help="... (default {default})")` to the section's dataclass, then list its key in the command's flags in
relay/cli.py if it gets one. Nothing else restates it.

The config file is strict: an unknown key or a value of the wrong type stops start-up with a message naming it,
because a typo in a failure-mode setting should not silently fall back to a default.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import typing
from collections.abc import Iterator, Mapping
from dataclasses import MISSING, dataclass, field, fields, is_dataclass, replace
from datetime import timedelta
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from failover.core.api import DEFAULT_JOB_ID_LABEL, GroupKind
from failover.core.loop_settings import DecisionSettings, FencingMode
from failover.core.names import is_dns_label
from failover.core.setting_spec import Spec, setting, spec_of
from failover.core.verdict import clip
from failover.state.checkpoints import DEFAULT_LAYOUT, CheckpointStore, LayoutError, open_store
from failover.state.profiles import InjectionProfile, ProfileError, load_profiles
from failover.state.savepoint import (
    DEFAULT_FAILURE_MODE,
    LOOKUP_CACHE_TTL_SECONDS,
    LOOKUP_DEADLINE_SECONDS,
    FailureMode,
)
from failover.state.state_roots import DirectoryRefused, parse_state_url


class SettingsError(ValueError):
    """The config file or a flag is unusable; the message names the setting."""


class LogFormat(StrEnum):
    AUTO = "auto"  # console on a terminal, JSON otherwise
    JSON = "json"
    CONSOLE = "console"


class LogLevel(StrEnum):
    DEBUG = "debug"
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


class ControllerMode(StrEnum):
    AUTO = "auto"  # run when a kubeconfig or in-cluster config is found
    ON = "on"  # refuse to start without one
    OFF = "off"  # webhook only


def in_cluster() -> bool:
    return "KUBERNETES_SERVICE_HOST" in os.environ


def default_cert_dir() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(state) / "failover-relay" / "certs"


def default_host() -> str:
    # In a Pod the apiserver reaches us through the Service, so every interface; elsewhere loopback only.
    return "0.0.0.0" if in_cluster() else "127.0.0.1"


# Between turning unready and closing the listener: once a pod is terminating it leaves the Service's endpoints, but
# kube-proxy on the apiserver's node (or the apiserver's own endpoint cache) learns of it a moment later and may
# still send us reviews. 5 s is the customary preStop pause; with server.graceSeconds it fits in the default
# terminationGracePeriodSeconds of 30. Outside a cluster nothing routes through endpoints, so there is no pause.
IN_CLUSTER_DRAIN_SECONDS = 5.0


class InjectionSetup(NamedTuple):
    """What a savepoint lookup runs with: the profiles by kind, the checkpoint root's store, the allowed roots'."""

    profiles: dict[GroupKind, InjectionProfile]
    store: CheckpointStore
    allowed_roots: tuple[CheckpointStore, ...]


@dataclass(frozen=True)
class SavepointSettings:
    """Savepoint injection (docs/design.md, "Savepoint injection")."""

    checkpoint_root: str | None = setting(
        "savepoint.checkpointRoot",
        None,
        flag="--checkpoint-root",
        help="shared checkpoint storage (path, file://, s3://, any fsspec URL); enables savepoint injection into "
        "Flink operator resources carrying a job-id label",
    )
    # Below a checkpoint dir: Flink's own layout (Karmada's documented example is "{root}/{namespace}/{job_id}/
    # checkpoints"). docs/restore.md "Where Flink writes state".
    layouts: tuple[str, ...] = setting("savepoint.layouts", (DEFAULT_LAYOUT,))
    savepoint_layouts: tuple[str, ...] = setting("savepoint.savepointLayouts", ())
    # Further roots the checkpoint and savepoint dirs a workload names in its flinkConfiguration may lie in; the
    # checkpoint root is always one. Anything outside them is refused (docs/restore.md "Safety").
    allowed_roots: tuple[str, ...] = setting("savepoint.allowedRoots", ())
    # A path found on an UPDATE of a job the operator already deployed from empty state: also change
    # savepointRedeployNonce, which cancels the job statelessly and restarts it from the path (docs/restore.md
    # "A path that arrives late").
    late_restore: bool = setting("savepoint.lateRestore", False)
    lookup_deadline_seconds: float = setting("savepoint.lookupDeadlineSeconds", LOOKUP_DEADLINE_SECONDS, gt=0, lt=30)
    failure_mode: FailureMode = setting(
        "savepoint.failureMode",
        DEFAULT_FAILURE_MODE,
        flag="--savepoint-failure-mode",
        help="no checkpoint, timeout or storage error: admit unchanged with a warning (open) or deny (closed); "
        "default {default}",
        choices_hint="open or closed",
    )
    cache_ttl_seconds: float = setting("savepoint.cacheTTLSeconds", LOOKUP_CACHE_TTL_SECONDS, ge=0)
    job_id_label: str = setting("savepoint.jobIdLabel", DEFAULT_JOB_ID_LABEL)
    storage_options: Mapping[str, Any] = setting("savepoint.storageOptions", default_factory=dict)
    profiles: tuple[Mapping[str, Any], ...] = setting("savepoint.profiles", ())
    # Preserved-state labels on Karmada Works (control-plane mode). None: on when cluster access (the kubeconfig of
    # the reconcile loop) is found, as the loop itself; True: refuse to start without it; False: off.
    work_labels: bool | None = setting("savepoint.workLabels", None)
    # Also set the restore path inside Works, so member clusters need no webhook. Needs checkpointRoot, checked at
    # start-up (relay/work_labels.py) because the root may come from a flag.
    work_savepoints: bool = setting("savepoint.workSavepoints", False)

    def injection_profiles(self) -> dict[GroupKind, InjectionProfile]:
        """The built-in profiles and the configured ones; SettingsError names the one that cannot work."""
        try:
            return load_profiles(
                self.profiles, label=self.job_id_label, layouts=self.layouts, savepoint_layouts=self.savepoint_layouts
            )
        except ProfileError as error:
            raise SettingsError(str(error)) from None

    def open_injection(self) -> InjectionSetup:
        """The profiles and the stores of checkpointRoot and allowedRoots (no I/O), as serve, inject and status look
        state up; needs checkpointRoot. SettingsError names what cannot work."""
        profiles = self.injection_profiles()
        store = self._open("savepoint.checkpointRoot", self.checkpoint_root or "")  # "": LayoutError, no root
        allowed_roots = tuple(
            self._open(f"savepoint.allowedRoots[{index}]", url) for index, url in enumerate(self.allowed_roots)
        )
        return InjectionSetup(profiles, store, allowed_roots)

    def _open(self, key: str, url: str) -> CheckpointStore:
        try:
            return open_store(url, self.storage_options)
        except LayoutError as error:
            raise SettingsError(str(error)) from None
        # Some fsspec filesystems connect when created (ftp, sftp, smb, and any with a client made eagerly) and fail
        # with their own classes (socket.gaierror, ftplib.error_perm, paramiko's SSHException, a TypeError for an
        # option they do not take): whatever it is, the root cannot be used, said in one line.
        except Exception as error:  # noqa: BLE001  fsspec backends raise anything when they connect
            raise SettingsError(f"{key} {url}: cannot open: {one_line_cause(error, self.storage_options)}") from None


@dataclass(frozen=True)
class ControllerSettings:
    """The reconcile loop (docs/design.md, "The reconcile loop's machinery").

    The decisions' settings are `decisions` (failover/core/loop_settings.py), in the same config section."""

    mode: ControllerMode = setting(
        "controllers.mode",
        ControllerMode.AUTO,
        flag="--no-controllers",
        flag_value=ControllerMode.OFF,
        help="serve the webhook only, even when a kubeconfig or in-cluster config is found",
    )
    kubeconfig: str | None = setting(
        "controllers.kubeconfig",
        None,
        flag="--kubeconfig",
        help="cluster of the reconcile loop (default: in-cluster config, $KUBECONFIG, ~/.kube/config)",
    )
    lease_namespace: str | None = setting(  # None: the Pod's namespace, else "default"
        "controllers.leaseNamespace",
        None,
        flag="--lease-namespace",
        help="namespace of the leader-election Lease (default: the Pod's)",
    )
    lease_name: str = setting("controllers.leaseName", "failover-relay")
    # Workers per binding controller. 32: a new leader's burst of expired tolerations came 1.16x the apiserver's own
    # pace for the same writes with 32, 2.6x with 8, and a storm's conflicts with the taint manager did not rise
    # (docs/benchmarks.md, "The relay's workers: 8 against 32").
    workers: int = setting("controllers.workers", 32, ge=1, le=64)
    # The decisions' knobs, each declared once in failover/core/loop_settings.py under `controllers.`.
    decisions: DecisionSettings = field(default_factory=DecisionSettings)


@dataclass(frozen=True)
class FenceSettings:
    """The storage fence (docs/design.md, "The storage fence"): the control plane writes a fence record to the
    checkpoint storage before it releases an old copy on an unreachable cluster; the member relay of that cluster
    suspends the copy and acknowledges. Off on both sides by default."""

    storage: bool = setting(
        "fence.storage",
        False,
        flag="--storage-fence",
        flag_value=True,
        help="control plane: write fence records to the checkpoint storage and release an old copy as soon as its "
        "member relay acknowledges the suspension (off by default)",
    )
    member_cluster: str | None = setting(
        "fence.memberCluster",
        None,
        flag="--fence-cluster",
        help="member mode: this member's Karmada cluster name; watch its fence records and suspend the copies they "
        "name (off by default)",
    )
    # The member relay's access to its own cluster (get, patch of the Flink resources): in-cluster config when None.
    member_kubeconfig: Path | None = setting(
        "fence.memberKubeconfig",
        None,
        flag="--fence-kubeconfig",
        help="member mode with --fence-cluster: kubeconfig of this member cluster (default: in-cluster config, "
        "$KUBECONFIG, ~/.kube/config)",
    )
    # How often the member relay reads its fence records and the control plane reads an awaited acknowledgement.
    poll_seconds: float = setting("fence.pollSeconds", 2.0, gt=0, le=60)


@dataclass(frozen=True)
class Settings:
    host: str = setting(
        "server.host",
        default_factory=default_host,
        flag="--host",
        help="listen address (default 127.0.0.1, 0.0.0.0 in a cluster)",
    )
    port: int = setting(
        "server.port",
        9443,
        ge=0,
        le=65535,  # 0: any free port (tests, benchmarks)
        flag="--port",
        help="listen port (default {default})",
    )
    cert_dir: Path = setting(
        "server.certDir",
        default_factory=default_cert_dir,
        flag="--cert-dir",
        help="directory of ca.crt, tls.crt, tls.key; generated when absent "
        "(default $XDG_STATE_HOME/failover-relay/certs)",
    )
    service_name: str | None = setting(
        "server.serviceName",
        None,
        flag="--service-name",
        help="in-cluster Service name, added to the certificate's names",
    )
    namespace: str | None = setting(
        "server.namespace", None, flag="--namespace", help="in-cluster namespace of that Service"
    )
    # An AdmissionReview carries the object and, on UPDATE, the old object. etcd refuses requests over 1.5 MiB by
    # default, so one object is at most that; two of them plus the envelope stay under 3 MiB.
    max_body_bytes: int = setting(
        "server.maxBodyBytes",
        3 * 1024 * 1024,
        ge=1024,
        flag="--max-body-bytes",
        help="largest AdmissionReview accepted in bytes (default {default})",
    )
    # Connection caps (webhook/listener.py). A connection costs up to ~85 KB (docs/benchmarks.md); 512 stay far below
    # the Deployment's 512 Mi limit. The per-peer cap counts only connections doing nothing (webhook/fairness.py): the
    # apiserver's one connection per concurrent review (HTTP/1.1) never meets it; half the places idle from one
    # address is already a flood.
    max_connections: int = setting(
        "server.maxConnections",
        512,
        ge=1,
        le=65536,
        flag="--max-connections",
        help="connections open at once, beyond which new ones are closed (default {default})",
    )
    max_connections_per_peer: int = setting(
        "server.maxConnectionsPerPeer",
        256,
        ge=1,
        le=65536,
        flag="--max-connections-per-peer",
        help="idle connections (handshake done, no request) from one address (default {default})",
    )
    # A TLS handshake from the apiserver takes milliseconds; a connection that has not finished one after this
    # long is closed (asyncio's own limit is 60 s, so a connect that never sends a byte was held for a minute).
    handshake_seconds: float = setting("server.tlsHandshakeTimeoutSeconds", 5.0, gt=0, le=60)
    # Keep the caBundle of the webhook configurations named failover-relay in step with our CA (controllers/
    # cabundle.py) whenever cluster access is found; turn off where something else (cert-manager, GitOps) owns it.
    cabundle_sync: bool = setting(
        "server.caBundleSync",
        True,
        flag="--no-cabundle-sync",
        flag_value=False,
        help="never write the caBundle of the webhook configurations (cert-manager or GitOps owns it)",
    )
    # Member clusters need only the FlinkDeployment savepoint mutation (the Flink operator runs there, Karmada's
    # bindings do not): no reconcile loop, no Work mutation and no caBundle sync, so neither the Kubernetes client
    # nor anything the loop needs is imported (RSS ~18 MiB lower, docs/benchmarks.md). The caBundle of the member's
    # webhook configuration then comes from cert-manager or a CA given to `manifests webhook` (docs/operations.md).
    member: bool = setting(
        "server.member",
        False,
        flag="--member",
        flag_value=True,
        help="member cluster: serve the savepoint mutation only (no reconcile loop, Work mutation or caBundle sync)",
    )
    # mTLS: verify the apiserver's client certificate against this CA (its --admission-control-config-file
    # kubeConfigFile gives it one); admissions without a valid one get 401.
    client_ca_file: Path | None = setting(
        "server.clientCAFile",
        None,
        flag="--client-ca-file",
        help="mTLS: admissions must present a client certificate signed by this CA (the apiserver's)",
    )
    # Shutdown: keep serving this long after turning unready (None: IN_CLUSTER_DRAIN_SECONDS in a cluster, 0
    # outside; `drain()`), then give in-flight reviews up to grace_seconds. Their sum must fit in the Pod's
    # terminationGracePeriodSeconds; the apiserver's own webhook timeout is at most 30 s and ours are 3-5 s.
    drain_seconds: float | None = setting(
        "server.drainSeconds",
        None,
        ge=0,
        le=60,
        flag="--drain-seconds",
        help=f"on SIGTERM, keep serving this long after turning unready (default {IN_CLUSTER_DRAIN_SECONDS:g} in a "
        "cluster, 0 outside)",
    )
    grace_seconds: float = setting(
        "server.graceSeconds",
        10.0,
        gt=0,
        le=60,
        flag="--grace-seconds",
        help="then give in-flight reviews up to this long to finish (default {default})",
    )
    log_format: LogFormat = setting(
        "logging.format", LogFormat.AUTO, flag="--log-format", help="auto: console on a terminal, JSON otherwise"
    )
    log_level: LogLevel = setting("logging.level", LogLevel.INFO, flag="--log-level")
    savepoint: SavepointSettings = field(default_factory=SavepointSettings)
    controllers: ControllerSettings = field(default_factory=ControllerSettings)
    fence: FenceSettings = field(default_factory=FenceSettings)

    def drain(self) -> float:
        """The drain on shutdown: drainSeconds, or when unset the customary pause in a cluster and none outside."""
        if self.drain_seconds is not None:
            return self.drain_seconds
        return IN_CLUSTER_DRAIN_SECONDS if in_cluster() else 0.0


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

    try:
        document = yaml.safe_load(data.decode("utf-8")) or {}
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
    raise TypeError(f"a setting of type {kind!r} cannot be read from YAML: add it to relay.settings.yaml_type")


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
        raise SettingsError(f"{key}: wrong type {type(value).__name__}{hint}")
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
        # certs/names.py spells the certificate's Service names from these as they are.
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
    problem = None if savepoint.checkpoint_root is None else _secret_in_url(savepoint.checkpoint_root)
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
    if fence.storage:
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


# A cause follows the key and the root on one line: room for a host name and a reason, not for a library's dump.
MAX_CAUSE_LENGTH = 200
_OBJECT_REPR = re.compile(r"<[\w.]+ object at 0x[0-9a-fA-F]+>:?\s*")  # <urllib3.connection.HTTPConnection object ...>
_ERRNO = re.compile(r"\[Errno -?\d+\]\s*")
_SECRET_OPTION = re.compile(r"secret|password|passwd|token|key|credential|session", re.IGNORECASE)


def one_line_cause(error: BaseException, options: Mapping[str, Any] | None = None) -> str:
    """What `error` says, fit for one line of a start-up error: an OSError's reason without its errno, no object
    reprs, whitespace collapsed, every credential-like string value of the storage `options` masked, clipped."""
    text = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
    text = " ".join(_ERRNO.sub("", _OBJECT_REPR.sub("", text)).split())
    for secret in sorted(_secret_values(options or {}), key=len, reverse=True):  # a secret may contain another
        text = text.replace(secret, "***")
    return clip(text or type(error).__name__, MAX_CAUSE_LENGTH)


def _secret_values(options: Mapping[str, Any]) -> Iterator[str]:
    for name, value in options.items():
        if isinstance(value, Mapping):
            yield from _secret_values(value)
        elif isinstance(value, str) and len(value) >= 4 and _SECRET_OPTION.search(str(name)):
            yield value


def has_password(url: str) -> bool:
    """True for `scheme://user:password@host/...`; plain paths and URLs without a password are False."""
    _, separator, rest = url.partition("://")
    if not separator:
        return False
    authority = rest.partition("/")[0].partition("?")[0].partition("#")[0]
    userinfo, at, _ = authority.rpartition("@")
    return bool(at) and ":" in userinfo


def _secret_in_url(url: str) -> str | None:
    """What in `url` may be a credential: a query or fragment (`?token=`, a presigned `?X-Amz-Signature=`) or a user
    name (a token passed as `https://TOKEN@host/`); None for a plain path or URL."""
    _, separator, rest = url.partition("://")
    if not separator:
        return None
    authority, _, _ = rest.partition("/")
    if "@" in authority.partition("?")[0].partition("#")[0]:
        return "a user name (user@host)"
    if "?" in rest or "#" in rest:
        return "a query or fragment (?token=...)"
    return None


# Command-line flags, derived from the declarations.


def add_setting_flags(parser: argparse.ArgumentParser, *keys: str, helps: Mapping[str, str] | None = None) -> None:
    """Add the flags of these settings to `parser`, each under its one declared name; `helps` says what a flag does
    for this command (config key → help) where the declared help speaks of the server."""
    for key in keys:
        entry = declared()[key]
        spec = entry.spec
        flag = spec.flag
        if flag is None:
            raise ValueError(f"setting {key} has no flag")
        help_text = (helps or {}).get(key) or spec.help
        help_text = help_text.format(default=_shown(entry.default)) if help_text else None
        if spec.flag_value is not None:
            parser.add_argument(
                flag, dest=entry.dest, action="store_const", const=spec.flag_value, default=None, help=help_text
            )
            continue
        options: dict[str, Any] = {"dest": entry.dest, "help": help_text, "default": None}
        if isinstance(entry.kind, type) and issubclass(entry.kind, StrEnum):
            options["choices"] = [member.value for member in entry.kind]
        elif entry.kind in (int, float, timedelta):
            options["type"] = int if entry.kind is int else float
            options["metavar"] = "N" if entry.kind is int else "SECONDS" if key.endswith("Seconds") else "NUMBER"
        else:
            options["metavar"] = (
                "URL"
                if key.endswith("Root")
                else "PATH"
                if entry.kind is Path
                else flag.lstrip("-").upper().replace("-", "_")
            )
        parser.add_argument(flag, **options)


def flag_values(args: argparse.Namespace) -> dict[str, Any]:
    """The settings given on the command line, by config key (flags left out are absent)."""
    return {
        key: getattr(args, entry.dest)
        for key, entry in declared().items()
        if getattr(args, entry.dest, None) is not None
    }


def _shown(value: Any) -> str:
    if isinstance(value, timedelta):
        value = value.total_seconds()
    return value.value if isinstance(value, StrEnum) else f"{value:g}" if isinstance(value, float) else str(value)
