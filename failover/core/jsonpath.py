"""Kubernetes JSONPath templates, parsed and evaluated as client-go's `util/jsonpath` does for Karmada.

Karmada evaluates a statePreservation rule with `jsonpath.New(p).AllowMissingKeys(false)`, `Parse(p)` and
`Execute` over the status decoded by `json.Unmarshal` into `any` (`pkg/util/helper/failover.go`
`parseJSONValue`). This module is a port of that parser and evaluator (`k8s.io/client-go/util/jsonpath`
`parser.go` and `jsonpath.go`, vendored by Karmada v1.19), so a template means here what it means there:

- literal text outside braces, including a template with no braces at all (`true` renders "true");
- `{.a.b}`, `{$.a}`, `{@.a}`, `['key']` (single quotes only; the key is parsed as a dotted path, so a dot in it
  must be escaped, `['app\\.kubernetes\\.io/name']`, as on kubectl's command line), `[0]`, `[-1]`, `[1:3]`,
  `[::2]`, `[*]`, `[0,2]`, `..name`, `[?(@.x == "y")]`, `[?(@.x)]`, literals `{"job-"}`, `{range ...}{end}`;
- numbers of the status are float64 (JSON decoded into `any`): they print as Go's `fmt` prints a float64
  (`1.73e+12`), and a filter comparing one with an integer literal fails ("incompatible types for comparison");
- maps and lists print as Go's `json.Marshal` prints them (sorted keys, `<>&` escaped); several results are
  joined by a space; a missing key is an error (`JSONPathNotFound`), as are the other evaluation errors
  (`JSONPathError`).

Two differences, both deliberate: object keys are visited in the object's order where Go's map order is random
(`[*]` and `..` over an object), and identifiers other than `range`/`end`, or an `end` outside a range, are refused
at parse time (client-go parses them and then fails every evaluation).
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MAX_TEMPLATE_LENGTH = 1024

_DICT_KEY = re.compile(r"^'([^']*)'$")
_SLICE = re.compile(r"^(-?\d*)(:-?\d*)?(:-?\d*)?$")
_FILTER = re.compile(r"^([^!<>=]+)([!<>=]+)(.+?)$", re.S)


class JSONPathSyntaxError(ValueError):
    """The template does not parse (or can never evaluate); the message says where and why."""


class JSONPathError(LookupError):
    """Evaluation failed the way client-go's Execute fails (Karmada then preserves nothing)."""


class JSONPathNotFound(JSONPathError):
    """A field the path names is missing (`AllowMissingKeys(false)`)."""


class _GoInt(int):
    """An int of Go's `int` kind (a template literal, a byte of a string), as opposed to a JSON number (float64)."""


# -- nodes ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Field:
    name: str


@dataclass(frozen=True)
class Params:
    start: int | None
    end: int | None
    step: int | None
    end_derived: bool


@dataclass(frozen=True)
class Array:
    params: Params


@dataclass(frozen=True)
class Filter:
    left: Node
    right: Node
    operator: str


@dataclass(frozen=True)
class Literal:
    value: Any


@dataclass(frozen=True)
class Wildcard:
    pass


@dataclass(frozen=True)
class Recursive:
    pass


@dataclass(frozen=True)
class Union:
    branches: tuple[Node, ...]


@dataclass(frozen=True)
class Identifier:
    name: str


@dataclass(frozen=True)
class Node:
    """A list node: an action `{...}` or a branch of a union/filter."""

    nodes: tuple[Any, ...]


# -- parser (parser.go) --------------------------------------------------------------------------------------------


