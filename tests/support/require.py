"""Prerequisites fail, never skip: a test that needs a package imports it through :func:`require`, which fails
that test (not the whole collection) with the command that installs it."""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest

INSTALL_DEV = "python3 -m pip install -r requirements-dev.txt"


def require(name: str, how: str = INSTALL_DEV) -> ModuleType:
    """``import name``, or fail the calling test with ``how`` (the install command)."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        pytest.fail(f"{name} cannot be imported ({exc}): {how}", pytrace=False)
