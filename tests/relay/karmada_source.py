"""Karmada's own CRDs for tests, from the source tree `hack/build-karmada.sh --source-only` unpacks (and prints)."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


@functools.lru_cache(maxsize=1)
def _source() -> Path | str:
    try:
        result = subprocess.run(
            ["bash", str(REPO_ROOT / "hack" / "build-karmada.sh"), "--source-only"],
            capture_output=True,
            text=True,
            timeout=600,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"hack/build-karmada.sh --source-only: {error}"
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        return f"hack/build-karmada.sh --source-only failed: {result.stderr.strip().splitlines()[-1:]}"
    return Path(lines[-1]) / "src"


def karmada_crd_dir() -> Path:
    """charts/karmada/_crds/bases of the Karmada source; the test is skipped when there is no source to unpack."""
    source = _source()
    if isinstance(source, str):
        pytest.skip(source)
    return source / "charts" / "karmada" / "_crds" / "bases"
