"""`failover-relay inject FILE`: its flags, and the settings it looks state up with; what it does is
relay/commands/inject.py."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from relay.commands.conventions import Subcommands, add_command
from relay.settings import add_setting_flags, settings_of

FLAGS = ("savepoint.checkpointRoot", "savepoint.failureMode")
# What the flags declared for the server do here (their declared help speaks of `serve`).
HELPS = {
    "savepoint.checkpointRoot": "shared checkpoint storage to look the object's state up in (path, file://, s3://, "
    "any fsspec URL)",
    "savepoint.failureMode": "no checkpoint, timeout or storage error: show the object admitted unchanged with a "
    "warning (open, exit 0) or denied (closed, exit 1); default {default}",
}


def add_parser(commands: Subcommands) -> None:
    inject = add_command(
        commands, "inject", help="show what savepoint injection does to one object: the mutated object, or why not"
    )
    inject.add_argument(
        "file",
        type=Path,
        metavar="FILE",
        help="YAML file holding one object (a FlinkDeployment); - for the standard input",
    )
    inject.add_argument("--job-id", help="Flink JobID to inject as the job-id label (default: the object's label)")
    inject.add_argument("--config", type=Path, help="YAML config file (its savepoint section)")
    inject.add_argument("-n", "--namespace", help="namespace the object is created in (default: its own, or default)")
    add_setting_flags(inject, *FLAGS, helps=HELPS)
    inject.add_argument("--patch", action="store_true", help="print the JSONPatch instead of the object")
    inject.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from relay.commands.inject import run_inject
    from relay.logs import configure_logging

    configure_logging("console", "warning")  # stdout carries the object; only problems go to stderr
    settings = settings_of(args)
    return run_inject(args.file, settings.savepoint, args.job_id, args.patch, args.namespace, sys.stdout, sys.stderr)
