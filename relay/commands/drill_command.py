"""`failover-relay drill WORKLOAD`: its flags; what it does is relay/commands/drill_run.py."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from relay.commands.conventions import Subcommands, add_command, refuse
from relay.commands.readiness_command import FLAGS, HELPS, metrics_url_problem
from relay.settings import add_setting_flags, settings_of


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
    drill.add_argument(
        "--timeout", type=float, default=600.0, help="seconds each way may take before exit 1 (default 600)"
    )
    drill.add_argument("--interval", type=float, default=2.0, help="seconds between looks (default 2)")
    drill.add_argument(
        "--controller-manager-metrics",
        metavar="URL",
        help="karmada-controller-manager's /metrics, for the readiness check (see `readiness --help`)",
    )
    drill.add_argument(
        "--config", type=Path, help="the relay's YAML config file (its savepoint, controllers and fence sections)"
    )
    add_setting_flags(drill, *FLAGS, helps=HELPS)
    drill.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from relay.commands.drill_run import run_drill
    from relay.logs import configure_logging

    configure_logging("console", "warning")  # stdout carries the report; only problems go to stderr
    settings = settings_of(args)
    if args.timeout <= 0 or args.interval <= 0:
        return refuse("--timeout and --interval must be greater than 0")
    if problem := metrics_url_problem(args.controller_manager_metrics):
        return refuse(problem)
    kubeconfig = settings.controllers.kubeconfig
    return run_drill(
        Path(kubeconfig) if kubeconfig else None,
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
