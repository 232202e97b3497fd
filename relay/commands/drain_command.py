"""`failover-relay drain CLUSTER` and `undrain CLUSTER`: their flags; what they do is
relay/commands/drain_cluster.py."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from relay.commands.conventions import Subcommands, add_command, refuse
from relay.settings import add_setting_flags, settings_of

FLAGS = ("savepoint.checkpointRoot", "controllers.kubeconfig")
# What the flags declared for the server do here (their declared help speaks of `serve`).
HELPS = {
    "savepoint.checkpointRoot": "the checkpoint storage the storage fence uses: tells --dry-run which members a "
    "member relay watches (path, file://, s3://, any fsspec URL)",
    "controllers.kubeconfig": "the Karmada apiserver (default: $KUBECONFIG, ~/.kube/config)",
}


def add_parser(commands: Subcommands) -> None:
    for name, undo, help in (
        (
            "drain",
            False,
            "move every stateful workload off a member cluster on purpose, each by savepoint handoff where a member "
            "relay watches it (taints the Cluster failover-relay.io/drain:NoSchedule and follows the moves)",
        ),
        (
            "undrain",
            True,
            "take the drain taint off a member cluster: Karmada may place workloads there again, and failback "
            "brings those that opted in home",
        ),
    ):
        command = add_command(commands, name, help=help)
        command.add_argument("cluster", metavar="CLUSTER", help="the member cluster's name in Karmada")
        command.add_argument("--dry-run", action="store_true", help="say what would move and how; change nothing")
        if not undo:
            command.add_argument(
                "--no-wait", action="store_true", help="write the taint and return; the relay moves the workloads"
            )
            command.add_argument(
                "--timeout", type=float, default=3600.0, help="seconds to follow the moves before exit 1 (default 3600)"
            )
            command.add_argument("--interval", type=float, default=2.0, help="seconds between looks (default 2)")
        command.add_argument("--config", type=Path, help="the relay's YAML config file (its savepoint section)")
        add_setting_flags(command, *FLAGS, helps=HELPS)
        command.set_defaults(run=run, undo=undo)


def run(args: argparse.Namespace) -> int:
    from relay.commands.drain_cluster import run_drain
    from relay.logs import configure_logging

    configure_logging("console", "warning")  # stdout carries the progress; only problems go to stderr
    settings = settings_of(args)
    timeout, interval = getattr(args, "timeout", 0.0), getattr(args, "interval", 2.0)
    if not args.undo and (timeout <= 0 or interval <= 0):
        return refuse("--timeout and --interval must be greater than 0")
    kubeconfig = settings.controllers.kubeconfig
    return run_drain(
        Path(kubeconfig) if kubeconfig else None,
        settings.savepoint,
        args.cluster,
        undo=args.undo,
        dry_run=args.dry_run,
        wait=not getattr(args, "no_wait", True),
        timeout=timeout,
        interval=interval,
        out=sys.stdout,
        err=sys.stderr,
    )
