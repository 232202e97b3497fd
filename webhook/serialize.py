"""JSON encoding of responses: compact, and without the per-call setup of `json.dumps(..., separators=...)`."""

from __future__ import annotations

import json
from typing import Any

# ASCII output: a lone surrogate that json.loads accepted in a hostile request must not break encoding.
_ENCODER = json.JSONEncoder(separators=(",", ":"))


def dumps(value: Any) -> bytes:
    return _ENCODER.encode(value).encode()
