"""Values kept in annotations and API timestamps: RFC 3339 times as metav1.Time writes them, and JSON objects.

Our annotations on bindings (the last good state, the history, unhealthy-since times) are ours, but anyone can edit
them: every reader here returns an empty value for what does not read, and never raises.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any


def format_time(moment: datetime) -> str:
    """RFC 3339 in UTC with second precision, as metav1.Time serializes."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: Any) -> datetime | None:
    """An API timestamp as an aware datetime; None for anything absent or malformed."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def read_json_annotation(raw: Any) -> dict[Any, Any]:
    """The JSON object one of our annotations holds, or {} when it is absent or is not a JSON object (never raises:
    the annotation is ours, but anyone can edit it)."""
    try:
        data = json.loads(raw) if isinstance(raw, str) else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def read_time_annotation(raw: Any) -> dict[str, datetime]:
    """A `{cluster: RFC 3339 time}` annotation as written by `write_time_annotation`; entries that do not read are
    dropped and unreadable content gives {}."""
    times = {}
    for cluster, value in read_json_annotation(raw).items():
        moment = parse_time(value)
        if isinstance(cluster, str) and moment is not None:
            times[cluster] = moment
    return times


def write_time_annotation(times: Mapping[str, datetime]) -> str | None:
    """The annotation value for `times`, sorted and compact; None (delete the annotation) when it is empty."""
    if not times:
        return None
    return json.dumps(
        {cluster: format_time(moment) for cluster, moment in sorted(times.items())}, separators=(",", ":")
    )
