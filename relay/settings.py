"""Settings of `failover-relay serve`: defaults, the YAML config file, then command-line flags, in that order.

The config file is strict: an unknown key or a value of the wrong type stops start-up with a message naming it,
because a typo in a failure-mode setting should not silently fall back to a default.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

import yaml

from failover.api import DEFAULT_JOB_ID_LABEL
from failover.profiles import ProfileError, load_profiles


class SettingsError(ValueError):
    """The config file or a flag is unusable; the message names the setting."""


def in_cluster() -> bool:
    return "KUBERNETES_SERVICE_HOST" in os.environ


def default_cert_dir() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(state) / "failover-relay" / "certs"


@dataclass(frozen=True)
class SavepointSettings:
    """Savepoint injection (DESIGN.md "Preserved state and savepoint injection")."""

    checkpoint_root: str | None = None
    layouts: tuple[str, ...] = ("{root}/{namespace}/{job_id}/checkpoints",)
    savepoint_layouts: tuple[str, ...] = ()
    # The mutating webhook is registered with timeoutSeconds 5; 2 s leaves room for TLS, queueing and the reply.
    lookup_deadline_seconds: float = 2.0
    failure_mode: str = "open"
    cache_ttl_seconds: float = 10.0
    job_id_label: str = DEFAULT_JOB_ID_LABEL
    storage_options: Mapping[str, Any] = field(default_factory=dict)
    profiles: tuple[Mapping[str, Any], ...] = ()
    # Preserved-state labels on Karmada Works (control-plane mode). None: on when cluster access (the kubeconfig of
    # the reconcile loop) is found, as the loop itself; True: refuse to start without it; False: off.
    work_labels: bool | None = None
    # Also set the restore path inside Works, so member clusters need no webhook. Needs checkpointRoot, checked at
    # start-up (relay/work_labels.py) because the root may come from a flag.
    work_savepoints: bool = False


@dataclass(frozen=True)
class ControllerSettings:
    """The reconcile loop (DESIGN.md "Reconcile loop"); the defaults are Karmada's where it has one."""

    # auto: run when a kubeconfig or in-cluster config is found; on: refuse to start without one; off: webhook only.
    mode: str = "auto"
    kubeconfig: str | None = None
    lease_namespace: str | None = None  # None: the Pod's namespace, else "default"
    lease_name: str = "failover-relay"
    workers: int = 2
    # Spelling of purgeMode in written eviction tasks and in policy defaults: "new" for Karmada v1.15+, "legacy"
    # for v1.12-v1.14 CRDs.
    purge_mode_spelling: str = "new"
    graceful_eviction_timeout_seconds: float = 600.0  # karmada-controller-manager --graceful-eviction-timeout
    state_wait_seconds: float = 60.0
    failback: bool = False
    failback_settle_seconds: float = 300.0
    # Fencing of an unreachable cluster (docs/operations.md "Fencing"): off, notReady (the cluster has not been Ready
    # for fenceAfterSeconds) or noExecuteTaint (that, and a NoExecute taint on it).
    fencing: str = "notReady"
    fence_after_seconds: float = 60.0
    stuck_deletion_seconds: float = 5.0
    # No ping-pong (failover/failover_budget.py): failovers per workload and window, backoff, restore grace.
    failover_budget: int = 3
    failover_budget_window_seconds: float = 3600.0
    failover_backoff_seconds: float = 0.0
    restore_grace_seconds: float = 0.0
    failback_max_in_flight: int = 5


