"""The `failover-relay` command line."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from relay.commands import (
    check_command,
    inject_command,
    legacy_purge_modes_command,
    manifests_command,
    status_command,
)
from relay.commands.conventions import add_command, refuse
from relay.settings import ControllerMode, SettingsError, add_setting_flags, settings_of

# The settings each command takes as flags (relay/settings.py declares each flag with its setting).
_CONTROLLER_FLAGS = ("controllers.kubeconfig", "controllers.leaseNamespace", "controllers.failback")
_LOGGING_FLAGS = ("logging.format", "logging.level")
SERVE_FLAGS = (
    "server.host",
    "server.port",
    "server.certDir",
    "server.serviceName",
    "server.namespace",
    "server.maxBodyBytes",
    *_LOGGING_FLAGS,
    "savepoint.checkpointRoot",
    "savepoint.failureMode",
    *_CONTROLLER_FLAGS,
    "controllers.mode",
    "server.clientCAFile",
    "server.drainSeconds",
    "server.graceSeconds",
    "server.caBundleSync",
    "server.maxConnections",
    "server.maxConnectionsPerPeer",
    "server.member",
    "fence.storage",
    "fence.memberCluster",
    "fence.memberKubeconfig",
)
CONTROLLERS_FLAGS = (*_CONTROLLER_FLAGS, *_LOGGING_FLAGS, "fence.storage")


def package_version() -> str:
    """The installed package's version (its metadata, from pyproject.toml)."""
    try:
        return version("failover-relay")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="failover-relay",
        description="Admission webhook and reconcile loop for Karmada application failover of stateful workloads.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = add_command(commands, "serve", help="run the TLS admission server")
    serve.add_argument("--config", type=Path, help="YAML config file (flags override it)")
    add_setting_flags(serve, *SERVE_FLAGS)

    controllers = add_command(
        commands,
        "controllers",
        help="run the reconcile loop alone (no webhook), with /metrics and /healthz over plain HTTP",
    )
    controllers.add_argument("--config", type=Path, help="YAML config file (flags override it)")
    add_setting_flags(controllers, *CONTROLLERS_FLAGS)
    controllers.add_argument(
        "--metrics-address",
        default="127.0.0.1:9090",
        metavar="HOST:PORT",
        help="where /metrics and /healthz answer (default 127.0.0.1:9090)",
    )

    inject_command.add_parser(commands)
    check_command.add_parser(commands)

    legacy_purge_modes_command.add_parser(commands)

    status_command.add_parser(commands)

    manifests_command.add_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    run = getattr(args, "run", None)
    if run is not None:
        try:
            return int(run(args))
        except SettingsError as error:
            return refuse(error)
    # The commands that run with the settings: a SettingsError from any of them (the config file, a flag, a check at
    # start-up) ends it with one line and exit 2.
    command = {"serve": _serve, "controllers": _controllers}[args.command]
    try:
        return command(args)
    except SettingsError as error:
        return refuse(error)


def _controllers(args: argparse.Namespace) -> int:
    from controllers.kube import NoClusterConfig
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


def _serve(args: argparse.Namespace) -> int:
    # Nothing here imports the Kubernetes client: in member mode (server.member) the process never loads it.
    import structlog

    from certs.store import CertificateError
    from relay.logs import configure_logging
    from relay.runtime import ALLOW_ENV, ssl_leak_problem
    from relay.serve import serve
    from relay.settings import in_cluster

    settings = settings_of(args)
    leak = ssl_leak_problem()
    if leak and in_cluster() and os.environ.get(ALLOW_ENV) != "1":
        return refuse(leak)
    configure_logging(settings.log_format, settings.log_level)
    if leak and in_cluster():
        # Allowed by ALLOW_ENV: anything that reaches the Service can grow this pod's memory, so it stays an error,
        # on every start, where alerts on error lines see it (relay/runtime.py).
        structlog.get_logger("failover_relay.runtime").error("python_leaks_tls_memory", problem=leak)
    elif leak:
        # Outside a cluster the listener is on loopback (the local dev loop, `make run`): worth knowing, not an error.
        structlog.get_logger("failover_relay.runtime").warning("python_leaks_tls_memory", problem=leak)
    try:
        asyncio.run(serve(settings))
    except CertificateError as error:  # missing cluster access arrives as a SettingsError, which main reports
        return refuse(error)
    except OSError as error:  # the port is taken, the address does not exist
        return refuse(f"cannot listen on {settings.host}:{settings.port}: {error.strerror}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