class _Parser:
    def __init__(self, text: str) -> None:
        self.input = text
        self.pos = 0
        self.start = 0
        self.root: list[Any] = []

    def parse(self) -> list[Any]:
        self._parse_text(self.root)
        return self.root

    def _consume(self) -> str:
        value = self.input[self.start : self.pos]
        self.start = self.pos
        return value

    def _next(self) -> str:
        if self.pos >= len(self.input):
            self.pos += 1  # so that backup() returns to the end
            return ""
        char = self.input[self.pos]
        self.pos += 1
        return char

    def _backup(self) -> None:
        self.pos -= 1

    def _peek(self) -> str:
        char = self._next()
        self._backup()
        return char

    def _parse_text(self, cur: list[Any]) -> None:
        # Iterative where parser.go recurses (parseText -> parseLeftDelim -> ... -> parseRightDelim -> parseText).
        while True:
            brace = self.input.find("{", self.pos)
            if brace < 0:
                self.pos = len(self.input)
                if self.pos > self.start:
                    cur.append(Text(self._consume()))
                return
            self.pos = brace
            if self.pos > self.start:
                cur.append(Text(self._consume()))
            self.pos += 1
            self._consume()
            action: list[Any] = []
            cur.append(action)
            self._parse_inside_action(action)

    def _parse_inside_action(self, cur: list[Any]) -> None:
        while True:
            rest = self.input[self.pos :]
            if rest.startswith("}"):
                self.pos += 1
                self._consume()
                return
            if rest.startswith("[?("):
                self._parse_filter(cur)
                continue
            if rest.startswith(".."):
                self._parse_recursive(cur)
                continue
            char = self._next()
            if char == "" or char in "\r\n":
                raise JSONPathSyntaxError("unclosed action")
            if char == " " or char in "@$":
                self._consume()
            elif char == "[":
                self._parse_array(cur)
            elif char in "\"'":
                self._parse_quote(cur, char)
            elif char == ".":
                self._parse_field(cur)
            elif char in "+-" or char.isdigit():
                self._backup()
                self._parse_number(cur)
            elif _is_alphanumeric(char):
                self._backup()
                self._parse_identifier(cur)
            else:
                raise JSONPathSyntaxError(f"unrecognized character in action: U+{ord(char):04X} {char!r}")

    def _parse_identifier(self, cur: list[Any]) -> None:
        while not _is_terminator(self._next()):
            pass
        self._backup()
        value = self._consume()
        cur.append(Literal(value == "true") if value in ("true", "false") else Identifier(value))

    def _parse_recursive(self, cur: list[Any]) -> None:
        if cur and isinstance(cur[-1], Recursive):
            raise JSONPathSyntaxError("invalid multiple recursive descent")
        self.pos += 2
        self._consume()
        cur.append(Recursive())
        if _is_alphanumeric(self._peek()):
            self._parse_field(cur)

    def _parse_number(self, cur: list[Any]) -> None:
        if self._peek() in ("+", "-"):
            self._next()
        while True:
            char = self._next()
            if char != "." and not char.isdigit():
                self._backup()
                break
        value = self._consume()
        if re.fullmatch(r"[+-]?\d+", value):
            cur.append(Literal(_GoInt(int(value))))
            return
        try:
            cur.append(Literal(float(value)))
        except ValueError:
            raise JSONPathSyntaxError(f"cannot parse number {value}") from None

    def _parse_array(self, cur: list[Any]) -> None:
        while True:
            char = self._next()
            if char in ("", "\n"):
                raise JSONPathSyntaxError("unterminated array")
            if char == "]":
                break
        text = self._consume()[1:-1]
        if text == "*":
            text = ":"
        parts = text.split(",")
        if len(parts) > 1:
            cur.append(Union(tuple(Node(tuple(_parse_action(f"[{part.strip(' ')}]"))) for part in parts)))
            return
        key = _DICT_KEY.match(text)
        if key:
            cur.extend(_parse_action(f".{key.group(1)}"))
            return
        match = _SLICE.match(text)
        if not match:
            raise JSONPathSyntaxError(f"invalid array index {text}")
        start, end, step = match.group(1), match.group(2), match.group(3)
        first = int(start) if start else None
        if end is not None:
            last, derived = (int(end[1:]) if end[1:] else None), False
        else:
            last, derived = (first or 0) + 1, True
        cur.append(Array(Params(first, last, int(step[1:]) if step and step[1:] else None, derived)))

    def _parse_filter(self, cur: list[Any]) -> None:
        self.pos += 3
        self._consume()
        begin = end = False
        pair = ""
        while True:
            char = self._next()
            if char in ("", "\n"):
                raise JSONPathSyntaxError("unterminated filter")
            if char in "\"'":
                if not begin:
                    begin, pair = True, char
                    continue
                if self.input[self.pos - 2] != "\\" and char == pair:
                    end = True
            elif char == ")" and begin == end:
                break
        if self._next() != "]":
            raise JSONPathSyntaxError("unclosed array expect ]")
        text = self._consume()[:-2]
        match = _FILTER.match(text)
        if match is None:
            cur.append(Filter(Node(tuple(_parse_action(text))), Node(()), "exists"))
        else:
            cur.append(
                Filter(
                    Node(tuple(_parse_action(match.group(1)))),
                    Node(tuple(_parse_action(match.group(3)))),
                    match.group(2),
                )
            )

    def _parse_quote(self, cur: list[Any], quote: str) -> None:
        while True:
            char = self._next()
            if char in ("", "\n"):
                raise JSONPathSyntaxError("unterminated quoted string")
            if char == quote and self.input[self.pos - 2] != "\\":
                break
        value = self._consume()
        cur.append(Text(_unquote(value)))

    def _parse_field(self, cur: list[Any]) -> None:
        self._consume()
        while True:
            char = self._next()
            if char == "\\":
                self._next()
            elif _is_terminator(char):
                self._backup()
                break
        value = self._consume()
        cur.append(Wildcard() if value == "*" else Field(value.replace("\\", "")))


