"""JSON out: answers and log lines encoded by orjson, by the standard library's encoder where orjson refuses a value.

Only encoding. Requests are decoded by the standard library (webhook/review.py), which refuses a duplicate key in
the pass that decodes; orjson cannot refuse one. A patched review's answer and its log line are the two encodings
of its hot path: the standard library spends about 110k instructions on the two, orjson 14k (docs/benchmarks.md).
`make bench`'s same-stack ceiling encodes with orjson too (bench/servers.py OUR_STACK).

orjson refuses what it cannot write faithfully: a lone surrogate (in a hostile string json.loads accepted), an
integer beyond 64 bits, a key that is not a string. Such values come from callers and are rare; the standard
library's encoder writes them as it always did (ASCII escapes, keys turned into strings).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson

# Datetimes and dataclasses go to `default` as they do with the standard library (whose encoder cannot write them),
# so a log line says the same whichever encoder wrote it.
_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS

_FALLBACKS: dict[Callable[[Any], Any] | None, json.JSONEncoder] = {}


def dumps(value: Any, default: Callable[[Any], Any] | None = None) -> bytes:
    """`value` as compact JSON in UTF-8; `default` turns what JSON has no type for into something it has."""
    try:
        return orjson.dumps(value, default=default, option=_OPTIONS)
    except orjson.JSONEncodeError:
        encoder = _FALLBACKS.get(default)
        if encoder is None:
            # Compact and ASCII: a lone surrogate is written as its escape instead of breaking the encoding.
            encoder = _FALLBACKS[default] = json.JSONEncoder(separators=(",", ":"), default=default)
        return encoder.encode(value).encode()
