"""The relay's version: the installed package's metadata, from pyproject.toml (the one place it is written; the
chart, the manifests' image tag and the CHANGELOG's newest release follow it: tests/test_versions.py). Here, at the
bottom of the layers, because the command line, the server's logs and metrics and the controllers' API clients
(their user agent) all show it."""

from __future__ import annotations

import platform
from importlib.metadata import PackageNotFoundError, version


def package_version() -> str:
    try:
        return version("failover-relay")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def python_version() -> str:
    return platform.python_version()
