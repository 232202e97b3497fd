"""Commands run in-process (relay.cli.main) point logging at the captured stderr of their test; afterwards the
logging set-up is restored, so later tests never write into that closed stream."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
import structlog


@pytest.fixture(autouse=True)
def restored_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    structlog.reset_defaults()
    root.handlers, root.level = handlers, level