def _parse_action(text: str) -> list[Any]:
    """parseAction: `text` parsed as the inside of one action."""
    parser = _Parser("{" + text + "}")
    root = parser.parse()
    action: list[Any] = root[0]
    return action


def _is_terminator(char: str) -> bool:
    return char == "" or char in " \t\r\n.,[]$@{}"


def _is_alphanumeric(char: str) -> bool:
    return char == "_" or (char != "" and (char.isalpha() or char.isdigit()))


_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"'}


def _unquote(value: str) -> str:
    """UnquoteExtend: a Go quoted string in single or double quotes (strconv.UnquoteChar escapes)."""
    quote, body = value[0], value[1:-1]
    out: list[str] = []
    index = 0
    while index < len(body):
        char = body[index]
        if char == quote:
            raise JSONPathSyntaxError(f"unquote string {value} error invalid syntax")
        if char != "\\":
            out.append(char)
            index += 1
            continue
        code = body[index + 1 : index + 2]
        if code in _ESCAPES:
            out.append(_ESCAPES[code])
            index += 2
            continue
        width = {"x": 2, "u": 4, "U": 8}.get(code)
        digits = body[index + 2 : index + 2 + width] if width else body[index + 1 : index + 4]
        base = 16 if width else 8
        if (width and len(digits) == width and all(c in "0123456789abcdefABCDEF" for c in digits)) or (
            not width and len(digits) == 3 and all(c in "01234567" for c in digits)
        ):
            number = int(digits, base)
            if number > 0x10FFFF or (not width and number > 255):
                raise JSONPathSyntaxError(f"unquote string {value} error invalid syntax")
            out.append(chr(number))
            index += 2 + width if width else 4
            continue
        raise JSONPathSyntaxError(f"unquote string {value} error invalid syntax")
    return "".join(out)


# -- template ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Template:
    """A parsed template: literal text and actions, in order, as client-go's `Parser.Root.Nodes`."""

    source: str
    nodes: tuple[Any, ...]

    def field_names(self) -> frozenset[str]:
        """Every field name the template's paths name (to spot typos such as `jobID` for `jobId`); asked on every
        admission of a policy that names the template, and kept with it like `unusable_as_label`."""
        return _field_names(self.source)

    def leading_fields(self) -> frozenset[str] | None:
        """The top-level fields of the object the template can read (`{.jobStatus.jobId}`: jobStatus), or None when
        an action may read anything (it starts with a wildcard, a recursive descent, a filter, a range or `{.}`)."""
        return _leading_fields(self.source)

    @property
    def has_action(self) -> bool:
        return any(isinstance(node, Node) for node in self.nodes)

    def unusable_as_label(self) -> list[str]:
        """Why the template, though valid, may not render one usable label value (for warnings, not denials)."""
        # Asked on every admission of a policy that names the template; a template is immutable and parsed ones are
        # kept by their source, so the answer is too.
        return list(_label_problems(self.source))

    def _label_problems(self) -> tuple[str, ...]:
        problems = []
        if not self.has_action:
            problems.append("no {...} action: always the same literal text")
        if list(_walk_nodes(self.nodes, Identifier, lambda node: node.name)):
            problems.append("a range loop joins values into one string")
        if list(_walk_nodes(self.nodes, (Wildcard, Recursive, Union), lambda node: node)) or any(
            isinstance(node, Array) and (node.params.end_derived is False) for node in _flatten(self.nodes)
        ):
            problems.append("may match several values, joined by spaces")
        if any(
            isinstance(node, Filter)
            and node.operator != "exists"
            and any(
                isinstance(side, Literal) and type(side.value) is _GoInt
                for side in (*node.left.nodes, *node.right.nodes)
            )
            for node in _flatten(self.nodes)
        ):
            problems.append("int literal vs float64 status number fails: write 1.0")
        return tuple(problems)

    def render(self, obj: Any) -> str:
        """Execute over `obj` (a decoded status); raises JSONPathNotFound or JSONPathError as client-go fails."""
        evaluator = _Evaluator(self.nodes)
        return "".join(_print(results) for results in evaluator.find(0, obj))


