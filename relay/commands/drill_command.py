"""`failover-relay drill WORKLOAD`: its flags; what it does is relay/commands/drill_run.py."""

from __future__ import annotations

import argparse
import sys

from relay.commands.conventions import (
    Subcommands,
    add_command,
    add_follow_flags,
    add_readiness_check_flags,
    follow_problem,
    metrics_url_problem,
    online_settings,
    refuse,
)


def add_parser(commands: Subcommands) -> None:
    drill = add_command(
        commands,
        "drill",
        help="move one workload on purpose to where a failover would put it, and back, each way by savepoint "
        "handoff, and report where it ran, the state each copy restored and the downtime (refuses when "
        "`readiness` finds a problem; --yes to run)",
    )
    drill.add_argument(
        "workload", metavar="WORKLOAD", help="NAME, NAMESPACE/NAME or KIND/NAME of its resource template"
    )
    drill.add_argument("-n", "--namespace", help="the workload's namespace")
    drill.add_argument("--yes", action="store_true", help="move it; without --yes, say what would happen")
    add_follow_flags(drill, 600.0, "seconds each way may take before exit 1")
    drill.add_argument(
        "--controller-manager-metrics",
        metavar="URL",
        help="karmada-controller-manager's /metrics, for the readiness check (see `readiness --help`)",
    )
    add_readiness_check_flags(drill)
    drill.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from relay.commands.drill_run import run_drill

    settings = online_settings(args)  # stdout carries the report; only problems go to stderr
    if problem := follow_problem(args) or metrics_url_problem(args.controller_manager_metrics):
        return refuse(problem)
    return run_drill(
        settings,
        args.workload,
        args.namespace,
        args.yes,
        args.timeout,
        args.interval,
        args.controller_manager_metrics,
        sys.stdout,
        sys.stderr,
    )
