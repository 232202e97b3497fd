"""`failover-relay readiness [WORKLOAD]`: its flags; what it does is relay/commands/readiness_check.py."""

from __future__ import annotations

import argparse
import sys

from relay.commands.conventions import (
    Subcommands,
    add_command,
    add_output_flag,
    add_readiness_check_flags,
    metrics_url_problem,
    online_settings,
    refuse,
)


def add_parser(commands: Subcommands) -> None:
    readiness = add_command(
        commands,
        "readiness",
        help="would each workload come back with its state if its cluster died or its job failed now: every "
        "condition checked live (ok / warning / problem, with the fix), and the RPO and RTO it would get "
        "(reads only; exit 1 on a problem)",
    )
    readiness.add_argument(
        "workload",
        nargs="?",
        metavar="WORKLOAD",
        help="NAME, NAMESPACE/NAME or KIND/NAME of one resource template (default: every Flink workload and every "
        "workload under a stateful failover policy)",
    )
    readiness.add_argument("-n", "--namespace", help="only this namespace")
    readiness.add_argument(
        "--controller-manager-metrics",
        metavar="URL",
        help="karmada-controller-manager's /metrics (the leader's), to check which of its controllers run, e.g. "
        "http://localhost:8080/metrics after `kubectl -n karmada-system port-forward deploy/karmada-controller-manager "
        "8080`",
    )
    readiness.add_argument(
        "--cluster-failure-threshold",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="karmada-controller-manager's --cluster-failure-threshold, for the RTO (default 30, Karmada's)",
    )
    add_readiness_check_flags(readiness)
    add_output_flag(readiness)
    readiness.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from relay.commands.readiness_check import run_readiness

    settings = online_settings(args)  # stdout carries the report; only problems go to stderr
    if args.cluster_failure_threshold < 0:
        return refuse("--cluster-failure-threshold must be 0 or more")
    if problem := metrics_url_problem(args.controller_manager_metrics):
        return refuse(problem)
    return run_readiness(
        settings,
        args.workload,
        args.namespace,
        args.output,
        args.controller_manager_metrics,
        args.cluster_failure_threshold,
        sys.stdout,
        sys.stderr,
    )
