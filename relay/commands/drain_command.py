"""`failover-relay drain CLUSTER` and `undrain CLUSTER`: their flags; what they do is
relay/commands/drain_cluster.py."""

from __future__ import annotations

import argparse
import sys

from relay.commands.conventions import (
    Subcommands,
    add_command,
    add_follow_flags,
    add_online_flags,
    follow_problem,
    online_settings,
    refuse,
)


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
            add_follow_flags(command, 3600.0, "seconds to follow the moves before exit 1")
        add_online_flags(
            command,
            config="its savepoint section",
            storage="the checkpoint storage the storage fence uses: tells --dry-run which members a member relay "
            "watches (path, file://, s3://, any fsspec URL)",
        )
        command.set_defaults(run=run, undo=undo)


def run(args: argparse.Namespace) -> int:
    from relay.commands.drain_cluster import run_drain

    settings = online_settings(args)  # stdout carries the progress; only problems go to stderr
    if not args.undo and (problem := follow_problem(args)):
        return refuse(problem)
    timeout, interval = getattr(args, "timeout", 0.0), getattr(args, "interval", 2.0)
    wait = not getattr(args, "no_wait", True)
    return run_drain(settings, args.cluster, args.undo, args.dry_run, wait, timeout, interval, sys.stdout, sys.stderr)
