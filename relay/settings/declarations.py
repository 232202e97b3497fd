"""The settings of `failover-relay`, declared: `Settings` and its sections, each setting one dataclass field.

Every field is declared with `setting(...)` (failover/core/setting_spec.py): its config file key, its default, its
bounds and (when it has one) its command-line flag; its type is the field's annotation. The reconcile decisions'
settings are declared where the decisions read them (failover/core/loop_settings.py `DecisionSettings`, nested here as
`controllers.decisions`); the server's, the savepoint lookup's and the storage fence's below. How they are read, from
the file and the flags, is relay/settings/loading.py; nothing here reads a file or a flag.

To add a setting: add a field `name: type = setting("section.configKey", default, ge=..., flag="--name",
help="... (default {default})")` to the section's dataclass, then list its key in the flags of the commands that take
it (relay/commands/). Nothing else restates it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from failover.core.api import DEFAULT_JOB_ID_LABEL, GroupKind
from failover.core.loop_settings import DecisionSettings
from failover.core.setting_spec import setting
from failover.state.checkpoints import DEFAULT_LAYOUT
from failover.state.profiles import InjectionProfile, ProfileError, load_profiles
from failover.state.savepoint import (
    DEFAULT_FAILURE_MODE,
    LOOKUP_CACHE_TTL_SECONDS,
    LOOKUP_DEADLINE_SECONDS,
    FailureMode,
)


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
    suspends the copy and acknowledges. The control plane's side is on wherever it can be (`storage_fence_on`), so
    a member relay installed later fences at once; a member relay's side is on with `memberCluster`."""

    # None: on when the control plane has a checkpoint root and fences (`storage_fence_on`); false turns it off, true
    # insists (and start-up refuses a configuration where it cannot work). Where no member relay answers, a record
    # costs one small file and the copy is fenced by `fenceAfterSeconds` as without it.
    storage: bool | None = setting(
        "fence.storage",
        None,
        flag="--storage-fence",
        flag_value=True,
        help="control plane: write fence records to the checkpoint storage and release an old copy as soon as its "
        "member relay acknowledges the suspension (default: on with a checkpoint root and fencing; fence.storage "
        "false in the config file turns it off)",
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
    # long is closed (asyncio's own limit is 60 s, so a connect that never sends a byte would be held for a minute).
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

    def storage_fence_on(self) -> bool:
        """Whether this control plane writes fence records: `fence.storage` as set, else whenever it can (a
        checkpoint root, fencing on, and not a member relay)."""
        if self.fence.storage is not None:
            return self.fence.storage
        return bool(self.savepoint.checkpoint_root) and not self.member and self.controllers.decisions.fences

    def drain(self) -> float:
        """The drain on shutdown: drainSeconds, or when unset the customary pause in a cluster and none outside."""
        if self.drain_seconds is not None:
            return self.drain_seconds
        return IN_CLUSTER_DRAIN_SECONDS if in_cluster() else 0.0
