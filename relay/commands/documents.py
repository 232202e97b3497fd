"""Kubernetes objects from YAML files, read the way kubectl reads them and with bounds a hostile file cannot pass.

- Bounded: a file larger than `MAX_FILE_BYTES`, a document nesting deeper than `MAX_DEPTH` or whose aliases would
  expand to more than `MAX_NODES` nodes is refused with one line, before anything recursive touches it. Depth and
  expansion are measured on the parser's event stream (libyaml's parser keeps its own stack, so a 50,000-deep file
  costs a loop, not a RecursionError).
- With libyaml's C loader where PyYAML has it, the pure-Python one otherwise.
- Numbers as kubectl sends them: sigs.k8s.io/yaml decodes `1e3` as the number 1000 (YAML 1.2's core schema), where
  PyYAML's YAML 1.1 resolver reads it as the string "1e3". The float resolver here is YAML 1.2's.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import yaml

from relay.yaml_keys import duplicate_key

# etcd stores objects of at most 1.5 MiB; a manifest file holds a handful of them.
MAX_FILE_BYTES = 16 * 1024 * 1024
# As webhook.review.MAX_NESTING_DEPTH: the objects we check nest a few dozen levels.
MAX_DEPTH = 100
# Nodes after alias expansion: a "billion laughs" file is refused instead of expanded.
MAX_NODES = 1_000_000
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
# A path of "-" is the standard input, as kubectl's `-f -`; it is named so in messages.
STDIN = Path("-")
STDIN_NAME = "<stdin>"

_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):
    """SafeLoader with YAML 1.2 floats (`1e3`, `.5`) and timestamps left as strings, as sigs.k8s.io/yaml decodes
    them into JSON (a date is a string field in every Kubernetes API)."""


_REPLACED = ("tag:yaml.org,2002:float", "tag:yaml.org,2002:timestamp")
_Loader.yaml_implicit_resolvers = {
    key: [(tag, regexp) for tag, regexp in resolvers if tag not in _REPLACED]
    for key, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"""^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?
                |[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$""",
        re.X,
    ),
    list("-+0123456789."),
)


@dataclass(frozen=True)
class Unreadable:
    """A file or document that yields no object: where, and why, on one line."""

    location: str
    reason: str

    def __str__(self) -> str:
        return f"{self.location}: error: {self.reason}"


@dataclass(frozen=True)
class Located:
    """An object with where it is: the file, the line its document (or `List` item) starts on, and its YAML node,
    from which `line_of` finds the line of a field."""

    obj: Mapping[str, Any]
    where: str
    line: int
    node: yaml.Node

    def line_of(self, path: str) -> int:
        """The line of the field `path` (`spec.rules[0].jsonPath`); of its deepest ancestor present when the field is
        missing (a required field), and the document's own line when not even the first key is there."""
        node, line = self.node, self.line
        for key, index in _SEGMENT.findall(path):
            child: yaml.Node | None = None
            if key and isinstance(node, yaml.MappingNode):
                for key_node, value_node in node.value:
                    if isinstance(key_node, yaml.ScalarNode) and key_node.value == key:
                        line, child = key_node.start_mark.line + 1, value_node
                        break
            elif index and isinstance(node, yaml.SequenceNode) and int(index) < len(node.value):
                child = node.value[int(index)]
                line = child.start_mark.line + 1
            if child is None:
                break
            node = child
        return line


_SEGMENT = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def manifest_files(paths: list[Path]) -> Iterator[Path | Unreadable]:
    """The manifest files of `paths`: files as named, directories walked for MANIFEST_SUFFIXES, `-` for stdin.
    A directory holding no manifest file is Unreadable: there is nothing to check in it."""
    for path in paths:
        if path == STDIN:
            yield path
        elif path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.suffix in MANIFEST_SUFFIXES and p.is_file())
            if not found:
                yield Unreadable(str(path), f"no {', '.join(MANIFEST_SUFFIXES)} file in this directory")
            yield from found
        elif path.exists():
            yield path
        else:
            yield Unreadable(str(path), "no such file or directory")


def read_text(path: Path) -> str | Unreadable:
    try:
        with path.open("rb") as file:
            return read_stream(file, str(path))
    except OSError as error:
        return Unreadable(str(path), error.strerror or type(error).__name__)


