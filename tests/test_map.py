"""The map is executable: what tells a reader where things are is held to the code.

- **Paths.** Every path of this repository named in the comments and docstrings of the Python sources (the production
  packages, tests/, bench/, hack/), in the comments of hack/'s scripts, and anywhere in README.md and docs/*.md,
  resolves (not CHANGELOG.md: its entries name the tree as it was). A path of this repository is one whose first segment
  is a top-level folder of ours (the first segment of a `git ls-files` entry with a slash): `controllers/manager.py`,
  `failover/state/`, `tests/karmada_env/`. Karmada's own paths (`pkg/...`, `charts/karmada/...`, `operator/...`,
  `cmd/...`) and the Flink operator's (`flink-kubernetes-operator/...`) start with no name of ours and are never read as
  ours; neither is a segment of a longer path (a URL, `~/.cache/failover-relay/...`, `$KARMADA_SRC/hack/...`,
  `../shared/...`). Where another project has a folder of our name (Karmada's `hack/`, its website's `docs/`), the text
  says whose it is: a path right after "Karmada's" or "website" is theirs. What follows a path is not part of it:
  `:LINE`, ` FUNCTION`, a `#heading`. A path resolves when the file or folder is there, or it names a module without its
  `.py`, or (a glob, `hack/*.sh`, or `{a,b}`, or a `<placeholder>` segment) something matches; a path git ignores is a
  build product (`bench/.venv`) and is not checked.
- **Packages.** Each production package's docstring names every module and sub-package beside it in backticks
  (`` `name` ``, `` `name/` `` or `` `name.py` ``).
- **Tables.** docs/design.md's step table ("An eviction task, from informer event to API write") lists
  `controllers.reconcilers.binding_reconciler.STEPS`, in order; its wiring table ("The reconcile wiring") has one row
  per controller of `controllers.manager.CONTROLLERS`: its kind, its reconciler, the resources that queue its keys and
  its workers. Both are read from the code as it is.
"""

from __future__ import annotations

import ast
import functools
import itertools
import re
import subprocess
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PRODUCTION = ("failover", "webhook", "controllers", "certs", "relay")
PYTHON_SOURCES = (*PRODUCTION, "tests", "bench", "hack")
DESIGN = REPO / "docs" / "design.md"

# A path named right after its owner is another project's: Karmada's `hack/deploy-karmada.sh`, and in the text of
# Karmada's website `docs/userguide/...`.
_FOREIGN = re.compile(r"(?:Karmada's|website(?:'s)?)[\s`'\"]*$")
_BACKTICKED = re.compile(r"`([^`\s]+)`")


def git_files(*options: str) -> tuple[str, ...]:
    listing = subprocess.run(["git", "ls-files", *options], cwd=REPO, capture_output=True, text=True, check=True)
    return tuple(listing.stdout.splitlines())


@cache
def top_level() -> frozenset[str]:
    """Our top-level folders: the first segment of every tracked file in a folder."""
    return frozenset(name.split("/", 1)[0] for name in git_files() if "/" in name)


@cache
def _path_pattern() -> re.Pattern[str]:
    # Starts a word (not inside a URL, a longer path, a `failover-relay/` or `../`), then a name of ours and a slash;
    # runs until a space, a quote, a bracket or punctuation that ends a path in prose (`:` before a line number).
    names = "|".join(re.escape(name) for name in sorted(top_level(), key=len, reverse=True))
    return re.compile(rf"(?<![\w.~/$@-])(?:{names})/(?:[^\s`'\"()\[\],;:|{{}}]|\{{[^{{}}]*\}})*")


def paths_in(text: str) -> Iterator[tuple[int, str]]:
    """(offset in `text`, path) of every path of ours named in `text`, anchors and trailing full stops dropped."""
    for match in _path_pattern().finditer(text):
        if _FOREIGN.search(text[max(0, match.start() - 40) : match.start()]):
            continue
        path = match.group(0).split("#", 1)[0].rstrip(".")
        yield match.start(), path


def texts_of(path: Path) -> Iterator[tuple[int, str]]:
    """(first line, text) of what names paths in a file: a page's whole text, a script's comments, a Python
    module's comments and docstrings (every string standing alone as a statement)."""
    source = path.read_text()
    if path.suffix == ".md":
        yield 1, source
    elif path.suffix == ".sh":
        for number, line in enumerate(source.splitlines(), 1):
            comment = re.search(r"(?:^|\s)#(.*)", line)
            if comment:
                yield number, comment.group(1)
    else:
        # Comments: a `#` outside every string literal (the strings are matched first, so one inside is skipped).
        for lexeme in _PYTHON_LEXEMES.finditer(source):
            if lexeme.lastgroup == "comment":
                yield source.count("\n", 0, lexeme.start()) + 1, lexeme.group()
        lines = source.splitlines()
        for node in _standalone_strings(ast.parse(source, str(path))):
            text = "\n".join(lines[node.lineno - 1 : node.end_lineno])
            yield node.lineno, text[node.col_offset :]


