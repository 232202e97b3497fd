"""The relay's configuration in this tier: docs/quickstart.md's, plus only the keys the tier needs of its own.

The relay runs with docs/quickstart.md's configuration (step 2, the block marked `quickstart-test: relay-config`),
so the tier tests what the page installs; ``restart_relay(config=...)`` merges per section over it.
tests/karmada/test_quickstart.py holds the rest to the page (``TIER_RELAY_KEYS``).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from tests.karmada_env.layout import REPO_ROOT
from tests.processes import LOOPBACK

RELAY_NAMESPACE = "failover-relay"
RELAY_USER = f"system:serviceaccount:{RELAY_NAMESPACE}:failover-relay"
# The tier's own keys, each for a reason the page's install does not have:
TIER_RELAY_CONFIG: dict[str, dict[str, Any]] = {
    "logging": {"format": "json", "level": "info"},  # the harness reads the relay's log lines
    # A process has no Pod namespace to put its Lease in (a pod's is failover-relay, the page's namespace).
    "controllers": {"leaseNamespace": RELAY_NAMESPACE},
}
# And per start (base_relay_config): where it listens and its certificates, its kubeconfig, the tier's checkpoint root.
TIER_RELAY_KEYS = {
    ("logging", "format"),
    ("logging", "level"),
    ("controllers", "leaseNamespace"),
    ("server", "host"),
    ("server", "port"),
    ("server", "certDir"),
    ("controllers", "kubeconfig"),
    ("savepoint", "checkpointRoot"),
}
QUICKSTART_PAGE = REPO_ROOT / "docs" / "quickstart.md"
_RELAY_CONFIG_BLOCK = re.compile(r"^<!-- quickstart-test: relay-config\b.*?-->\n```yaml\n(.*?)^```$", re.M | re.S)


def quickstart_relay_config() -> dict[str, Any]:
    """The relay's configuration file as docs/quickstart.md gives it."""
    [block] = _RELAY_CONFIG_BLOCK.findall(QUICKSTART_PAGE.read_text())
    config = yaml.safe_load(block)
    assert isinstance(config, dict), "docs/quickstart.md: the relay-config block is not a mapping"
    return config


def merge(base: Mapping[str, Any], overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """``overrides`` over a copy of ``base``, section by section (a section's keys are merged, other values set)."""
    merged = copy.deepcopy(dict(base))
    for section, values in (overrides or {}).items():
        if isinstance(values, Mapping) and isinstance(merged.get(section), Mapping):
            merged[section] = {**merged[section], **values}
        else:
            merged[section] = copy.deepcopy(values)
    return merged


def base_relay_config(*, port: int, cert_dir: Path, checkpoint_root: Path, kubeconfig: Path) -> dict[str, Any]:
    """The page's configuration with the tier's keys and where this start listens, keeps its certificates, finds
    the checkpoints and karmada-apiserver."""
    config = merge(quickstart_relay_config(), TIER_RELAY_CONFIG)
    config["server"] = {"host": LOOPBACK, "port": port, "certDir": str(cert_dir)}
    config["savepoint"]["checkpointRoot"] = str(checkpoint_root)
    config["controllers"]["kubeconfig"] = str(kubeconfig)
    return config