def parse_template(source: str) -> Template:
    """Parse a Kubernetes JSONPath template, raising `JSONPathSyntaxError` with a readable reason."""
    if not isinstance(source, str):
        raise JSONPathSyntaxError("must be a string")
    if len(source) > MAX_TEMPLATE_LENGTH:
        raise JSONPathSyntaxError(f"is longer than {MAX_TEMPLATE_LENGTH} characters")
    return _parse_valid_length(source)


# Templates are immutable and the same few policies are judged on every apply and re-sync: parsed ones are kept.
@functools.lru_cache(maxsize=512)
def _parse_valid_length(source: str) -> Template:
    try:
        root = _Parser(source).parse()
    except RecursionError:
        raise JSONPathSyntaxError("nests too deeply") from None
    nodes = tuple(Node(_freeze(node)) if isinstance(node, list) else node for node in root)
    depth = 0
    for name in _walk_nodes(nodes, Identifier, lambda node: node.name):
        if name == "range":
            depth += 1
        elif name == "end":
            if depth == 0:
                raise JSONPathSyntaxError("{end} without a {range}: Karmada's evaluation always fails")
            depth -= 1
        else:
            raise JSONPathSyntaxError(
                f"unrecognized identifier {name!r} (a path starts with '.', e.g. "
                f"'{{.{name}}}'): Karmada's evaluation always fails"
            )
    return Template(source=source, nodes=nodes)


@functools.lru_cache(maxsize=512)
def _label_problems(source: str) -> tuple[str, ...]:
    return _parse_valid_length(source)._label_problems()


@functools.lru_cache(maxsize=512)
def _leading_fields(source: str) -> frozenset[str] | None:
    fields = set()
    for node in _parse_valid_length(source).nodes:
        if isinstance(node, Text):
            continue
        first = node.nodes[0] if isinstance(node, Node) and node.nodes else None
        if not isinstance(first, Field) or not first.name:
            return None
        fields.add(first.name)
    return frozenset(fields)


@functools.lru_cache(maxsize=512)
def _field_names(source: str) -> frozenset[str]:
    return frozenset(_walk_nodes(_parse_valid_length(source).nodes, Field, lambda node: node.name))


def _freeze(nodes: list[Any]) -> tuple[Any, ...]:
    return tuple(Node(_freeze(node)) if isinstance(node, list) else node for node in nodes)


def _flatten(nodes: tuple[Any, ...]) -> list[Any]:
    out = []
    for node in nodes:
        out.append(node)
        if isinstance(node, Node):
            out.extend(_flatten(node.nodes))
        elif isinstance(node, Union):
            for branch in node.branches:
                out.extend(_flatten(branch.nodes))
        elif isinstance(node, Filter):
            out.extend(_flatten(node.left.nodes) + _flatten(node.right.nodes))
    return out


def _walk_nodes(nodes: tuple[Any, ...], kind: Any, value: Callable[[Any], Any]) -> list[Any]:
    return [value(node) for node in _flatten(nodes) if isinstance(node, kind)]


# -- evaluator (jsonpath.go) ---------------------------------------------------------------------------------------