def read_stream(stream: BinaryIO, where: str) -> str | Unreadable:
    try:
        # Bounded by what is read, not by stat(): /dev/zero, a FIFO or a /proc file report a size of 0.
        data = stream.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            return Unreadable(where, f"file exceeds the limit of {MAX_FILE_BYTES} bytes")
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        return Unreadable(where, f"not UTF-8 (byte {error.start})")
    except OSError as error:
        return Unreadable(where, error.strerror or type(error).__name__)


def documents(path: Path) -> Iterator[Mapping[str, Any] | Unreadable]:
    """The objects of a (multi-document) YAML file; `kind: List` is expanded; a parse error ends the file."""
    text = read_text(path)
    if isinstance(text, Unreadable):
        yield text
        return
    yield from documents_in(text, str(path))


def documents_in(text: str, where: str) -> Iterator[Mapping[str, Any] | Unreadable]:
    for document in located_documents_in(text, where):
        yield document.obj if isinstance(document, Located) else document


def located_documents_in(text: str, where: str) -> Iterator[Located | Unreadable]:
    """As `documents_in`, each object with its location (composed first, so the nodes keep their lines)."""
    try:
        problem = _bounds_problem(text)
        if problem is not None:
            yield Unreadable(where, problem)
            return
        loader = _Loader(text)
        try:
            while loader.check_node():
                node = loader.get_node()
                duplicate = duplicate_key(node)
                if duplicate is not None:
                    key, line, first = duplicate
                    yield Unreadable(f"{where}:{line}", f"mapping key {key!r} already defined at line {first}")
                    continue
                document = loader.construct_document(node)
                if document is None:
                    continue
                if (
                    isinstance(document, dict)
                    and document.get("kind") == "List"
                    and isinstance(document.get("items"), list)
                ):
                    items = _value_of(node, "items")
                    item_nodes = items.value if isinstance(items, yaml.SequenceNode) else []
                    for item, item_node in zip(document["items"], item_nodes, strict=False):
                        if isinstance(item, dict):
                            yield Located(item, where, item_node.start_mark.line + 1, item_node)
                elif isinstance(document, dict):
                    yield Located(document, where, node.start_mark.line + 1, node)
                else:
                    yield Unreadable(where, f"a document is a {type(document).__name__}, not a Kubernetes object")
        finally:
            loader.dispose()
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        location = f"{where}:{mark.line + 1}:{mark.column + 1}" if mark is not None else where
        problem = getattr(error, "problem", None) or str(error)
        yield Unreadable(location, f"invalid YAML: {problem}")
    except (ValueError, OverflowError) as error:  # a timestamp or number PyYAML cannot construct
        yield Unreadable(where, f"invalid YAML value: {' '.join(str(error).split())[:100]}")


def _value_of(node: yaml.Node, key: str) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.value == key:
                return value_node
    return None


def _bounds_problem(text: str) -> str | None:
    """Depth and alias expansion of every document, from the event stream (no recursion, nothing constructed)."""
    depth = 0
    # Per open collection: the nodes it holds so far (itself included), and its anchor.
    counts: list[tuple[int, str | None]] = []
    anchored: dict[str, int] = {}
    total = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                return f"a document nests deeper than {MAX_DEPTH} levels"
            counts.append((1, event.anchor))
            continue
        if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
            size, anchor = counts.pop()
            if anchor is not None:
                anchored[anchor] = size
        elif isinstance(event, yaml.ScalarEvent):
            size = 1
            if event.anchor is not None:
                anchored[event.anchor] = 1
        elif isinstance(event, yaml.AliasEvent):
            # An alias always names its anchor; PyYAML's event type leaves it optional.
            size = anchored.get(event.anchor, 1) if event.anchor is not None else 1
        elif isinstance(event, yaml.DocumentEndEvent):
            total = 0
            continue
        else:
            continue
        if counts:
            parent, anchor = counts[-1]
            counts[-1] = (parent + size, anchor)
        else:
            total += size
        if total + sum(count for count, _ in counts) > MAX_NODES:
            return f"a document expands to more than {MAX_NODES} nodes (aliases)"
    return None
