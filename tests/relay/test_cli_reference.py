"""docs/cli.md is what `python -m relay.commands.reference` renders from the parsers: a flag added, renamed or
re-documented in the code changes the page, or this test fails."""

from __future__ import annotations

from pathlib import Path

from relay.cli import build_parser
from relay.commands.conventions import command_parsers
from relay.commands.reference import render

PAGE = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def test_the_page_is_the_parsers_rendered() -> None:
    assert PAGE.read_text() == render(build_parser()), "run: python -m relay.commands.reference docs/cli.md"


def test_every_flag_of_every_command_is_on_the_page() -> None:
    page = PAGE.read_text()
    for words, parser in command_parsers(build_parser()).items():
        section = page.split(f"## failover-relay {words}\n", 1)[1].split("\n## ", 1)[0]
        flags = [flag for action in parser._actions for flag in action.option_strings if action.help != "==SUPPRESS=="]
        assert [flag for flag in flags if flag not in ("-h", "--help") and f"`{flag}`" not in section] == [], words
