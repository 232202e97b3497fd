"""What a Flink workload's own `flinkConfiguration` says about its state, and the operator's rules on the fields the
savepoint injection patches.

Flink reads each option under its current key first, then its deprecated keys (`ConfigOption.withDeprecatedKeys`):
the checkpoint directory is `execution.checkpointing.dir` (Flink 1.20+) or `state.checkpoints.dir`, the savepoint
directory `execution.checkpointing.savepoint-dir` or `state.savepoints.dir`, the per-job sub-directory switch
`execution.checkpointing.create-subdir` or `state.checkpoints.create-subdir` (default true). The operator's CRD
keeps `flinkConfiguration` as free-form (`x-kubernetes-preserve-unknown-fields`, nested YAML since operator 1.11),
so nested mappings are flattened with dots, and values may be YAML scalars rather than strings.

The validator rules are ported from the operator's `DefaultValidator` (flink-kubernetes-operator,
`validation/DefaultValidator.java`), which its admission webhook runs too (`FlinkValidator`): an object it refuses
must never come out of our patch. Operators 1.8 and 1.9 are built on Flink 1.18, whose `CheckpointingOptions` know
only the `state.*` keys; 1.10+ are built on Flink 1.20 and read both. `upgrade_mode_for_restore` therefore asks the
rules of both generations. The operator also merges its own default configuration into the effective one; we cannot
see it, so a directory only the operator's defaults set counts as unset here (we then leave `upgradeMode` alone,
which is always valid).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

CHECKPOINT_DIR_KEYS = ("execution.checkpointing.dir", "state.checkpoints.dir")
SAVEPOINT_DIR_KEYS = ("execution.checkpointing.savepoint-dir", "state.savepoints.dir")
CREATE_SUBDIR_KEYS = ("execution.checkpointing.create-subdir", "state.checkpoints.create-subdir")
# ExecutionCheckpointingOptions.EXTERNALIZED_CHECKPOINT (Flink 1.x) and CheckpointingOptions
# .EXTERNALIZED_CHECKPOINT_RETENTION (1.20+) share this key; the operator defaults it to RETAIN_ON_CANCELLATION
# (FlinkConfigBuilder.applyJobConfig) unless the user sets it.
RETENTION_KEY = "execution.checkpointing.externalized-checkpoint-retention"
DELETE_ON_CANCELLATION = "DELETE_ON_CANCELLATION"
# CheckpointingOptions.CHECKPOINTING_INTERVAL (Flink 1.20+), deprecated key of Flink 1.x: no value, no checkpoints.
CHECKPOINT_INTERVAL_KEYS = ("execution.checkpointing.interval",)
# Flink's TimeUtils.parseDuration: a number and a unit, milliseconds without one.
_DURATION_UNITS = {
    **dict.fromkeys(("d", "day", "days"), 86400.0),
    **dict.fromkeys(("h", "hour", "hours"), 3600.0),
    **dict.fromkeys(("min", "m", "minute", "minutes"), 60.0),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1.0),
    **dict.fromkeys(("", "ms", "milli", "millis", "millisecond", "milliseconds"), 0.001),
    **dict.fromkeys(("us", "µs", "micro", "micros", "microsecond", "microseconds"), 0.000001),
    **dict.fromkeys(("ns", "nano", "nanos", "nanosecond", "nanoseconds"), 0.000000001),
}
_DURATION = re.compile(r"^\s*(\d+)\s*([a-zµ]*)\s*$")

# The keys each operator generation's validator reads (the Flink `CheckpointingOptions` it is built against).
OPERATOR_1_8 = "operator 1.8-1.9"
OPERATOR_1_10 = "operator 1.10+"
VALIDATOR_KEYS: dict[str, dict[str, tuple[str, ...]]] = {
    OPERATOR_1_8: {"checkpoint": ("state.checkpoints.dir",), "savepoint": ("state.savepoints.dir",)},
    OPERATOR_1_10: {"checkpoint": CHECKPOINT_DIR_KEYS, "savepoint": SAVEPOINT_DIR_KEYS},
}

# How a restored job treats the snapshot it starts from (Flink 2.x `execution.state-recovery.claim-mode`, Flink
# 1.15-1.20 `execution.savepoint-restore-mode`; StateRecoveryOptions). NO_CLAIM, Flink's default, which the operator
# never overrides, leaves the snapshot's files alone and makes the new job's first checkpoint a full one.
CLAIM_MODE_KEYS = ("execution.state-recovery.claim-mode", "execution.savepoint-restore-mode")
NO_CLAIM, CLAIM, LEGACY = "NO_CLAIM", "CLAIM", "LEGACY"

# What the operator writes where a path is expected but none exists: `status.jobStatus.upgradeSavepointPath` on a
# last-state deploy (`AbstractJobReconciler.LAST_STATE_DUMMY_SP_PATH`, operator 1.16). Never a path to restore from.
OPERATOR_SENTINELS = frozenset({"KUBERNETES_OPERATOR_LAST_STATE"})

STATELESS = "stateless"
SAVEPOINT = "savepoint"
LAST_STATE = "last-state"
STATE_RESTORING_MODES = frozenset({SAVEPOINT, LAST_STATE})


def flatten_configuration(config: Any) -> dict[str, str]:
    """`flinkConfiguration` as Flink sees it: dotted keys, string values (`true`, not True). Not a mapping: empty."""
    flat: dict[str, str] = {}
    # dict first: an isinstance check against typing's Mapping costs a microsecond, on every admitted Flink object.
    if not isinstance(config, (dict, Mapping)):
        return flat

    def walk(prefix: str, node: Mapping[Any, Any]) -> None:
        for key, value in node.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            if isinstance(value, bool):
                flat[name] = "true" if value else "false"
            elif isinstance(value, (str, int, float)):
                flat[name] = str(value)
            elif isinstance(value, (dict, Mapping)):
                walk(name, value)

    walk("", config)
    return flat


def config_value(config: Mapping[str, str], keys: tuple[str, ...]) -> str | None:
    """The first key of `keys` that is set and not blank (Flink: current key first, then deprecated ones)."""
    for key in keys:
        value = config.get(key)
        if value is not None and value.strip():
            return value.strip()
    return None


@dataclass(frozen=True)
class StateConfig:
    """Where a workload writes its state, as far as its own configuration says."""

    checkpoint_dir: str | None = None
    savepoint_dir: str | None = None
    create_subdir: bool = True
    retention: str | None = None
    claim_mode: str = NO_CLAIM


def read_state_config(flink_configuration: Any) -> StateConfig:
    config = flatten_configuration(flink_configuration)
    create_subdir = config_value(config, CREATE_SUBDIR_KEYS)
    retention = config_value(config, (RETENTION_KEY,))
    claim_mode = config_value(config, CLAIM_MODE_KEYS)
    return StateConfig(
        checkpoint_dir=config_value(config, CHECKPOINT_DIR_KEYS),
        savepoint_dir=config_value(config, SAVEPOINT_DIR_KEYS),
        # Flink parses booleans case-insensitively; anything but "false" keeps the default (true).
        create_subdir=(create_subdir or "true").lower() != "false",
        retention=retention.upper() if retention else None,
        claim_mode=claim_mode.upper() if claim_mode else NO_CLAIM,  # Flink parses enums case-insensitively
    )


def checkpoint_interval(flink_configuration: Any) -> float | None:
    """Seconds between the job's checkpoints, as Flink parses `execution.checkpointing.interval`; None when it is
    unset or unreadable (Flink then takes no periodic checkpoint, or refuses to start)."""
    value = config_value(flatten_configuration(flink_configuration), CHECKPOINT_INTERVAL_KEYS)
    parsed = _DURATION.match(value.lower()) if value else None
    if parsed is None or parsed.group(2) not in _DURATION_UNITS:
        return None
    return int(parsed.group(1)) * _DURATION_UNITS[parsed.group(2)]


def is_state_path(value: Any) -> bool:
    """`value` may name a checkpoint or savepoint: a non-empty string that is no operator sentinel."""
    return isinstance(value, str) and bool(value.strip()) and value.strip() not in OPERATOR_SENTINELS


def claim_mode_hazards(state: StateConfig) -> tuple[str, ...]:
    """Why this configuration's claim mode is unsafe for a job that moves between clusters (empty when it is safe).

    The old copy may still run after the new one has started from its snapshot (a partitioned member fenced by time,
    before its own relay suspends it): with CLAIM the new job owns the snapshot's files and deletes them when it
    subsumes the snapshot, under the old job's feet; with LEGACY its incremental checkpoints keep depending on the old
    job's files, which the old job deletes as it subsumes its own checkpoints, and Flink 2.4 removes the mode
    (FLINK-34189). NO_CLAIM copies nothing it does not own."""
    if state.claim_mode == CLAIM:
        return (
            "claim mode CLAIM: the new job owns and deletes the restored snapshot's files, which the old copy may still"
            f" use; use {NO_CLAIM} (Flink's default)",
        )
    if state.claim_mode == LEGACY:
        return (
            "claim mode LEGACY: the new job's checkpoints depend on files the old copy deletes, and Flink 2.4 removes"
            f" the mode; use {NO_CLAIM} (Flink's default)",
        )
    return ()


def validate_job_spec(job: Mapping[str, Any], flink_configuration: Any, generation: str = OPERATOR_1_10) -> str | None:
    """The operator's refusal for this job spec, or None: the `DefaultValidator.validateJobSpec` rules on
    `upgradeMode` and the state directories (release-1.8.0 .. main), with its messages."""
    config = flatten_configuration(flink_configuration)
    keys = VALIDATOR_KEYS[generation]
    mode = job.get("upgradeMode") or STATELESS  # JobSpec: upgradeMode = UpgradeMode.STATELESS
    if mode != STATELESS and config_value(config, keys["checkpoint"]) is None:
        return (
            f"Checkpoint directory[{keys['checkpoint'][0]}] must be defined for last-state and savepoint upgrade modes"
        )
    if mode == SAVEPOINT and config_value(config, keys["savepoint"]) is None:
        return f"Job could not be upgraded with savepoint while config key[{keys['savepoint'][0]}] is not set"
    return None


def validate_redeploy(new_job: Mapping[str, Any], old_job: Mapping[str, Any] | None) -> str | None:
    """`DefaultValidator.validateSpecChange`: a changed, non-null `savepointRedeployNonce` needs a non-empty
    `initialSavepointPath` (the nonce is compared with the last reconciled spec; `old_job` stands for it)."""
    nonce = new_job.get("savepointRedeployNonce")
    if nonce is None or nonce == (old_job or {}).get("savepointRedeployNonce"):
        return None
    path = new_job.get("initialSavepointPath")
    if not isinstance(path, str) or not path.strip():
        return "InitialSavepointPath must not be empty for savepoint redeployment"
    return None


def upgrade_mode_for_restore(job: Mapping[str, Any], flink_configuration: Any) -> str | None:
    """The `upgradeMode` to set so later upgrades keep the restored state, or None to leave it alone.

    The restore itself does not need it: before the first deployment the operator records SAVEPOINT whenever
    `initialSavepointPath` is set (`AbstractJobReconciler.updateStatusBeforeFirstDeployment`). A `stateless` job
    would lose its state again at its next upgrade, so it becomes `savepoint`, but only when every operator
    generation's validator accepts the result; a state-restoring mode is kept.
    """
    current = job.get("upgradeMode") or STATELESS
    if not isinstance(current, str) or current in STATE_RESTORING_MODES:  # not a string: the CRD schema refuses it
        return None
    patched = {**job, "upgradeMode": SAVEPOINT}
    if any(validate_job_spec(patched, flink_configuration, generation) for generation in VALIDATOR_KEYS):
        return None
    return SAVEPOINT


def stateless_restart_reasons(state: StateConfig) -> tuple[str, ...]:
    """Why this configuration guarantees the job restarts without state after a failover (empty when it may not).

    - no checkpoint directory: nothing is written that another cluster could read;
    - retention DELETE_ON_CANCELLATION: the operator cancels the job when Karmada deletes the old copy, and Flink then
      deletes its checkpoints;
    - create-subdir off without a checkpoint directory of its own: the checkpoints sit directly in a directory
      that only the operator's defaults name, where no layout of ours can tell jobs apart.
    """
    reasons = []
    if state.checkpoint_dir is None:
        reasons.append(f"flinkConfiguration sets no checkpoint dir ({CHECKPOINT_DIR_KEYS[0]})")
    if state.retention == DELETE_ON_CANCELLATION:
        reasons.append(f"{RETENTION_KEY} is DELETE_ON_CANCELLATION: the checkpoints go with the old copy")
    if not state.create_subdir and state.checkpoint_dir is None:
        reasons.append("create-subdir is off and no checkpoint dir is set: no layout can find the job's state")
    return tuple(reasons)
