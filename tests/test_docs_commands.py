"""Every `failover-relay ...` command line in README.md and docs/*.md parses with the real argparse parser, so the docs
cannot name a flag or a command that does not exist. Synopses (`[--flag]`, `A | B`, `COMMAND`, `...`) are left out;
shell variables become a placeholder. A line in a sh block must parse whole; an inline span may be a mention
(`failover-relay check`, `serve --config`): its command and flags must exist."""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

from relay.cli import build_parser

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(?:sh|bash|shell|console)\n(.*?)^```", re.M | re.S)
INLINE = re.compile(r"`(failover-relay [^`]+)`")
VARIABLE = re.compile(r"\$\{?\w+\}?")
SYNOPSIS = re.compile(r"[\[\]|]|\.\.\.|\bCOMMAND\b")
END = re.compile(r"\s(?:\||>|<|&&|;|#|<<)\s|\s(?:>|<<)\S")


def command_lines() -> list[pytest.ParameterSet]:
    found = []
    for page in PAGES:
        text = page.read_text()
        fenced = [line for block in FENCE.findall(text) for line in block.replace("\\\n", " ").splitlines()]
        for whole, lines in ((True, fenced), (False, INLINE.findall(text))):
            for line in lines:
                line = line.strip().removeprefix("$ ")
                if line.startswith("failover-relay ") and not SYNOPSIS.search(line):
                    found.append(pytest.param(line, whole, id=f"{page.name}: {line[:60]}"))
    return found


@pytest.mark.parametrize(("line", "whole"), command_lines())
def test_the_command_line_parses(line: str, whole: bool) -> None:
    words = shlex.split(END.split(VARIABLE.sub("PLACEHOLDER", line) + " ")[0])[1:]
    if not whole:
        parser = build_parser()
        for word in words:
            if word.startswith("-"):
                assert word.partition("=")[0] in parser._option_string_actions, f"no flag {word}: {line}"
            elif parser._subparsers is not None:
                [commands] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
                assert word in commands.choices, f"no command {word}: {line}"
                parser = commands.choices[word]
        return
    try:
        build_parser().parse_args(words)
    except SystemExit as exit:  # argparse: 0 for --help and --version, 2 for an unknown flag or command
        assert exit.code == 0, f"does not parse: {line}"
