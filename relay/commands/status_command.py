"""`failover-relay status [WORKLOAD]`: its flags, and the settings it reads the storage with; what it does is
relay/commands/status.py."""

from __future__ import annotations

import argparse
import sys

from relay.commands.conventions import (
    Subcommands,
    add_command,
    add_online_flags,
    add_output_flag,
    online_settings,
    refuse,
)


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
    add_online_flags(
        status,
        config="its savepoint section says where the state is",
        storage="shared checkpoint storage to look each workload's restore state up in (path, file://, s3://, any "
        "fsspec URL)",
        kubeconfig="the Karmada apiserver to read (default: $KUBECONFIG, ~/.kube/config)",
    )
    add_output_flag(status)
    status.add_argument("-w", "--watch", action="store_true", help="print again every --interval seconds")
    status.add_argument("--interval", type=float, default=2.0, help="seconds between --watch updates (default 2)")
    status.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from relay.commands.status import run_status

    settings = online_settings(args)  # stdout carries the view; only problems go to stderr
    if args.interval <= 0:
        return refuse("--interval must be greater than 0")
    if args.cluster is not None and args.workload is not None:
        return refuse("give a WORKLOAD or --cluster, not both")
    return run_status(
        settings,
        args.workload,
        args.namespace,
        args.output,
        args.watch,
        args.interval,
        sys.stdout,
        sys.stderr,
        args.cluster,
    )
