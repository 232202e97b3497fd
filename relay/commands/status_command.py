"""`failover-relay status [WORKLOAD]`: its flags, and the settings it reads the storage with; what it does is
relay/commands/status.py."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from relay.commands.conventions import Subcommands, add_command, refuse
from relay.settings import add_setting_flags, settings_of

FLAGS = ("savepoint.checkpointRoot", "controllers.kubeconfig")
# What the flags declared for the server do here (their declared help speaks of `serve`).
HELPS = {
    "savepoint.checkpointRoot": "shared checkpoint storage to look each workload's restore state up in (path, "
    "file://, s3://, any fsspec URL)",
    "controllers.kubeconfig": "the Karmada apiserver to read (default: $KUBECONFIG, ~/.kube/config)",
}


def add_parser(commands: Subcommands) -> None:
    status = add_command(
        commands,
        "status",
        help="where each workload under a stateful failover policy stands: placement, health, eviction "
        "timers and tasks, the state a new copy would restore, the last failovers (reads only)",
    )
    status.add_argument(
        "workload",
        nargs="?",
        metavar="WORKLOAD",
        help="NAME, NAMESPACE/NAME or KIND/NAME of one resource template (default: all)",
    )
    status.add_argument("-n", "--namespace", help="only this namespace")
    status.add_argument(
        "--cluster",
        metavar="NAME",
        help="instead: every workload member cluster NAME runs or is being evicted from, and its phase there",
    )
    status.add_argument(
        "--config", type=Path, help="the relay's YAML config file (its savepoint section says where the state is)"
    )
    add_setting_flags(status, *FLAGS, helps=HELPS)
    status.add_argument(
        "-o",
        "--output",
        choices=("table", "json", "yaml"),
        default="table",
        help="table for people (default), json or yaml for scripts",
    )
    status.add_argument("-w", "--watch", action="store_true", help="print again every --interval seconds")
    status.add_argument("--interval", type=float, default=2.0, help="seconds between --watch updates (default 2)")
    status.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from relay.commands.status import run_status
    from relay.logs import configure_logging

    configure_logging("console", "warning")  # stdout carries the view; only problems go to stderr
    settings = settings_of(args)
    if args.interval <= 0:
        return refuse("--interval must be greater than 0")
    if args.cluster is not None and args.workload is not None:
        return refuse("give a WORKLOAD or --cluster, not both")
    kubeconfig = settings.controllers.kubeconfig
    return run_status(
        Path(kubeconfig) if kubeconfig else None,
        settings.savepoint,
        args.workload,
        args.namespace,
        args.output,
        args.watch,
        args.interval,
        sys.stdout,
        sys.stderr,
        settings.controllers.decisions,
        cluster=args.cluster,
    )