# A string literal (any prefix, triple-quoted or not) or a comment, whichever starts first.
_PYTHON_LEXEMES = re.compile(
    r"""[rRbBuUfF]{0,2}(?:\"\"\"(?:\\[\s\S]|[^\\])*?\"\"\"|'''(?:\\[\s\S]|[^\\])*?'''"""
    r"""|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')|(?P<comment>#[^\n]*)"""
)


def _standalone_strings(tree: ast.Module) -> Iterator[ast.Expr]:
    """The strings that stand alone as a statement (docstrings, and the ones under an attribute), walking statements
    only: a walk of every expression node would cost the test most of its time."""
    bodies = ("body", "orelse", "finalbody", "handlers", "cases")
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        for child in (child for field in bodies for child in getattr(node, field, None) or ()):
            if (
                isinstance(child, ast.Expr)
                and isinstance(child.value, ast.Constant)
                and isinstance(child.value.value, str)
            ):
                yield child
            elif isinstance(child, ast.stmt | ast.excepthandler | ast.match_case):
                stack.append(child)


@cache
def sources() -> tuple[Path, ...]:
    """The files read for paths: tracked or new, never what git ignores (a `.venv`)."""
    files = set(git_files("--cached", "--others", "--exclude-standard"))
    python = sorted(name for name in files if name.endswith(".py") and name.split("/", 1)[0] in PYTHON_SOURCES)
    scripts = sorted(name for name in files if re.fullmatch(r"hack/[^/]+\.sh", name))
    pages = sorted(name for name in files if re.fullmatch(r"docs/[^/]+\.md", name))
    return tuple(REPO / name for name in [*python, *scripts, "README.md", *pages] if (REPO / name).is_file())


@cache
def ignored(path: str) -> bool:
    """Whether git ignores `path` (`bench/.venv`, `flink-probe/target/`): built, not part of the map."""
    return any(
        subprocess.run(["git", "check-ignore", "-q", "--no-index", one], cwd=REPO, check=False).returncode == 0
        for one in (path, path.rstrip("/") + "/")
    )


def expanded(path: str) -> list[str]:
    """The paths a `{a,b}` in `path` stands for (whitespace inside the braces dropped: they may wrap a line)."""
    brace = re.search(r"\{([^{}]*)\}", path)
    if brace is None:
        return [path]
    return [
        one
        for choice in brace.group(1).split(",")
        for one in expanded(path[: brace.start()] + re.sub(r"\s+", "", choice) + path[brace.end() :])
    ]


def resolves(path: str) -> bool:
    pattern = re.sub(r"<[^>]*>", "*", path)
    if "*" in pattern:
        return any(REPO.glob(pattern.rstrip("/")))
    target = REPO / pattern
    return target.exists() or target.with_name(target.name + ".py").is_file() or ignored(pattern.rstrip("/"))


@cache
def named_paths() -> tuple[tuple[str, int, str], ...]:
    """(file, line, path) of every path of ours the sources name."""
    return tuple(
        (file.relative_to(REPO).as_posix(), first + text.count("\n", 0, offset), path)
        for file in sources()
        for first, text in texts_of(file)
        for offset, path in paths_in(text)
    )


def unresolved() -> list[str]:
    return [
        f"{file}:{line}: {path}"
        for file, line, named in named_paths()
        for path in expanded(named)
        if not resolves(path)
    ]


def test_the_rule_knows_our_paths_from_theirs() -> None:
    assert {"failover", "controllers", "tests", "hack", "docs", "chart", "flink-probe"} <= top_level()
    assert not {"pkg", "charts", "operator", "cmd", "flink-kubernetes-operator", "shared"} & top_level()
    text = (
        "(`controllers/manager.py:86` `_lead`) reads `webhook/server.py` `AdmissionServer._serve` and\n"
        "docs/design.md#layers, and docs/operations.md. Karmada's pkg/controllers/taint/taint_manager.go,\n"
        "charts/karmada/_crds, flink-kubernetes-operator/docs/x.md, ../shared/karmada/ and\n"
        "~/.cache/failover-relay/envtest/<version>/ are not ours; nor Karmada's ``hack/deploy-karmada.sh``, the\n"
        "website `docs/userguide/failover/`, https://github.com/karmada-io/karmada/tree/v1.19/docs/x or\n"
        "$KARMADA_SRC/hack/util.sh. Ours: hack/*.sh and ``manifests/deploy/{namespace,\n    rbac}.yaml``."
    )
    found = [path for _, path in paths_in(text)]
    assert found == [
        "controllers/manager.py",
        "webhook/server.py",
        "docs/design.md",
        "docs/operations.md",
        "hack/*.sh",
        "manifests/deploy/{namespace,\n    rbac}.yaml",
    ]
    assert expanded(found[-1]) == ["manifests/deploy/namespace.yaml", "manifests/deploy/rbac.yaml"]
    assert all(resolves(path) for path in [*found[:-1], *expanded(found[-1])])
    assert resolves("failover/core/names")  # a module, without its .py
    assert resolves("bench/.venv/bin/python")  # built by bench/run.py, ignored by git
    assert not resolves("failover/core/no_such_module.py")