@dataclass(frozen=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 9443
    cert_dir: Path = field(default_factory=default_cert_dir)
    service_name: str | None = None
    namespace: str | None = None
    max_body_bytes: int = 3 * 1024 * 1024
    log_format: str = "auto"
    log_level: str = "info"
    # Keep the caBundle of the webhook configurations named failover-relay in step with our CA (controllers/
    # cabundle.py) whenever cluster access is found; turn off where something else (cert-manager, GitOps) owns it.
    cabundle_sync: bool = True
    # mTLS: verify the apiserver's client certificate against this CA (its --admission-control-config-file
    # kubeConfigFile gives it one); admissions without a valid one get 401.
    client_ca_file: Path | None = None
    # Shutdown: keep serving this long after turning unready (None: 5 s in a cluster, 0 outside), then give
    # in-flight reviews up to grace_seconds. Their sum must fit in the Pod's terminationGracePeriodSeconds.
    drain_seconds: float | None = None
    grace_seconds: float = 10.0
    savepoint: SavepointSettings = field(default_factory=SavepointSettings)
    controllers: ControllerSettings = field(default_factory=ControllerSettings)

    def with_controller_overrides(self, **overrides: Any) -> "Settings":
        present = {key: value for key, value in overrides.items() if value is not None}
        return replace(self, controllers=replace(self.controllers, **present))

    def with_overrides(self, **overrides: Any) -> "Settings":
        """Apply command-line flags; a flag left at None keeps the file's (or the default) value."""
        return replace(self, **{key: value for key, value in overrides.items() if value is not None})

    def with_savepoint_overrides(self, **overrides: Any) -> "Settings":
        """Apply `savepoint` flags (`--checkpoint-root`, `--savepoint-failure-mode`); None keeps the file's value."""
        chosen = {key: value for key, value in overrides.items() if value is not None}
        return replace(self, savepoint=replace(self.savepoint, **chosen)) if chosen else self


# config file key → (Settings attribute, expected type)
_SERVER_KEYS = {
    "host": ("host", str),
    "port": ("port", int),
    "certDir": ("cert_dir", str),
    "serviceName": ("service_name", str),
    "namespace": ("namespace", str),
    "maxBodyBytes": ("max_body_bytes", int),
    "caBundleSync": ("cabundle_sync", bool),
    "clientCAFile": ("client_ca_file", str),
    "drainSeconds": ("drain_seconds", (int, float)),
    "graceSeconds": ("grace_seconds", (int, float)),
}
_LOGGING_KEYS = {"format": ("log_format", str), "level": ("log_level", str)}
_CONTROLLER_KEYS = {
    "mode": ("mode", str),
    "kubeconfig": ("kubeconfig", str),
    "leaseNamespace": ("lease_namespace", str),
    "leaseName": ("lease_name", str),
    "workers": ("workers", int),
    "purgeModeSpelling": ("purge_mode_spelling", str),
    "gracefulEvictionTimeoutSeconds": ("graceful_eviction_timeout_seconds", (int, float)),
    "stateWaitSeconds": ("state_wait_seconds", (int, float)),
    "failback": ("failback", bool),
    "failbackSettleSeconds": ("failback_settle_seconds", (int, float)),
    "fencing": ("fencing", str),
    "fenceAfterSeconds": ("fence_after_seconds", (int, float)),
    "stuckDeletionSeconds": ("stuck_deletion_seconds", (int, float)),
    "failoverBudget": ("failover_budget", int),
    "failoverBudgetWindowSeconds": ("failover_budget_window_seconds", (int, float)),
    "failoverBackoffSeconds": ("failover_backoff_seconds", (int, float)),
    "restoreGraceSeconds": ("restore_grace_seconds", (int, float)),
    "failbackMaxInFlight": ("failback_max_in_flight", int),
}
CONTROLLER_MODES = ("auto", "on", "off")
PURGE_MODE_SPELLINGS = ("new", "legacy")
FENCING_MODES = ("off", "notReady", "noExecuteTaint")
_SAVEPOINT_KEYS = {
    "checkpointRoot": ("checkpoint_root", str),
    "layouts": ("layouts", list),
    "savepointLayouts": ("savepoint_layouts", list),
    "lookupDeadlineSeconds": ("lookup_deadline_seconds", (int, float)),
    "failureMode": ("failure_mode", str),
    "cacheTTLSeconds": ("cache_ttl_seconds", (int, float)),
    "jobIdLabel": ("job_id_label", str),
    "storageOptions": ("storage_options", dict),
    "profiles": ("profiles", list),
    "workLabels": ("work_labels", bool),
    "workSavepoints": ("work_savepoints", bool),
}
LOG_FORMATS = ("auto", "json", "console")
LOG_LEVELS = ("debug", "info", "warning", "error")
FAILURE_MODES = ("open", "closed")


def load_settings(path: Path | None) -> Settings:
    """Read the config file (or nothing) into Settings, refusing unknown keys and wrong types."""
    settings = Settings(host="0.0.0.0" if in_cluster() else "127.0.0.1")
    if path is None:
        return settings
    try:
        document = yaml.safe_load(path.read_text()) or {}
    except OSError as error:
        raise SettingsError(f"cannot read config file {path}: {error.strerror}") from None
    except yaml.YAMLError as error:
        raise SettingsError(f"config file {path} is not valid YAML: {error}") from None
    if not isinstance(document, dict):
        raise SettingsError(f"config file {path} must be a mapping with server, logging, savepoint "
                            "and controllers sections")
    unknown = set(document) - {"server", "logging", "savepoint", "controllers"}
    if unknown:
        raise SettingsError(f"config file {path}: unknown section(s) {', '.join(sorted(map(str, unknown)))}")
    top = _section(document, "server", _SERVER_KEYS) | _section(document, "logging", _LOGGING_KEYS)
    for key in ("cert_dir", "client_ca_file"):
        if key in top:
            top[key] = Path(top[key])
    savepoint = _section(document, "savepoint", _SAVEPOINT_KEYS)
    for key in ("layouts", "savepoint_layouts", "profiles"):
        if key in savepoint:
            savepoint[key] = tuple(savepoint[key])
    controllers = _section(document, "controllers", _CONTROLLER_KEYS)
    settings = replace(settings, **top, savepoint=replace(settings.savepoint, **savepoint),
                       controllers=replace(settings.controllers, **controllers))
    check_settings(settings)
    return settings


def has_password(url: str) -> bool:
    """True for `scheme://user:password@host/...`; plain paths and URLs without a password are False."""
    scheme, separator, rest = url.partition("://")
    if not separator:
        return False
    authority = rest.partition("/")[0].partition("?")[0].partition("#")[0]
    userinfo, at, _ = authority.rpartition("@")
    return bool(at) and ":" in userinfo


def check_settings(settings: Settings) -> None:
    """Cross-field checks shared by the file and the flags."""
    _check_controller_settings(settings.controllers)
    if settings.drain_seconds is not None and not 0 <= settings.drain_seconds <= 60:
        raise SettingsError("drainSeconds must be between 0 and 60")
    if not 0 < settings.grace_seconds <= 60:
        raise SettingsError("graceSeconds must be more than 0 and at most 60")
    if not 0 <= settings.port < 65536:  # 0: any free port (tests, benchmarks)
        raise SettingsError(f"port {settings.port} is out of range 0-65535")
    if settings.max_body_bytes < 1024:
        raise SettingsError("maxBodyBytes must be at least 1024")
    if settings.log_format not in LOG_FORMATS:
        raise SettingsError(f"log format {settings.log_format!r}: use one of {', '.join(LOG_FORMATS)}")
    if settings.log_level not in LOG_LEVELS:
        raise SettingsError(f"log level {settings.log_level!r}: use one of {', '.join(LOG_LEVELS)}")
    if bool(settings.service_name) != bool(settings.namespace):
        raise SettingsError("serviceName and namespace go together (they make the certificate's Service names)")
    savepoint = settings.savepoint
    if savepoint.failure_mode not in FAILURE_MODES:
        raise SettingsError(f"savepoint.failureMode {savepoint.failure_mode!r}: use open or closed")
    if not 0 < savepoint.lookup_deadline_seconds < 30:
        raise SettingsError("savepoint.lookupDeadlineSeconds must be between 0 and 30 (the webhook timeout limit)")
    if savepoint.cache_ttl_seconds < 0:
        raise SettingsError("savepoint.cacheTTLSeconds must be 0 or more")
    if not savepoint.layouts:
        raise SettingsError("savepoint.layouts needs at least one template")
    if savepoint.checkpoint_root is not None and not savepoint.checkpoint_root.strip():
        raise SettingsError("savepoint.checkpointRoot must be a path or URL such as s3://bucket/checkpoints")
    if savepoint.checkpoint_root is not None and has_password(savepoint.checkpoint_root):
        # The root is the prefix of every injected initialSavepointPath, audit annotation and log line.
        raise SettingsError("savepoint.checkpointRoot must not carry a password (user:password@host): it would be "
                            "written into every injected path; give credentials in savepoint.storageOptions")
    try:  # a profile or layout that cannot work stops start-up here, not at the first failover
        load_profiles(savepoint.profiles, label=savepoint.job_id_label, layouts=savepoint.layouts,
                      savepoint_layouts=savepoint.savepoint_layouts)
    except ProfileError as error:
        raise SettingsError(str(error)) from None


def _section(document: Mapping[str, Any], name: str, keys: Mapping[str, tuple[str, Any]]) -> dict[str, Any]:
    section = document.get(name) or {}
    if not isinstance(section, dict):
        raise SettingsError(f"config section {name!r} must be a mapping")
    values: dict[str, Any] = {}
    for key, value in section.items():
        if key not in keys:
            raise SettingsError(f"{name}.{key}: unknown setting; known: {', '.join(keys)}")
        attribute, expected = keys[key]
        # bool is an int in Python; it is accepted only where a bool is expected.
        if (isinstance(value, bool) and expected is not bool) or not isinstance(value, expected):
            hint = " (quote it: YAML reads on/off/yes/no as booleans)" if isinstance(value, bool) else ""
            raise SettingsError(f"{name}.{key}: wrong type {type(value).__name__}{hint}")
        values[attribute] = value
    return values




def _check_controller_settings(controllers: ControllerSettings) -> None:
    if controllers.mode not in CONTROLLER_MODES:
        raise SettingsError(f"controllers.mode {controllers.mode!r}: use one of {', '.join(CONTROLLER_MODES)}")
    if controllers.purge_mode_spelling not in PURGE_MODE_SPELLINGS:
        raise SettingsError(f"controllers.purgeModeSpelling {controllers.purge_mode_spelling!r}: use new "
                            "(Karmada v1.15+) or legacy (v1.12-v1.14)")
    if controllers.fencing not in FENCING_MODES:
        raise SettingsError(f"controllers.fencing {controllers.fencing!r}: use one of {', '.join(FENCING_MODES)}")
    if controllers.failover_budget < 1 or controllers.failback_max_in_flight < 1:
        raise SettingsError("controllers.failoverBudget and controllers.failbackMaxInFlight must be 1 or more")
    if not 1 <= controllers.workers <= 64:
        raise SettingsError("controllers.workers must be between 1 and 64")
    for name, value in (("gracefulEvictionTimeoutSeconds", controllers.graceful_eviction_timeout_seconds),
                        ("stateWaitSeconds", controllers.state_wait_seconds),
                        ("failbackSettleSeconds", controllers.failback_settle_seconds),
                        ("fenceAfterSeconds", controllers.fence_after_seconds),
                        ("stuckDeletionSeconds", controllers.stuck_deletion_seconds),
                        ("failoverBudgetWindowSeconds", controllers.failover_budget_window_seconds),
                        ("failoverBackoffSeconds", controllers.failover_backoff_seconds),
                        ("restoreGraceSeconds", controllers.restore_grace_seconds)):
        if value < 0:
            raise SettingsError(f"controllers.{name} must be 0 or more")
