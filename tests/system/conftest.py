"""Prerequisites of the system suite, checked where they are used: a missing chromium or Playwright fails the
test that needs it with the command that installs it (never a skip). Imported lazily, so that collecting
tests/system/ in the default run (where the system marker deselects it) needs neither."""

from __future__ import annotations

import os
from types import ModuleType

import pytest

from tests.support.require import require
from tests.support.server import CHROMIUM

TIMEOUT_MS = 30_000  # one page load or one interaction -> the expected text


@pytest.fixture(scope="session")
def chromium() -> str:
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (the system suite needs it)", pytrace=False)
    return CHROMIUM


@pytest.fixture(scope="session")
def sync_api(chromium: str) -> ModuleType:
    """playwright.sync_api, with auto-retrying expectations waiting up to TIMEOUT_MS."""
    api = require("playwright.sync_api")
    api.expect.set_options(timeout=TIMEOUT_MS)
    return api


@pytest.fixture(scope="session")
def async_api(chromium: str) -> ModuleType:
    return require("playwright.async_api")