def test_the_sources_are_read() -> None:
    # A reader that found nothing would pass vacuously.
    files = {file.relative_to(REPO).as_posix() for file in sources()}
    assert {"docs/design.md", "README.md", "hack/build-karmada.sh", "controllers/manager.py"} <= files
    named = {path for _, _, path in named_paths()}
    assert len(named) > 200
    assert "controllers/reconcilers/binding_reconciler.py" in named


def test_every_path_named_in_comments_docstrings_and_docs_resolves() -> None:
    broken = unresolved()
    assert not broken, "paths of this repository that are not there (file:line: path):\n" + "\n".join(broken)


# -- the packages' docstrings ----------------------------------------------------------------------------------------


def packages() -> list[Path]:
    return sorted(init.parent for folder in PRODUCTION for init in (REPO / folder).rglob("__init__.py"))


def members(package: Path) -> list[str]:
    """The modules and sub-packages beside a package's `__init__.py`."""
    return sorted(
        [path.stem for path in package.glob("*.py") if path.name != "__init__.py"]
        + [path.name for path in package.iterdir() if (path / "__init__.py").is_file()]
    )


def names_in_docstring(package: Path) -> set[str]:
    docstring = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
    return {name.removesuffix("/").removesuffix(".py") for name in _BACKTICKED.findall(docstring)}


def test_every_package_is_read() -> None:
    found = {package.relative_to(REPO).as_posix() for package in packages()}
    assert {"controllers/access", "controllers/reconcilers", "failover/moves", "relay/commands/check"} <= found


@pytest.mark.parametrize("package", packages(), ids=lambda package: package.relative_to(REPO).as_posix())
def test_each_package_docstring_names_its_modules(package: Path) -> None:
    missing = [name for name in members(package) if name not in names_in_docstring(package)]
    assert not missing, f"{package.relative_to(REPO)}/__init__.py: its docstring does not name {missing} in backticks"


# -- docs/design.md's tables -----------------------------------------------------------------------------------------


def table_under(heading: str) -> list[list[str]]:
    """The cells of the first table under `heading` of docs/design.md (before the next heading), header dropped."""
    text = DESIGN.read_text()
    start = text.index(f"\n{heading}\n")
    level = heading.split(" ", 1)[0]
    section = re.split(rf"\n#{{1,{len(level)}}} ", text[start + len(heading) + 2 :], maxsplit=1)[0]
    lines = itertools.dropwhile(lambda line: not line.startswith("|"), section.splitlines())
    rows = list(itertools.takewhile(lambda line: line.startswith("|"), lines))
    assert len(rows) > 2, f"docs/design.md: no table under {heading!r}"
    return [[cell.strip() for cell in row.strip("|").split(" | ")] for row in rows[2:]]


def unquoted(cell: str) -> str:
    return cell.strip().strip("`")


def test_the_step_table_is_steps_in_order() -> None:
    from controllers.reconcilers.binding_reconciler import STEPS

    table = table_under("### An eviction task, from informer event to API write")
    code = [getattr(step, "name", None) or step.__name__ for step in STEPS]
    assert [unquoted(row[0]) for row in table] == code, (
        "docs/design.md, 'An eviction task, from informer event to API write': the step table's first column must "
        "be controllers/reconcilers/binding_reconciler.py's STEPS, in order"
    )


def reconciler_name(factory: object) -> str:
    while isinstance(factory, functools.partial):
        factory = factory.func
    return getattr(factory, "__name__", repr(factory))


def queued_by(cell: str) -> set[str]:
    """The resources of a "queued by" cell (`Cluster: the bindings on it; Work: ...`), `(Cluster)ResourceBinding`
    read as both."""
    found = set()
    for part in cell.split(";"):
        resource = part.split(":", 1)[0].strip()
        match = re.fullmatch(r"\((\w+)\)(\w+)", resource)
        found |= {match.group(2), match.group(1) + match.group(2)} if match else {resource}
    return found


def test_the_wiring_table_is_controllers() -> None:
    from controllers.manager import CONTROLLERS

    table = table_under("## The reconcile wiring")
    documented = [(unquoted(row[0]), unquoted(row[1])) for row in table]
    code = [(spec.resource.kind, reconciler_name(spec.reconciler)) for spec in CONTROLLERS]
    assert documented == code, (
        "docs/design.md, 'The reconcile wiring': one row per controller of controllers/manager.py's CONTROLLERS "
        "(its kind, its reconciler), in order"
    )


def test_the_wiring_table_says_what_queues_each_controller_and_its_workers() -> None:
    from controllers.manager import CONTROLLERS

    table = table_under("## The reconcile wiring")
    documented = {unquoted(row[0]): (queued_by(row[2]), unquoted(row[3])) for row in table}
    code = {
        spec.resource.kind: (
            {watch.resource.kind for watch in spec.watches},
            "--workers" if spec.workers is None else str(spec.workers),
        )
        for spec in CONTROLLERS
    }
    assert documented == code, (
        "docs/design.md, 'The reconcile wiring': each controller's 'queued by' resources and workers, as "
        "controllers/manager.py's CONTROLLERS declares them"
    )
