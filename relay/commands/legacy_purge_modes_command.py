"""`failover-relay legacy-purge-modes`: its flag; what it does is relay/commands/legacy_purge_modes.py."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from relay.commands.conventions import Subcommands, add_command


def add_parser(commands: Subcommands) -> None:
    legacy = add_command(
        commands,
        "legacy-purge-modes",
        help="list stored policies, bindings and eviction tasks that still hold Immediately/Graciously",
    )
    legacy.add_argument(
        "--kubeconfig", type=Path, help="the Karmada apiserver to read (default: $KUBECONFIG, ~/.kube/config)"
    )
    legacy.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from relay.commands.legacy_purge_modes import run_legacy_purge_modes

    return run_legacy_purge_modes(args.kubeconfig, sys.stdout, sys.stderr)
