"""`failover-relay controllers`: its flags, and start-up: the settings (the loop is on: without cluster access it
cannot start), logging and the metrics address; then the loop of relay/standalone.py until a signal. A problem at
start-up is one line and exit 2."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from relay.commands.conventions import LOGGING_FLAGS, LOOP_FLAGS, Subcommands, add_command, refuse
from relay.settings import ControllerMode, add_setting_flags, settings_of

FLAGS = (*LOOP_FLAGS, *LOGGING_FLAGS, "fence.storage")


def add_parser(commands: Subcommands) -> None:
    controllers = add_command(
        commands,
        "controllers",
        help="run the reconcile loop alone (no webhook), with /metrics and /healthz over plain HTTP",
    )
    controllers.add_argument("--config", type=Path, help="YAML config file (flags override it)")
    add_setting_flags(controllers, *FLAGS)
    controllers.add_argument(
        "--metrics-address",
        default="127.0.0.1:9090",
        metavar="HOST:PORT",
        help="where /metrics and /healthz answer (default 127.0.0.1:9090)",
    )
    controllers.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from controllers.access.kube import NoClusterConfig
    from relay.logs import configure_logging
    from relay.standalone import run_controllers

    settings = settings_of(args, **{"controllers.mode": ControllerMode.ON.value})
    host, _, port = args.metrics_address.rpartition(":")
    try:
        metrics_address = (host.strip("[]") or "127.0.0.1", int(port))
    except ValueError as error:
        return refuse(error)
    configure_logging(settings.log_format, settings.log_level)
    try:
        asyncio.run(run_controllers(settings, metrics_address))
    except NoClusterConfig as error:
        return refuse(error)
    except OSError as error:
        return refuse(f"cannot listen on {args.metrics_address}: {error.strerror}")
    return 0
