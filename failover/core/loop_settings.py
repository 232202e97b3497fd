"""The reconcile loop's settings: every knob a decision reads, each declared once with its config key, its bounds and
(where it has one) its flag (`failover.core.setting_spec`). The decisions read `DecisionSettings`; relay/settings/
loads it under `controllers` from the same declarations. The defaults are Karmada's where Karmada has one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum

from failover.core.api import PurgeMode, PurgeModeSpelling
from failover.core.setting_spec import setting


class TaintEvictionPurgeMode(StrEnum):
    """The purge mode of a cluster failover eviction of a binding without `failover.cluster`:
    karmada-controller-manager's `--no-execute-taint-eviction-purge-mode` (Gracefully by default;
    `pkg/controllers/cluster/taint_manager.go` `getPurgeMode`)."""

    GRACEFULLY = "Gracefully"
    DIRECTLY = "Directly"


class FencingMode(StrEnum):
    """When the old Work of a Directly eviction from an unreachable cluster is released (failover/fence/old_copy.py)."""

    OFF = "off"  # never: the new copy waits for the cluster or the task's grace period
    NOT_READY = "notReady"  # the cluster has not been Ready for fenceAfterSeconds
    NO_EXECUTE_TAINT = "noExecuteTaint"  # that, and it carries a NoExecute taint


@dataclass(frozen=True)
class DecisionSettings:
    """Knobs of the reconcile decisions (docs/operations.md, "Configuration file", the `controllers` section)."""

    # Spelling of purgeMode in written eviction tasks and in policy defaults: the loop overrides it with the only
    # spelling the installed CRD accepts (failover/reconcile/purge_spelling.py).
    purge_mode_spelling: PurgeModeSpelling = setting(
        "controllers.purgeModeSpelling",
        PurgeModeSpelling.NEW,
        choices_hint="new (Karmada v1.15+) or legacy (v1.12-v1.14)",
    )
    # Karmada's --graceful-eviction-timeout default: a task without gracePeriodSeconds ends after this.
    graceful_eviction_timeout: timedelta = setting(
        "controllers.gracefulEvictionTimeoutSeconds", timedelta(minutes=10), ge=0
    )
    # How long past tolerationSeconds an eviction waits for a statePreservation JSONPath that finds nothing.
    # Karmada waits forever (the eviction itself is blocked: `buildTaskOptions`). One minute covers a status
    # collection round (the work status controller re-syncs within seconds) while bounding the extra downtime.
    state_wait: timedelta = setting("controllers.stateWaitSeconds", timedelta(minutes=1), ge=0)
    # Failback is opt-in: globally here, or per policy with the FAILBACK_ANNOTATION.
    failback_enabled: bool = setting(
        "controllers.failback",
        False,
        flag="--failback",
        flag_value=True,
        help="move workloads back to a recovered cluster (off by default; or per policy annotation)",
    )
    # A recovered cluster must stay Ready and free of NoExecute taints this long before workloads move back;
    # 5 minutes is Karmada's default toleration, so a cluster that flaps within it is not trusted yet.
    failback_settle: timedelta = setting("controllers.failbackSettleSeconds", timedelta(minutes=5), ge=0)
    # Planned moves (failbacks and drains) under way at once, over every workload: each one restarts a job, and neither
    # a recovered cluster nor a drained one should move every workload in the same second.
    failback_max_in_flight: int = setting("controllers.failbackMaxInFlight", 5, ge=1)
    # A planned move (failback) first stops the old copy with a savepoint (failover/moves/handoff.py); without the
    # member relay's acknowledgement within this long it goes on from the newest completed checkpoint. A savepoint
    # takes about as long as a checkpoint; five minutes covers a large state's while bounding a planned move that
    # cannot hand off (its copy keeps running meanwhile).
    handoff_timeout: timedelta = setting("controllers.handoffTimeoutSeconds", timedelta(minutes=5), gt=0)
    # No ping-pong (failover/reconcile/failover_budget.py, karmada#4480, #6233): at most failover_budget application
    # failovers of one workload per window; each failover in the window doubles the least time to the next, from
    # failover_backoff (0: none).
    failover_budget: int = setting("controllers.failoverBudget", 3, ge=1)
    failover_budget_window: timedelta = setting("controllers.failoverBudgetWindowSeconds", timedelta(hours=1), gt=0)
    failover_backoff: timedelta = setting("controllers.failoverBackoffSeconds", timedelta(0), ge=0)
    # A copy a move created is not counted Unhealthy this long while it has not restored (0: none). Sized from
    # bench/flink_restore.py's measurement in docs/operations.md, "The restore grace": the move to the new copy's
    # Flink JVMs, three times a restore of 1 GiB a slot up to its first checkpoint, and a checkpoint interval of
    # 60 s. Five minutes is also Karmada's default tolerationSeconds (failover.core.api.DEFAULT_TOLERATION_SECONDS),
    # what Karmada gives any copy before it counts as failed.
    restore_grace: timedelta = setting("controllers.restoreGraceSeconds", timedelta(minutes=5), ge=0)
    # Fencing (failover/fence/old_copy.py; docs/operations.md "Fencing"): the old Work of a Directly eviction from a
    # cluster that has not been Ready for `fence_after` (counted from its Ready transition) is released so the
    # workload starts elsewhere. Karmada marks a cluster NotReady after --cluster-failure-threshold (30 s); one more
    # minute keeps a brief network blip from duplicating the job, and with the taint manager's eviction it brings a
    # dead cluster's workload back within two minutes (docs/operations.md).
    fencing: FencingMode = setting(
        "controllers.fencing", FencingMode.NOT_READY, choices_hint="off, notReady or noExecuteTaint"
    )
    fence_after: timedelta = setting("controllers.fenceAfterSeconds", timedelta(seconds=60), ge=0)
    # Cluster failover (failover/reconcile/cluster_eviction.py): the relay writes the taint manager's eviction tasks
    # itself, at the apiserver's pace; karmada-controller-manager's --enable-no-execute-taint-eviction is then best off
    # (docs/operations.md, "Turning off the Karmada controllers failover-relay replaces"), though both may write.
    cluster_evictions: bool = setting("controllers.clusterEvictions", True)
    taint_eviction_purge_mode: TaintEvictionPurgeMode = setting(
        "controllers.noExecuteTaintEvictionPurgeMode",
        TaintEvictionPurgeMode.GRACEFULLY,
        choices_hint="Gracefully or Directly",
    )
    # The brake (failover/reconcile/brake.py): no new cluster failover while at least this share of the clusters
    # (and at least two) is not Ready; Kubernetes' --unhealthy-zone-threshold.
    unhealthy_cluster_threshold: float = setting("controllers.unhealthyClusterThreshold", 0.55, gt=0, le=1)
    # How long after a cluster went not Ready its eviction waits for others to follow: clusters cut off together are
    # marked not Ready within a status round or two of each other (--cluster-status-update-frequency, 10 s). Under
    # fenceAfterSeconds it delays no dead cluster's new copy, which waits for the fence in any case.
    brake_window: timedelta = setting("controllers.brakeWindowSeconds", timedelta(seconds=30), ge=0)
    # A Work still being deleted this long on a Ready cluster is stuck in the execution controller's backoff; a
    # healthy deletion takes well under a second.
    stuck_deletion_after: timedelta = setting("controllers.stuckDeletionSeconds", timedelta(seconds=5), ge=0)
    # The knobs below are not settings: no deployment has had a reason to change them.
    # ttlSecondsAfterFinished of the WorkloadRebalancer a failback creates (None keeps it for inspection).
    failback_rebalancer_ttl_seconds: int | None = 3600
    # How often the old copy on a cluster that is not Ready is tried through Karmada's cluster proxy (one cheap
    # request per cluster: a member that does not answer is remembered that long).
    probe_interval: timedelta = timedelta(seconds=5)
    # When a referenced binding could not be read (other than NotFound), look at the rebalancer again after this.
    rebalancer_retry: timedelta = timedelta(seconds=10)

    @property
    def fences(self) -> bool:
        """An unreachable cluster's old Work is ever released (`fencing` is not off)."""
        return self.fencing != FencingMode.OFF

    @property
    def fence_needs_no_execute_taint(self) -> bool:
        return self.fencing == FencingMode.NO_EXECUTE_TAINT

    def spell(self, mode: PurgeMode) -> str:
        """`mode` in the spelling eviction tasks are written with."""
        return mode.legacy.value if self.purge_mode_spelling == PurgeModeSpelling.LEGACY else mode.canonical.value
