"""What every command does alike: its --help opens with the line the command list shows for it (`add_command`), a
mistyped command or flag gets the command's own usage and a "did you mean" (`Parser`), and when it cannot go on it
says why in one line on stderr and exits 2, the exit code of bad input (`refuse`). The settings both of the loop's
commands (`serve`, `controllers`) take as flags: `LOOP_FLAGS`, `LOGGING_FLAGS`.

And what the online commands (`status`, `readiness`, `drill`, `drain`, `undrain`) share to build their parsers, as
kubectl's `genericclioptions` are the flags its commands share: the relay's config file and the settings they reach
the Karmada apiserver and the checkpoint storage with (`add_online_flags`; the readiness check's, `readiness` and
`drill`: `add_readiness_check_flags`), the output format (`add_output_flag`), how long to follow a move and how often
to look (`add_follow_flags`, `follow_problem`), the URL of karmada-controller-manager's metrics
(`metrics_url_problem`), and the start of their run (`online_settings`). What they work with once they run is
`online`: this module is loaded to build every parser, so it imports nothing of what the commands do.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from pathlib import Path
from typing import Any, NoReturn, TextIO

from relay.settings import Settings, add_setting_flags, settings_of

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


def refuse(problem: object, err: TextIO | None = None) -> int:
    """Say why the command cannot go on, in one line on stderr (or `err`); the exit code of bad input."""
    print(f"failover-relay: {problem}", file=err or sys.stderr)
    return EXIT_BAD_INPUT


# The settings the loop's commands (`serve`, and `controllers`, the loop alone) both take as flags: the loop's and
# logging's (relay/settings/declarations.py declares each flag with its setting).
LOOP_FLAGS = ("controllers.kubeconfig", "controllers.leaseNamespace", "controllers.failback")
LOGGING_FLAGS = ("logging.format", "logging.level")

# The online commands' flags. The settings' declared help speaks of `serve`; each command says what they do for it.
KARMADA_APISERVER = "the Karmada apiserver (default: $KUBECONFIG, ~/.kube/config)"


def add_online_flags(
    command: argparse.ArgumentParser,
    *,
    config: str,
    storage: str,
    kubeconfig: str = KARMADA_APISERVER,
    lease_namespace: str | None = None,
) -> None:
    """--config (the relay's YAML config file; `config` says which of its sections the command reads), then the flags
    of the settings the command reads with: the checkpoint root (`storage` says what for), the kubeconfig, and, when
    `lease_namespace` says what for, the namespace of the relay's Lease."""
    command.add_argument("--config", type=Path, help=f"the relay's YAML config file ({config})")
    helps = {"savepoint.checkpointRoot": storage, "controllers.kubeconfig": kubeconfig}
    if lease_namespace is not None:
        helps["controllers.leaseNamespace"] = lease_namespace
    add_setting_flags(command, *helps, helps=helps)


def add_readiness_check_flags(command: argparse.ArgumentParser) -> None:
    """The online flags of the readiness check, for `readiness` and for `drill`, which runs the check first."""
    add_online_flags(
        command,
        config="its savepoint, controllers and fence sections",
        storage="the checkpoint storage the relay restores from (path, file://, s3://, any fsspec URL): the restore "
        "lookup and the member relays' heartbeats are read there",
        lease_namespace="namespace of the relay's Lease on the Karmada apiserver (default: failover-relay, then "
        "default)",
    )


def add_output_flag(command: argparse.ArgumentParser) -> None:
    """-o/--output: a table for people, or the same data whole as JSON or YAML."""
    command.add_argument(
        "-o",
        "--output",
        choices=("table", "json", "yaml"),
        default="table",
        help="table for people (default), json or yaml for scripts",
    )


def add_follow_flags(command: argparse.ArgumentParser, timeout: float, timeout_help: str) -> None:
    """--timeout (`timeout_help`, with its default) and --interval, for a command that follows a move to its end."""
    command.add_argument("--timeout", type=float, default=timeout, help=f"{timeout_help} (default {timeout:g})")
    command.add_argument("--interval", type=float, default=2.0, help="seconds between looks (default 2)")


def follow_problem(args: argparse.Namespace) -> str | None:
    """Why --timeout and --interval cannot be followed, or None."""
    if args.timeout <= 0 or args.interval <= 0:
        return "--timeout and --interval must be greater than 0"
    return None


def metrics_url_problem(url: str | None) -> str | None:
    """Why `--controller-manager-metrics` cannot be read, or None (an http(s) URL, or not given)."""
    if url is not None and not url.startswith(("http://", "https://")):
        return f"--controller-manager-metrics {url!r} is not an http(s) URL"
    return None


def online_settings(args: argparse.Namespace) -> Settings:
    """The start of an online command's run: logging for problems only, on stderr (stdout carries what the command
    prints), and the settings of its --config and flags."""
    from relay.logs import configure_logging

    configure_logging("console", "warning")
    return settings_of(args)
