"""The layers: which of our folders each production module may import, read from the source with `ast`.

Every import counts, at the top of a module, inside a function (the lazy ones) and under `TYPE_CHECKING`: an arrow
is an arrow whenever it is followed. The rules are `LAYERS`, one row per room; the top-level rows are the Layers
table of docs/design.md, the failover/ rooms the ones failover/__init__.py states.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("failover", "webhook", "controllers", "certs", "relay")

# Room -> the other rooms it may import (a module may always import its own room). A room is a folder; a module is
# in the deepest room that holds it, and an allowed folder admits every room inside it.
LAYERS: dict[str, tuple[str, ...]] = {
    "failover": (),  # the package itself: failover/__init__.py
    "failover/core": (),
    "failover/state": ("failover/core",),
    "failover/admission": ("failover/core", "failover/state"),
    "failover/fence": ("failover/core", "failover/state"),
    "failover/reconcile": ("failover/core", "failover/state", "failover/fence"),
    "failover/moves": ("failover/core", "failover/state", "failover/fence", "failover/reconcile"),
    "failover/views": ("failover/core", "failover/state", "failover/fence", "failover/reconcile", "failover/moves"),
    "failover/readiness": ("failover/core", "failover/state", "failover/fence", "failover/admission"),
    "webhook": ("failover", "certs"),
    # The wiring (manager) and the caBundle upkeep, which reads our CA from the cert dir.
    "controllers": ("failover", "certs", "controllers/access", "controllers/loop", "controllers/reconcilers"),
    "controllers/access": ("failover",),
    "controllers/loop": ("failover", "controllers/access"),
    "controllers/reconcilers": ("failover", "controllers/access", "controllers/loop"),
    "controllers/member": ("failover", "controllers/access"),
    "certs": (),
    "relay": ("failover", "webhook", "controllers", "certs"),
}


@dataclass(frozen=True)
class Import:
    file: str  # e.g. "certs/serving_names.py"
    line: int
    target: str  # the module imported, dotted: "failover.core.names"


def room_of(path: str) -> str:
    """The deepest room holding `path` ("failover/core/names.py" or the module's folder path "failover/core/names")."""
    rooms = [room for room in LAYERS if path == room or path.startswith(room + "/")]
    assert rooms, f"{path} is in no room of LAYERS: add the folder to the table"
    return max(rooms, key=len)


def is_ours(module: str) -> bool:
    return module.split(".")[0] in PACKAGES


def is_module(module: str) -> bool:
    path = ROOT.joinpath(*module.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def production_files() -> list[Path]:
    return sorted(path for package in PACKAGES for path in (ROOT / package).rglob("*.py"))


def imports_of(relative: Path, source: str) -> list[Import]:
    """Every import of ours in `source` (the file `relative` to the root), wherever it stands: relative imports
    resolved, `from package import module` read as `package.module`."""
    package = list(relative.parent.parts)
    found: list[Import] = []
    for node in ast.walk(ast.parse(source, str(relative))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            targets = [
                f"{module}.{alias.name}" if is_module(f"{module}.{alias.name}") else module for alias in node.names
            ]
        else:
            continue
        found += [
            Import(relative.as_posix(), node.lineno, target) for target in dict.fromkeys(targets) if is_ours(target)
        ]
    return found


def broken_rule(found: Import) -> str | None:
    """Why `found` crosses a layer, or None when its room may import the target."""
    room = room_of(found.file)
    target_path = found.target.replace(".", "/")
    target_room = room_of(target_path)
    allowed = LAYERS[room]
    if target_room == room or any(target_path == other or target_path.startswith(other + "/") for other in allowed):
        return None
    may = ", ".join(f"{other}/" for other in allowed) or "nothing of ours"
    return (
        f"{found.file}:{found.line} imports {found.target} ({target_room}/); {room}/ may import its own room and {may}"
    )


def test_every_import_keeps_to_its_layer() -> None:
    files = production_files()
    assert len(files) > 50, "the production packages were not found"
    broken = [
        reason
        for path in files
        for found in imports_of(path.relative_to(ROOT), path.read_text())
        if (reason := broken_rule(found))
    ]
    assert not broken, "imports across the layers (tests/test_layers.py, LAYERS):\n" + "\n".join(broken)


def test_no_module_name_stands_in_two_folders() -> None:
    # A name says what a module is; two `storm.py` in two folders say two things with one name.
    by_name: dict[str, list[str]] = {}
    for path in production_files():
        if path.name != "__init__.py":
            by_name.setdefault(path.name, []).append(path.relative_to(ROOT).as_posix())
    assert {name: paths for name, paths in by_name.items() if len(paths) > 1} == {}


def test_every_room_is_a_folder() -> None:
    assert [room for room in LAYERS if not (ROOT / room / "__init__.py").is_file()] == []


def test_the_rows_are_the_layers_table_of_the_design() -> None:
    # docs/design.md, "Layers": | `folder/` | holds | may import |, the last column naming rooms in backticks, dotted
    # (`failover.core`) or not (`certs`). The failover package itself has no row: only its rooms do.
    table = (ROOT / "docs" / "design.md").read_text().split("## Layers", 1)[1]
    rows = re.findall(r"^\| `([\w/]+)/` \|.*\| ([^|]*) \|$", table.split("\n\n", 2)[1], re.MULTILINE)
    documented = {
        folder: sorted(name.replace(".", "/") for name in re.findall(r"`([\w.]+)`", may)) for folder, may in rows
    }
    documented["relay"] = sorted(set(PACKAGES) - {"relay"})  # "everything"
    assert documented == {room: sorted(LAYERS[room]) for room in LAYERS if room != "failover"}


def test_lazy_and_type_checking_imports_are_read() -> None:
    # A module-level scan would miss both of these; an arrow is an arrow whenever it is followed.
    source = (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from relay.settings import Settings\n"
        "def serve():\n    from webhook import server\n    from . import store\n"
    )
    found = imports_of(Path("certs/probe.py"), source)
    assert [(one.line, one.target) for one in found] == [
        (3, "relay.settings"),
        (5, "webhook.server"),
        (6, "certs.store"),
    ]
    assert [broken_rule(one) for one in found] == [
        "certs/probe.py:3 imports relay.settings (relay/); certs/ may import its own room and nothing of ours",
        "certs/probe.py:5 imports webhook.server (webhook/); certs/ may import its own room and nothing of ours",
        None,
    ]
