"""Whether the tests run on CI, where a tier that cannot run fails instead of skipping."""

from __future__ import annotations

import os


def on_ci() -> bool:
    """Running under .ci/run (CI=true): a missing tool or binary a tier needs is a failure there, locally a skip."""
    return os.environ.get("CI", "").lower() in ("true", "1", "yes")
