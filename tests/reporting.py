"""Measured numbers in the test output."""

from __future__ import annotations

from typing import Any


def report(request: Any, tag: str, line: str) -> None:
    """Put a measured number into the test output even under -q, as `[tag] line` (the numbers go into the notes)."""
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.ensure_newline()
            reporter.write_line(f"[{tag}] {line}")
