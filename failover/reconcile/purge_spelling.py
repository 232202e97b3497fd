"""Karmada v1.19 removed the legacy purge-mode names from its CRDs with no conversion (karmada#7792).

Pure decisions for the migration: which spelling the loop may write, given the enum the installed CRD declares,
and where an object (policy or binding) still holds a legacy name (`failover.admission.policy.legacy_purge_modes_in`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from failover.core.api import PurgeMode, PurgeModeSpelling


def crd_purge_mode_enum(crd: Mapping[str, Any]) -> frozenset[str] | None:
    """The enum of `spec.failover.application.purgeMode` in the storage version of a (Cluster)PropagationPolicy or
    (Cluster)ResourceBinding CRD; None when the CRD declares none (or is not shaped as one)."""
    spec = crd.get("spec") if isinstance(crd, dict) else None
    versions = spec.get("versions") if isinstance(spec, dict) else None
    for version in versions if isinstance(versions, list) else ():
        if not isinstance(version, dict) or not version.get("storage"):
            continue
        node: Any = (version.get("schema") or {}).get("openAPIV3Schema")
        for key in ("spec", "failover", "application", "purgeMode"):
            node = ((node or {}).get("properties") or {}).get(key) if isinstance(node, dict) else None
        enum = node.get("enum") if isinstance(node, dict) else None
        return frozenset(value for value in enum if isinstance(value, str)) if isinstance(enum, list) else None
    return None


def spelling_to_write(enum: frozenset[str] | None, configured: PurgeModeSpelling) -> PurgeModeSpelling:
    """The spelling the loop writes: the only one the installed CRD accepts, else what is configured.

    v1.19's enum (Directly, Gracefully, Never) forces "new" even when `purgeModeSpelling: legacy` is configured
    (a setting left over from v1.14 must not make every eviction task fail validation); v1.12-v1.14's (Immediately,
    Graciously, Never) forces "legacy"; v1.15-v1.18 accept both, and an unreadable CRD leaves the setting in charge.
    """
    if not enum:
        return configured
    new = {mode.value for mode in PurgeMode if not mode.is_legacy}
    legacy = {mode.legacy.value for mode in PurgeMode}
    if enum >= new and not enum & (legacy - new):
        return PurgeModeSpelling.NEW
    if enum >= legacy and not enum & (new - legacy):
        return PurgeModeSpelling.LEGACY
    return configured
