"""`failover-relay check PATH…`: the admission rules, offline, over YAML manifests (for CI and GitOps).

Exit codes: 0 nothing denied, 1 something denied, 2 a file could not be read or parsed (reported with its
location; the other files are still checked).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, TextIO

import yaml

from failover.fields import object_name
from failover.rules import VALIDATORS, group_kind_of

EXIT_OK, EXIT_DENIED, EXIT_UNREADABLE = 0, 1, 2
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class Unreadable:
    location: str
    reason: str


def manifest_files(paths: list[Path]) -> Iterator[Path | Unreadable]:
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.suffix in MANIFEST_SUFFIXES and p.is_file())
            yield from found
        elif path.exists():
            yield path
        else:
            yield Unreadable(str(path), "no such file or directory")


def documents(path: Path) -> Iterator[Mapping[str, Any] | Unreadable]:
    """The objects of a (multi-document) YAML file; `kind: List` is expanded; a parse error ends the file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        yield Unreadable(str(path), getattr(error, "strerror", None) or str(error))
        return
    try:
        for document in yaml.safe_load_all(text):
            if document is None:
                continue
            if isinstance(document, dict) and document.get("kind") == "List" and isinstance(
                document.get("items"), list
            ):
                yield from (item for item in document["items"] if isinstance(item, dict))
            elif isinstance(document, dict):
                yield document
            else:
                yield Unreadable(str(path), f"a document is a {type(document).__name__}, not a Kubernetes object")
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        location = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        problem = getattr(error, "problem", None) or str(error)
        yield Unreadable(location, f"invalid YAML: {problem}")


def check_object(obj: Mapping[str, Any]) -> tuple[str, str]:
    """(status, line) for one object: status is allowed, warning, denied or skipped."""
    kind = obj.get("kind") if isinstance(obj.get("kind"), str) else "?"
    api_version = obj.get("apiVersion") if isinstance(obj.get("apiVersion"), str) else ""
    label = f"{kind} {object_name(obj) or '<unnamed>'}"
    validator = VALIDATORS.get(group_kind_of(api_version, kind))
    if validator is None:
        return "skipped", f"{label}: skipped: {api_version or '?'} {kind} is not a kind failover-relay checks"
    verdict = validator(obj)
    if not verdict.allowed:
        extra = f" (warnings: {'; '.join(verdict.warnings)})" if verdict.warnings else ""
        return "denied", f"{label}: denied: {verdict.message}{extra}"
    if verdict.warnings:
        return "warning", f"{label}: warning: {'; '.join(verdict.warnings)}"
    return "allowed", f"{label}: allowed"


def run_check(paths: list[Path], out: TextIO, err: TextIO) -> int:
    denied = unreadable = False
    for item in manifest_files(paths):
        if isinstance(item, Unreadable):
            print(f"{item.location}: error: {item.reason}", file=err)
            unreadable = True
            continue
        for obj in documents(item):
            if isinstance(obj, Unreadable):
                print(f"{obj.location}: error: {obj.reason}", file=err)
                unreadable = True
                continue
            status, line = check_object(obj)
            denied = denied or status == "denied"
            print(line, file=out)
    if unreadable:
        return EXIT_UNREADABLE
    return EXIT_DENIED if denied else EXIT_OK