class _Evaluator:
    def __init__(self, nodes: tuple[Any, ...]) -> None:
        self.nodes = nodes
        self.begin_range = 0
        self.in_range = 0
        self.end_range = 0
        self.last_end: int | None = None

    def find(self, start: int, data: Any) -> list[list[Any]]:
        """FindResults over the root nodes from `start` (client-go re-slices Root.Nodes; indexes stay absolute)."""
        full: list[list[Any]] = []
        index = start
        while index < len(self.nodes):
            results = self._walk([data], self.nodes[index])
            if 0 < self.end_range <= self.in_range:
                self.end_range -= 1
                self.last_end = index
                break
            if self.begin_range > 0:
                self.begin_range -= 1
                self.in_range += 1
                if results:
                    for value in results:
                        full.extend(self.find(index + 1, value))
                else:
                    self.find(index + 1, None)
                self.in_range -= 1
                if self.last_end is not None and index < self.last_end < len(self.nodes):
                    index = self.last_end
                index += 1
                continue
            full.append(results)
            index += 1
        return full

    def _walk(self, values: list[Any], node: Any) -> list[Any]:
        if isinstance(node, Node):
            for child in node.nodes:
                values = self._walk(values, child)
            return values
        if isinstance(node, Text):
            return [node.text]
        if isinstance(node, Literal):
            return [node.value for _ in values]
        if isinstance(node, Field):
            return self._field(values, node.name)
        if isinstance(node, Array):
            return self._array(values, node.params)
        if isinstance(node, Filter):
            return self._filter(values, node)
        if isinstance(node, Wildcard):
            return [child for value in values if value is not None for child in _children(value)]
        if isinstance(node, Recursive):
            return self._recursive(values)
        if isinstance(node, Union):
            return [result for branch in node.branches for result in self._walk(values, branch)]
        if isinstance(node, Identifier):
            if node.name == "range":
                self.begin_range += 1
                return values
            if node.name == "end" and self.in_range > 0:
                self.end_range += 1
                return []
            raise JSONPathError(
                f"unrecognized identifier {node.name}" if node.name != "end" else "not in range, nothing to end"
            )
        raise JSONPathError(f"unexpected node {node!r}")

    @staticmethod
    def _field(values: list[Any], name: str) -> list[Any]:
        if not values:
            return []
        results = [value[name] for value in values if isinstance(value, dict) and name in value]
        if not results:
            raise JSONPathNotFound(f"{name} is not found")
        return results

    @staticmethod
    def _array(values: list[Any], params: Params) -> list[Any]:
        results: list[Any] = []
        for value in values:
            if value is None:
                continue
            if not isinstance(value, list):
                raise JSONPathError(f"{_go_type(value)} is not array or slice")
            length = len(value)
            start = params.start if params.start is not None else 0
            if start < 0:
                start += length
            end = params.end if params.end is not None else length
            if end < 0 or (end == 0 and params.end_derived):
                end += length
            if end == start:
                return results
            if start >= length or start < 0:
                raise JSONPathError(f"array index out of bounds: index {start}, length {length}")
            if end > length or end < 0:
                raise JSONPathError(f"array index out of bounds: index {end - 1}, length {length}")
            if start > end:
                raise JSONPathError(f"starting index {start} is greater than ending index {end}")
            step = 1
            if params.step is not None:
                if params.step <= 0:
                    raise JSONPathError("step must be > 0")
                step = params.step
            results.extend(value[start:end:step])
        return results

    def _filter(self, values: list[Any], node: Filter) -> list[Any]:
        results: list[Any] = []
        for value in values:
            if not isinstance(value, list):
                raise JSONPathError(f"{_go_type(value)} is not array or slice and cannot be filtered")
            for item in value:
                try:
                    lefts = self._walk([item], node.left)
                except JSONPathError:
                    if node.operator == "exists":
                        continue
                    raise
                if node.operator == "exists":
                    if lefts:
                        results.append(item)
                    continue
                if not lefts:
                    continue
                if len(lefts) > 1:
                    raise JSONPathError("can only compare one element at a time")
                rights = self._walk([item], node.right)
                if not rights:
                    continue
                if len(rights) > 1:
                    raise JSONPathError("can only compare one element at a time")
                if _compare(lefts[0], rights[0], node.operator):
                    results.append(item)
        return results

    def _recursive(self, values: list[Any]) -> list[Any]:
        result: list[Any] = []
        for value in values:
            if value is None:
                continue
            children = _children(value)
            if children:
                result.append(value)
                result.extend(self._recursive(children))
        return result


