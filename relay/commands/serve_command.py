"""`failover-relay serve`: its flags, and start-up: the settings, the Python it runs on (relay/runtime.py) and
logging; then the server of relay/serve.py (and the loop, with cluster access) until a signal. A problem at start-up
is one line and exit 2.

Nothing here imports the Kubernetes client: in member mode (server.member) the process never loads it."""

from __future__ import annotations

import argparse
import asyncio
import os
from pathlib import Path

from relay.commands.conventions import LOGGING_FLAGS, LOOP_FLAGS, Subcommands, add_command, refuse
from relay.settings import add_setting_flags, settings_of

# The settings serve takes as flags, in the order --help lists them (relay/settings/declarations.py declares each
# flag with its setting). The loop's and logging's are the standalone `controllers` command's too.
FLAGS = (
    "server.host",
    "server.port",
    "server.certDir",
    "server.serviceName",
    "server.namespace",
    "server.maxBodyBytes",
    *LOGGING_FLAGS,
    "savepoint.checkpointRoot",
    "savepoint.failureMode",
    *LOOP_FLAGS,
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


def add_parser(commands: Subcommands) -> None:
    serve = add_command(commands, "serve", help="run the TLS admission server")
    serve.add_argument("--config", type=Path, help="YAML config file (flags override it)")
    add_setting_flags(serve, *FLAGS)
    serve.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
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
    except CertificateError as error:  # missing cluster access arrives as a SettingsError, which the CLI reports
        return refuse(error)
    except OSError as error:  # the port is taken, the address does not exist
        return refuse(f"cannot listen on {settings.host}:{settings.port}: {error.strerror}")
    return 0
