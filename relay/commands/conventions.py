"""What every command does alike: its --help opens with the line the command list shows for it (`add_command`), a
mistyped command or flag gets the command's own usage and a "did you mean" (`Parser`), and when it cannot go on it
says why in one line on stderr and exits 2, the exit code of bad input (`refuse`)."""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from typing import Any, NoReturn

Subcommands = argparse._SubParsersAction  # what `add_subparsers` returns; argparse names it only privately

EXIT_BAD_INPUT = 2
# argparse's own wording (3.11 to 3.13) of the two mistakes a suggestion helps with.
_INVALID_CHOICE = re.compile(r"invalid choice: '(?P<given>[^']*)' \(choose from (?P<choices>.*)\)")
_UNRECOGNIZED = re.compile(r"unrecognized arguments: (?P<given>.*)")


class Parser(argparse.ArgumentParser):
    """argparse's parser, with a "did you mean" for a mistyped command or flag (argparse has one from 3.14)."""

    def error(self, message: str) -> NoReturn:
        super().error(message + self._suggestion(message))

    def _suggestion(self, message: str) -> str:
        choice = _INVALID_CHOICE.search(message)
        if choice:
            given = choice.group("given")
            options = [option.strip().strip("'") for option in choice.group("choices").split(",")]
        elif unrecognized := _UNRECOGNIZED.search(message):
            given = next((word for word in unrecognized.group("given").split() if word.startswith("-")), "")
            options = [flag for flag in self._option_string_actions if flag.startswith("--")]
            given = given.partition("=")[0]
        else:
            return ""
        close = difflib.get_close_matches(given, options, n=1, cutoff=0.6) if given else []
        return f" (did you mean {close[0]}?)" if close else ""


def add_command(commands: Subcommands, name: str, *, help: str, **options: Any) -> argparse.ArgumentParser:
    """A subcommand whose --help opens with the line the command list shows for it (argparse keeps them apart)."""
    options.setdefault("description", help[0].upper() + help[1:] + ".")
    return commands.add_parser(name, help=help, **options)


def command_parsers(parser: argparse.ArgumentParser, prefix: str = "") -> dict[str, argparse.ArgumentParser]:
    """Every command and nested command (`manifests webhook`) by its words, in the order `--help` lists them."""
    found = {}
    for action in parser._actions:
        if isinstance(action, Subcommands):
            for name, sub in action.choices.items():
                words = f"{prefix} {name}".strip()
                found[words] = sub
                found.update(command_parsers(sub, words))
    return found


def refuse(problem: object) -> int:
    """Say why the command cannot go on, in one line on stderr; the exit code of bad input."""
    print(f"failover-relay: {problem}", file=sys.stderr)
    return EXIT_BAD_INPUT