def _children(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return list(value.values())
    if isinstance(value, list):
        return list(value)
    if isinstance(value, str):
        return [_GoInt(byte) for byte in value.encode()]
    return []


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, _GoInt):
        return "int"
    if isinstance(value, (int, float)):
        return "float"
    if isinstance(value, str):
        return "string"
    raise JSONPathError("invalid type for comparison")


_COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    ">": lambda a, b: a > b,
    "<=": lambda a, b: a <= b,
    ">=": lambda a, b: a >= b,
}


def _compare(left: Any, right: Any, operator: str) -> bool:
    """evalFilter's switch: the operator first, then template.Equal / Less / ...: same basic kind or an error."""
    comparison = _COMPARISONS.get(operator)
    if comparison is None:
        raise JSONPathError(f"unrecognized filter operator {operator}")
    left_kind, right_kind = _kind(left), _kind(right)
    if left_kind != right_kind:
        raise JSONPathError("incompatible types for comparison")
    if left_kind == "bool" and operator not in ("==", "!="):
        raise JSONPathError("invalid type for comparison")
    if left_kind == "string":
        return bool(comparison(left.encode(), right.encode()))
    return bool(comparison(left, right))


# -- printing (PrintResults, evalToText) ---------------------------------------------------------------------------


def _print(results: list[Any]) -> str:
    return " ".join(go_json(value) if isinstance(value, (dict, list)) else _text(value) for value in results)


def _text(value: Any) -> str:
    """fmt.Fprint of a decoded JSON value: strings as they are, JSON numbers as float64."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, _GoInt):
        return str(int(value))
    if isinstance(value, (int, float)):
        return go_float(float(value))
    return str(value)


def go_float(number: float, json_style: bool = False) -> str:
    """A float64 as Go prints it: `fmt.Fprint` (default) or `json.Marshal` (`json_style`).

    fmt's %v is strconv's 'g' with the shortest digits, which switches to an exponent when the decimal exponent is
    below -4 or at least 6 (`1e+06`, `1.73e+12`); json.Marshal switches below 1e-6 or from 1e21 and writes `1e-07`
    as `1e-7`.
    """
    if math.isinf(number) or math.isnan(number):
        return "+Inf" if number > 0 else "-Inf" if number < 0 else "NaN"
    if number == 0:
        return "-0" if math.copysign(1, number) < 0 else "0"
    exponent_from = 21 if json_style else 6
    # Imported here: decimal costs ~0.3 MiB of RSS and only evaluating a template prints a float; a member relay
    # imports this module to validate policies (parse only) and never evaluates one.
    from decimal import Decimal

    sign, digits, exponent = Decimal(repr(number)).normalize().as_tuple()
    text = "".join(map(str, digits))
    point = len(text) + int(exponent)  # position of the decimal point in `text`
    decimal_exponent = point - 1
    low = -6 if json_style else -4
    if decimal_exponent < low or decimal_exponent >= exponent_from:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        exp_sign = "-" if decimal_exponent < 0 else "+"
        exp_digits = str(abs(decimal_exponent))
        if not json_style:
            exp_digits = exp_digits.rjust(2, "0")
        rendered = f"{mantissa}e{exp_sign}{exp_digits}"
    elif point <= 0:
        rendered = "0." + "0" * -point + text
    elif point >= len(text):
        rendered = text + "0" * (point - len(text))
    else:
        rendered = text[:point] + "." + text[point:]
    return ("-" if sign else "") + rendered


def go_json(value: Any) -> str:
    """json.Marshal of a decoded JSON value: sorted keys, HTML-safe escapes, float64 numbers."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, _GoInt):
        return str(int(value))
    if isinstance(value, (int, float)):
        return go_float(float(value), json_style=True)
    if isinstance(value, str):
        encoded = json.dumps(value, ensure_ascii=False)
        return (
            encoded.replace("<", "\\u003c")
            .replace(">", "\\u003e")
            .replace("&", "\\u0026")
            .replace("\u2028", "\\u2028")
            .replace("\u2029", "\\u2029")
        )
    if isinstance(value, list):
        return "[" + ",".join(go_json(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{go_json(str(key))}:{go_json(item)}" for key, item in sorted(value.items())) + "}"
    return json.dumps(str(value))


def _go_type(value: Any) -> str:
    if isinstance(value, dict):
        return "map[string]interface {}"
    if isinstance(value, list):
        return "[]interface {}"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (int, float)):
        return "float64"
    return "<nil>"
