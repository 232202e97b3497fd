"""What the apiserver stores after a JSON merge patch, for tests that apply a decision's patch themselves."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from failover.reconcile.record_keeping import merged


def merge_patch(obj: Mapping[str, Any], patch: Mapping[str, Any] | None) -> dict[str, Any]:
    """Apply a JSON merge patch (RFC 7386) to a copy of `obj`: what the apiserver stores after PATCH. The loop's own
    `merged`, on a deep copy, so that a test may change the result without touching `obj`."""
    return merged(copy.deepcopy(dict(obj)), patch or {})
