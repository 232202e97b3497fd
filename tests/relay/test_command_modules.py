"""How relay/ is laid out: each command owns its parser and its run, building every parser loads none of what the
commands do, no command's module imports another command's, and each package of relay/ names its modules in its
docstring."""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
from pathlib import Path

import pytest

from relay.cli import build_parser
from tests.test_layers import imports_of

REPO = Path(__file__).resolve().parents[2]
RELAY = REPO / "relay"
COMMANDS = RELAY / "commands"
# The modules of relay/commands/ that are no command's: what the commands share (relay/commands/__init__.py), and
# `reference`, which renders docs/cli.md. They import none of a command's modules.
SHARED = frozenset({"conventions", "documents", "online", "restore_lookup", "readiness_report", "reference"})


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


def command_units() -> dict[str, set[str]]:
    """Each module of relay/commands/ (a package, `check`, counts as one) and those of relay/commands/ it imports,
    wherever the import stands (a `*_command` imports its work inside `run`)."""
    units: dict[str, set[str]] = {}
    for path in sorted(COMMANDS.rglob("*.py")):
        relative = path.relative_to(COMMANDS)
        if relative == Path("__init__.py"):
            continue
        unit = relative.parts[0].removesuffix(".py")
        prefix = "relay.commands."
        imported = {
            found.target.removeprefix(prefix).split(".")[0]
            for found in imports_of(path.relative_to(REPO), path.read_text())
            if found.target.startswith(prefix)
        }
        units.setdefault(unit, set()).update(imported - {unit})
    return units


def test_no_command_module_imports_another_commands() -> None:
    # A command is its `*_command` module and every module of relay/commands/ it reaches without passing through a
    # shared one. A module two commands reach is one command's module imported by another: what they share goes
    # into a module of its own, listed in SHARED (as kubectl's commands share cmd/util, not each other).
    units = command_units()
    assert {"status", "readiness_check", "drill_run", "drain_cluster", "online"} <= set(units)
    owners: dict[str, list[str]] = {}
    for command in sorted(unit for unit in units if unit.endswith("_command")):
        reached, todo = {command}, [command]
        while todo:
            for imported in units[todo.pop()] - SHARED - reached:
                reached.add(imported)
                todo.append(imported)
        for unit in reached - {command}:
            owners.setdefault(unit, []).append(command)
    assert {unit: found for unit, found in owners.items() if len(found) > 1 or unit.endswith("_command")} == {}
    assert sorted(set(units) - SHARED - set(owners) - {u for u in units if u.endswith("_command")}) == [], (
        "a module no command imports: a command's, or shared (SHARED)"
    )
    assert {unit: sorted(units[unit] - SHARED) for unit in SHARED if units.get(unit, set()) - SHARED} == {}, (
        "a shared module imports a command's module"
    )
