"""Prerequisites of the system suite, checked where they are used: a missing chromium or Playwright fails the
test that needs it with the command that installs it (never a skip). Imported lazily, so that collecting
tests/system/ in the default run (where the system marker deselects it) needs neither."""

from __future__ import annotations

import os
from types import ModuleType

import pytest

from tests.support.server import CHROMIUM

TIMEOUT_MS = 30_000  # one page load or one interaction -> the expected text


@pytest.fixture(scope="session")
def chromium() -> str:
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (the system suite needs it)", pytrace=False)
    return CHROMIUM


def _import(name: str) -> ModuleType:
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError as exc:
        pytest.fail(f"{name} cannot be imported ({exc}): python3 -m pip install -r requirements-dev.txt", pytrace=False)


@pytest.fixture(scope="session")
def sync_api(chromium: str) -> ModuleType:
    """playwright.sync_api, with auto-retrying expectations waiting up to TIMEOUT_MS."""
    api = _import("playwright.sync_api")
    api.expect.set_options(timeout=TIMEOUT_MS)
    return api


@pytest.fixture(scope="session")
def async_api(chromium: str) -> ModuleType:
    return _import("playwright.async_api")
