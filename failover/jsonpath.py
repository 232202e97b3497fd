"""Kubernetes JSONPath templates (`{ .jobStatus.jobId }`) evaluated through jsonpath-ng.

Karmada's statePreservation rules use client-go's `util/jsonpath` template syntax: literal text with expressions in
braces, each a path relative to the object (`.a.b`, `['a-b']`, `[0]`, `[*]`, `..name`, `[?(@.x == "y")]`). This module
tokenizes that syntax and hands every path to jsonpath-ng (its `ext` parser, for filters) with field names quoted, so
names such as `app-name` or `example.com/key` need no escaping. What client-go accepts and we do not (`range`/`end`
loops, `{"literal"}` expressions) is a syntax error here, with a message that says so: a state preservation rule
yields a single label value, so a loop has no meaning there.

Evaluation follows Karmada's (`AllowMissingKeys(false)`): a path that matches nothing raises `JSONPathNotFound`.
Strings render as they are, numbers and booleans as JSON scalars, objects and lists as compact JSON; several matches
are joined by a space, as client-go prints them.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any

from jsonpath_ng import JSONPath
from jsonpath_ng.exceptions import JsonPathLexerError, JsonPathParserError
from jsonpath_ng.ext import parse as parse_jsonpath_ng

MAX_TEMPLATE_LENGTH = 1024

# A field name in dotted form: what client-go's lexer accepts up to the next separator.
_FIELD = re.compile(r"[^\s.\[\]{}()'\"]+")
_INDEX = re.compile(r"\[\s*(-?\d*)\s*(?::\s*(-?\d*)\s*)?\]")
_QUOTED = re.compile(r"""\[\s*(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")\s*\]""")


class JSONPathSyntaxError(ValueError):
    """The template does not parse; the message says where and why."""


class JSONPathNotFound(LookupError):
    """The path is valid but matches nothing in the object."""


@dataclass(frozen=True)
class _Expression:
    source: str
    compiled: JSONPath
    fields: tuple[str, ...]


@dataclass(frozen=True)
class Template:
    """A parsed template: literal text and path expressions, in order."""

    source: str
    parts: tuple[str | _Expression, ...]

    def field_names(self) -> frozenset[str]:
        """Every field name the template's paths name (to spot typos such as `jobID` for `jobId`)."""
        return frozenset(name for part in self.parts if isinstance(part, _Expression) for name in part.fields)

    def render(self, obj: Any) -> str:
        """Evaluate against `obj`; raises `JSONPathNotFound` when any expression matches nothing."""
        out: list[str] = []
        for part in self.parts:
            if isinstance(part, str):
                out.append(part)
                continue
            matches = part.compiled.find(obj)
            if not matches:
                raise JSONPathNotFound(f"{part.source} matches nothing")
            out.append(" ".join(_render_value(match.value) for match in matches))
        return "".join(out)


def parse_template(source: str) -> Template:
    """Parse a Kubernetes JSONPath template, raising `JSONPathSyntaxError` with a readable reason."""
    if not isinstance(source, str):
        raise JSONPathSyntaxError("must be a string")
    if len(source) > MAX_TEMPLATE_LENGTH:
        raise JSONPathSyntaxError(f"is longer than {MAX_TEMPLATE_LENGTH} characters")
    return _parse_valid_length(source)


# Templates are immutable and the same few policies are judged on every apply and re-sync, while jsonpath-ng
# builds a parser per call (about 0.6 ms): parsed templates are kept. Errors are not cached; they are rare.
@functools.lru_cache(maxsize=512)
def _parse_valid_length(source: str) -> Template:
    parts: list[str | _Expression] = []
    position = 0
    while position < len(source):
        start = source.find("{", position)
        if start < 0:
            parts.append(source[position:])
            break
        if start > position:
            parts.append(source[position:start])
        end = _closing_brace(source, start)
        inner = source[start + 1 : end]
        body_offset = start + 1 + len(inner) - len(inner.lstrip())
        parts.append(_parse_expression(inner.strip(), start, body_offset))
        position = end + 1
    if not any(isinstance(part, _Expression) for part in parts):
        raise JSONPathSyntaxError("has no {...} expression; write it as '{ .status.field }'")
    return Template(source=source, parts=tuple(parts))


def _closing_brace(source: str, start: int) -> int:
    quote: str | None = None
    index = start + 1
    while index < len(source):
        char = source[index]
        if quote:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "{":
            raise JSONPathSyntaxError(f"nested '{{' at offset {index}")
        elif char == "}":
            return index
        index += 1
    raise JSONPathSyntaxError(f"unclosed '{{' at offset {start}")


def _parse_expression(body: str, offset: int, body_offset: int) -> _Expression:
    """Compile the text between one pair of braces (`offset` is the brace's, `body_offset` the text's position)."""
    if not body:
        raise JSONPathSyntaxError(f"empty expression at offset {offset}")
    if body in ("end",) or body.startswith("range"):
        raise JSONPathSyntaxError("range/end loops are not supported: a rule must yield one value")
    if body[0] in "'\"":
        raise JSONPathSyntaxError("literal expressions are not supported; put literal text outside the braces")
    path = body
    if path.startswith("$") or path.startswith("@"):
        path = path[1:]
    if not path:
        raise JSONPathSyntaxError(f"expression at offset {offset} selects the whole object; name a field")
    translated, fields = _translate(path, body_offset + len(body) - len(path))
    try:
        compiled = parse_jsonpath_ng(translated)
    except (JsonPathLexerError, JsonPathParserError, Exception) as error:  # jsonpath-ng raises plain Exception too
        raise JSONPathSyntaxError(f"{body[:60]!r}: {_first_line(error)}") from None
    return _Expression(source="{" + body + "}", compiled=compiled, fields=tuple(fields))


def _translate(path: str, offset: int) -> tuple[str, list[str]]:
    """Turn a client-go path (`.a['b'][0]..c`) into jsonpath-ng syntax with quoted names (`$."a"."b"[0].."c"`).

    `offset` is where `path` starts in the template, so errors point at the offending character.
    """
    out = ["$"]
    fields: list[str] = []
    index = 0
    while index < len(path):
        char = path[index]
        if char.isspace():
            index += 1
            continue
        if char == ".":
            recursive = path.startswith("..", index)
            index += 2 if recursive else 1
            prefix = ".." if recursive else "."
            if index < len(path) and path[index] == "*":
                out.append(prefix + "*")
                index += 1
                continue
            if index < len(path) and path[index] == "[" and recursive:
                out.append("..")
                continue
            match = _FIELD.match(path, index)
            if not match:
                raise JSONPathSyntaxError(f"expected a field name at offset {offset + index}")
            fields.append(match.group(0))
            out.append(prefix + _quote(match.group(0)))
            index = match.end()
            continue
        if char == "[":
            if path.startswith("[*]", index):
                out.append("[*]")
                index += 3
                continue
            if path.startswith("[?", index):
                end = _closing_bracket(path, index, offset)
                out.append(path[index : end + 1])
                fields.extend(re.findall(r"@\.([A-Za-z0-9_\-/]+)", path[index:end]))
                index = end + 1
                continue
            quoted = _QUOTED.match(path, index)
            if quoted:
                name = quoted.group(1) if quoted.group(1) is not None else quoted.group(2)
                name = re.sub(r"\\(.)", r"\1", name)
                fields.append(name)
                out.append("." + _quote(name))
                index = quoted.end()
                continue
            number = _INDEX.match(path, index)
            if number:
                out.append(number.group(0).replace(" ", ""))
                index = number.end()
                continue
            raise JSONPathSyntaxError(f"unrecognized subscript at offset {offset + index}")
        raise JSONPathSyntaxError(f"unexpected {char!r} at offset {offset + index}; paths start with '.'")
    return "".join(out), fields


def _quote(name: str) -> str:
    """A double-quoted jsonpath-ng field name.

    jsonpath-ng's lexer takes every character after a backslash literally and knows no `\\uXXXX` escapes, so
    `json.dumps` would turn `café` into a name that matches nothing; only the backslash and the quote are escaped.
    """
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _closing_bracket(path: str, start: int, offset: int) -> int:
    depth = 0
    quote: str | None = None
    for index in range(start, len(path)):
        char = path[index]
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth == 0:
                return index
    raise JSONPathSyntaxError(f"unclosed '[' at offset {offset + start}")


def _render_value(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0][:100] if text else type(error).__name__
