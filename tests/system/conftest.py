"""Prerequisites of the system suite, checked where they are used: a missing chromium or Playwright fails the
test that needs it with the command that installs it (never a skip). Imported lazily, so that collecting
tests/system/ in the default run (where the system marker deselects it) needs neither."""

from __future__ import annotations

import os
from collections.abc import Iterator
from types import ModuleType

import pytest

from tests.support.require import require
from tests.support.server import CHROMIUM, CHROMIUM_ARGS, Server, streamlit_server

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


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    """The dashboard on the shipped presets, one per test module; its log must end with no traceback."""
    with streamlit_server() as srv:
        yield srv
    assert "Traceback" not in srv.log_text(), srv.log_text()[-3000:]


@pytest.fixture()
def browser(server: Server, sync_api: ModuleType, chromium: str) -> Iterator:
    """A headless chromium for one test (the dashboard already running)."""
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()
