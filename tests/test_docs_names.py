"""docs/troubleshooting.md names only what the code emits, and the pages' relative links lead somewhere.

The troubleshooting page lists, per cause, lines such as ``- **Events:** `ClusterFenced` `` and ``- **Metrics:**
`failover_relay_queue_depth` ``. Every backticked name on such a line must be an Event reason (an ``EVENT_*``
constant of the loop), a metric (with the labels it selects), a log event (the first argument of a logger call) or an
alert of ``manifests/monitoring/prometheus-rules.yaml``; a renamed reason or metric fails here instead of sending an
operator after a name that no longer exists.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from functools import cache
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
TROUBLESHOOTING = REPO / "docs" / "troubleshooting.md"
PRODUCTION = ("failover", "webhook", "controllers", "certs", "relay")
EVENT_PACKAGES = ("failover.state", "failover.reconcile", "failover.moves", "failover.fence", "controllers")
METRIC_TYPES = {"Counter", "Gauge", "Histogram", "Summary"}
LOG_LEVELS = {"debug", "info", "warning", "error", "exception", "critical"}
ALERT_RULES = REPO / "manifests" / "monitoring" / "prometheus-rules.yaml"

_KINDS = ("Events", "Logs", "Metrics", "Alerts")
_GROUP = re.compile(r"^(\s*)- \*\*(" + "|".join(_KINDS) + r"):\*\*(.*)$")
_ITEM = re.compile(r"^\s*(?:- |\d+\. )")
_CODE = re.compile(r"`([^`]+)`")
_METRIC_REF = re.compile(r"^(failover_relay_[a-z0-9_]+)(?:\{([^}]*)\})?$")
_LABEL = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=|,|$)")


def _python_files() -> list[Path]:
    return [path for package in PRODUCTION for path in sorted((REPO / package).rglob("*.py"))]


@cache
def metrics() -> dict[str, frozenset[str]]:
    """Every metric the production code declares, with its label names (read from the constructor calls)."""
    found: dict[str, frozenset[str]] = {}
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in METRIC_TYPES):
                continue
            if not (node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                continue
            labels = node.args[2] if len(node.args) > 2 else None
            for keyword in node.keywords:
                if keyword.arg == "labelnames":
                    labels = keyword.value
            names = ast.literal_eval(labels) if labels is not None else ()
            found[node.args[0].value] = frozenset(names)
    return found


@cache
def log_events() -> frozenset[str]:
    """The first argument of every ``log.<level>("name", ...)`` call in the production code, and of ``write(...)``
    where a logger method is handed in as ``write`` (the review line of webhook/server.py, at info or debug); and the
    two events of every ``Outage(log, "failed", "recovered")`` (controllers/access/outage.py logs them)."""
    found = set()
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            if isinstance(node.func, ast.Name) and node.func.id == "Outage":
                found.update(
                    arg.value for arg in node.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
                )
            elif (
                (
                    (isinstance(node.func, ast.Attribute) and node.func.attr in LOG_LEVELS)
                    or (isinstance(node.func, ast.Name) and node.func.id == "write")
                )
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                found.add(node.args[0].value)
    return frozenset(found)


@cache
def event_reasons() -> frozenset[str]:
    """The values of the ``EVENT_*`` string constants of the loop's modules, in every room of its packages."""
    found = set()
    for name in EVENT_PACKAGES:
        package = importlib.import_module(name)
        modules = [package] + [
            importlib.import_module(info.name) for info in pkgutil.walk_packages(package.__path__, name + ".")
        ]
        for module in modules:
            found.update(
                value
                for attribute, value in vars(module).items()
                if attribute.startswith("EVENT_") and isinstance(value, str)
            )
    return frozenset(found)


@cache
def alerts() -> frozenset[str]:
    groups = yaml.safe_load(ALERT_RULES.read_text())["groups"]
    return frozenset(rule["alert"] for group in groups for rule in group["rules"] if "alert" in rule)


def named(page: Path) -> list[tuple[int, str, str]]:
    """(line number, kind, name) of every backticked name on the page's Events/Logs/Metrics/Alerts lines."""
    lines = page.read_text().splitlines()
    found = []
    index = 0
    while index < len(lines):
        match = _GROUP.match(lines[index])
        index += 1
        if not match:
            continue
        start, indent, kind, text = index, len(match.group(1)), match.group(2), match.group(3)
        # Continuation lines: indented deeper than the bullet, and not an item of their own.
        while index < len(lines) and lines[index].strip() and not _ITEM.match(lines[index]):
            if len(lines[index]) - len(lines[index].lstrip()) <= indent:
                break
            text += " " + lines[index].strip()
            index += 1
        found.extend((start, kind, name) for name in _CODE.findall(text))
    return found


def problem(kind: str, name: str) -> str | None:
    if kind == "Events":
        return None if name in event_reasons() else "no EVENT_* constant has this reason"
    if kind == "Logs":
        return None if name in log_events() else "no logger call emits this event"
    if kind == "Alerts":
        return None if name in alerts() else f"no alert of {ALERT_RULES.name} has this name"
    match = _METRIC_REF.match(name)
    if match is None or match.group(1) not in metrics():
        return "not a metric the code declares"
    labels = {label for label in _LABEL.findall(match.group(2) or "") if label}
    missing = labels - metrics()[match.group(1)]
    return f"has no label {sorted(missing)}" if missing else None


def test_the_page_names_something_of_each_kind() -> None:
    kinds = {kind for _, kind, _ in named(TROUBLESHOOTING)}

    assert kinds == set(_KINDS)


def test_the_sources_are_read() -> None:
    # A reader that found nothing would make every check below pass vacuously.
    assert "failover_relay_reconcile_total" in metrics()
    assert metrics()["failover_relay_reconcile_total"] == {"controller", "result"}
    assert {"ClusterFenced", "ReferencedBindingNotFound"} <= event_reasons()
    assert {"admission_review", "work_released"} <= log_events()
    assert "FailoverRelayDown" in alerts()


@pytest.mark.parametrize(
    ("line", "kind", "name"), named(TROUBLESHOOTING), ids=lambda value: str(value).replace(" ", "_")
)
def test_every_named_thing_exists_in_the_code(line: int, kind: str, name: str) -> None:
    assert problem(kind, name) is None, f"docs/troubleshooting.md:{line}: {kind} `{name}`: {problem(kind, name)}"


def test_every_metric_anywhere_on_the_page_exists() -> None:
    names = {name for name in _CODE.findall(TROUBLESHOOTING.read_text()) if name.startswith("failover_relay_")}

    assert names
    assert not {name: problem("Metrics", name) for name in names if problem("Metrics", name)}


# -- relative links ---------------------------------------------------------------------------------------------------

PAGES = [REPO / "README.md", REPO / "CHANGELOG.md", *sorted((REPO / "docs").glob("*.md"))]
_LINK = re.compile(r"\[[^\]]*\]\(\s*([^)\s]+)\s*\)")
_FENCE = re.compile(r"^(```|~~~)")


def anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lowercased, punctuation dropped, spaces to hyphens, repeats numbered."""
    seen: dict[str, int] = {}
    found = set()
    fenced = False
    for line in page.read_text().splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        if fenced or not line.startswith("#"):
            continue
        title = line.lstrip("#").strip().replace("`", "")
        slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return [target for target in _LINK.findall(text) if not re.match(r"^[a-z]+:", target)]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(REPO).as_posix())
def test_relative_links_lead_to_files_and_headings(page: Path) -> None:
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no such heading")

    assert not broken, f"{page.relative_to(REPO)}: {broken}"
