"""How relay/ is laid out: each command owns its parser and its run, building every parser loads none of what the
commands do, and each package of relay/ names its modules in its docstring."""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
from pathlib import Path

import pytest

from relay.cli import build_parser

REPO = Path(__file__).resolve().parents[2]
RELAY = REPO / "relay"


def leaves(parser: argparse.ArgumentParser, words: str = "") -> dict[str, argparse.ArgumentParser]:
    """Every command that runs (`manifests webhook`, not `manifests`), by its words."""
    found = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.update(leaves(sub, f"{words} {name}".strip()))
    return found or {words: parser}


def test_every_command_runs_what_its_own_module_says() -> None:
    commands = leaves(build_parser())
    assert {"serve", "controllers", "check", "test", "status", "manifests webhook"} <= set(commands)
    for words, parser in commands.items():
        run = parser.get_default("run")
        assert callable(run), f"failover-relay {words} has no run"
        assert run.__module__.startswith("relay.commands.") and run.__module__.endswith("_command"), words


def test_building_every_parser_loads_none_of_what_the_commands_do() -> None:
    # What `serve --member` must never load (the Kubernetes client, PyYAML) included: the parsers only need settings.
    code = "import sys; from relay.cli import build_parser; build_parser(); print('\\n'.join(sys.modules))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60, cwd=REPO
    ).stdout.split()
    packages = {name.split(".")[0] for name in loaded if not name.startswith("_")}
    assert packages - set(sys.stdlib_module_names) - {"failover", "relay"} == set()
    relay = [name for name in loaded if name.startswith("relay.")]
    assert [
        name
        for name in relay
        if name not in ("relay.cli", "relay.commands", "relay.commands.conventions", "relay.settings")
        and not name.startswith("relay.settings.")
        and not (name.startswith("relay.commands.") and name.endswith("_command"))
    ] == []


@pytest.mark.parametrize(
    "package", sorted(path.parent for path in RELAY.rglob("__init__.py")), ids=lambda path: path.name
)
def test_each_package_names_its_modules(package: Path) -> None:
    docstring = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
    modules = [path.stem for path in package.glob("*.py") if path.name != "__init__.py"]
    modules += [path.parent.name for path in package.glob("*/__init__.py")]
    assert modules and [name for name in modules if f"`{name}`" not in docstring] == []
