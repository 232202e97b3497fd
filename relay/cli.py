"""The `failover-relay` command line: every command's parser, assembled, and the one the arguments name, run.

Each command adds its own sub-parser and runs (relay/commands/). A SettingsError from any of them (the config file,
a flag, a check at start-up) ends it with one line and exit 2.
"""

from __future__ import annotations

import argparse
import os
import sys

from failover.core.version import package_version
from relay.commands import (
    check_command,
    controllers_command,
    drain_command,
    drill_command,
    inject_command,
    legacy_purge_modes_command,
    manifests_command,
    readiness_command,
    serve_command,
    status_command,
)
from relay.commands.conventions import Parser, Subcommands, refuse
from relay.settings import SettingsError

# What Python itself exits with on EPIPE (docs "Note on SIGPIPE").
EXIT_BROKEN_PIPE = 1

# In the order `failover-relay --help` lists them (check_command adds `check` and `test`).
COMMANDS = (
    serve_command,
    controllers_command,
    inject_command,
    check_command,
    legacy_purge_modes_command,
    status_command,
    readiness_command,
    drill_command,
    drain_command,
    manifests_command,
)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="failover-relay",
        description="Admission webhook and reconcile loop for Karmada application failover of stateful workloads.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # told by the command's own parser, with its usage, not the command list's
        command_parser(parser, args.command).error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        return args.run(args)
    except SettingsError as error:
        return refuse(error)
    except BrokenPipeError:
        # The reader went away (`check ... | head`): stop quietly, as Python's docs advise, not with a traceback;
        # stdout goes to /dev/null so that the interpreter's own flush at exit does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def command_parser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    """The sub-parser of `command`."""
    [commands] = [action for action in parser._actions if isinstance(action, Subcommands)]
    chosen: argparse.ArgumentParser = commands.choices[command]
    return chosen


if __name__ == "__main__":
    sys.exit(main())
