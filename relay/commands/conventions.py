"""What every command does alike: its --help opens with the line the command list shows for it (`add_command`), and
when it cannot go on it says why in one line on stderr and exits 2, the exit code of bad input (`refuse`)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

Subcommands = argparse._SubParsersAction  # what `add_subparsers` returns; argparse names it only privately

EXIT_BAD_INPUT = 2


def add_command(commands: Subcommands, name: str, *, help: str, **options: Any) -> argparse.ArgumentParser:
    """A subcommand whose --help opens with the line the command list shows for it (argparse keeps them apart)."""
    options.setdefault("description", help[0].upper() + help[1:] + ".")
    return commands.add_parser(name, help=help, **options)


def refuse(problem: object) -> int:
    """Say why the command cannot go on, in one line on stderr; the exit code of bad input."""
    print(f"failover-relay: {problem}", file=sys.stderr)
    return EXIT_BAD_INPUT
