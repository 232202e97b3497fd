"""`failover-relay readiness [WORKLOAD]`: its flags; what it does is relay/commands/readiness_check.py."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from relay.commands.conventions import Subcommands, add_command, refuse
from relay.settings import add_setting_flags, settings_of

FLAGS = (
    "savepoint.checkpointRoot",
    "controllers.kubeconfig",
    "controllers.leaseNamespace",
)
# What the flags declared for the server do here (their declared help speaks of `serve`).
HELPS = {
    "savepoint.checkpointRoot": "the checkpoint storage the relay restores from (path, file://, s3://, any fsspec "
    "URL): the restore lookup and the member relays' heartbeats are read there",
    "controllers.kubeconfig": "the Karmada apiserver (default: $KUBECONFIG, ~/.kube/config)",
    "controllers.leaseNamespace": "namespace of the relay's Lease on the Karmada apiserver (default: failover-relay, "
    "then default)",
}


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
    readiness.add_argument(
        "--config", type=Path, help="the relay's YAML config file (its savepoint, controllers and fence sections)"
    )
    add_setting_flags(readiness, *FLAGS, helps=HELPS)
    readiness.add_argument(
        "-o",
        "--output",
        choices=("table", "json", "yaml"),
        default="table",
        help="table for people (default), json or yaml for scripts",
    )
    readiness.set_defaults(run=run)


def metrics_url_problem(url: str | None) -> str | None:
    """Why `--controller-manager-metrics` cannot be read, or None (an http(s) URL, or not given)."""
    if url is not None and not url.startswith(("http://", "https://")):
        return f"--controller-manager-metrics {url!r} is not an http(s) URL"
    return None


def run(args: argparse.Namespace) -> int:
    from relay.commands.readiness_check import run_readiness
    from relay.logs import configure_logging

    configure_logging("console", "warning")  # stdout carries the report; only problems go to stderr
    settings = settings_of(args)
    if args.cluster_failure_threshold < 0:
        return refuse("--cluster-failure-threshold must be 0 or more")
    if problem := metrics_url_problem(args.controller_manager_metrics):
        return refuse(problem)
    kubeconfig = settings.controllers.kubeconfig
    return run_readiness(
        Path(kubeconfig) if kubeconfig else None,
        settings,
        args.workload,
        args.namespace,
        args.output,
        args.controller_manager_metrics,
        args.cluster_failure_threshold,
        sys.stdout,
        sys.stderr,
    )
