"""Command-line flags, derived from the declarations, and the settings a command runs with.

A command lists the config keys it takes as flags (relay/commands/); `add_setting_flags` adds each under the one name
its declaration gives it, `flag_values` reads back the ones given, and `settings_of` puts the config file, the flags
and what the command fixes together, checked as a whole.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from datetime import timedelta
from enum import StrEnum
from pathlib import Path
from typing import Any

from relay.settings.declarations import Settings
from relay.settings.loading import apply, check_settings, declared, load_settings


def add_setting_flags(parser: argparse.ArgumentParser, *keys: str, helps: Mapping[str, str] | None = None) -> None:
    """Add the flags of these settings to `parser`, each under its one declared name; `helps` says what a flag does
    for this command (config key → help) where the declared help speaks of the server."""
    for key in keys:
        entry = declared()[key]
        spec = entry.spec
        flag = spec.flag
        if flag is None:
            raise ValueError(f"setting {key} has no flag")
        help_text = (helps or {}).get(key) or spec.help
        help_text = help_text.format(default=_shown(entry.default)) if help_text else None
        if spec.flag_value is not None:
            parser.add_argument(
                flag, dest=entry.dest, action="store_const", const=spec.flag_value, default=None, help=help_text
            )
            continue
        options: dict[str, Any] = {"dest": entry.dest, "help": help_text, "default": None}
        if isinstance(entry.kind, type) and issubclass(entry.kind, StrEnum):
            options["choices"] = [member.value for member in entry.kind]
        elif entry.kind in (int, float, timedelta):
            options["type"] = int if entry.kind is int else float
            options["metavar"] = "N" if entry.kind is int else "SECONDS" if key.endswith("Seconds") else "NUMBER"
        else:
            options["metavar"] = (
                "URL"
                if key.endswith("Root")
                else "PATH"
                if entry.kind is Path
                else flag.lstrip("-").upper().replace("-", "_")
            )
        parser.add_argument(flag, **options)


def flag_values(args: argparse.Namespace) -> dict[str, Any]:
    """The settings given on the command line, by config key (flags left out are absent)."""
    return {
        key: getattr(args, entry.dest)
        for key, entry in declared().items()
        if getattr(args, entry.dest, None) is not None
    }


def _shown(value: Any) -> str:
    if isinstance(value, timedelta):
        value = value.total_seconds()
    return value.value if isinstance(value, StrEnum) else f"{value:g}" if isinstance(value, float) else str(value)


def settings_of(args: argparse.Namespace, **fixed: object) -> Settings:
    """The config file (`--config`), then the flags, then what the command fixes (`fixed`, by config key); checked as
    a whole. Raises SettingsError, which the command line turns into one line and exit 2."""
    settings = apply(apply(load_settings(args.config), flag_values(args)), fixed)
    check_settings(settings)
    return settings
