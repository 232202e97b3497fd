from __future__ import annotations

import asyncio

import pytest

from tests.monitoring.exported import scrape_exercised_relay


@pytest.fixture(scope="session")
def exposition(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The text of one scrape of an in-process relay, exercised so every family has samples
    (tests/monitoring/exported.py)."""
    return asyncio.run(scrape_exercised_relay(tmp_path_factory.mktemp("scraped-relay")))
