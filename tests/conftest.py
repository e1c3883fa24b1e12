"""Test-suite rules that hold for every test.

* Everything under ``tests/system/`` (real browsers, the load test, deployment, anything that starts a
  server) carries the ``system`` marker. ``pyproject.toml`` deselects it by default (``-m "not system"``), so
  ``python3 -m pytest`` runs the unit, UI (AppTest) and reference tests; ``python3 -m pytest -m system -n 0``
  runs the system suite. A ``browser``, ``load`` or ``deploy`` test outside ``tests/system/`` is a collection
  error: those markers mean "needs a browser / a server / the deployment files" and belong to the system suite.
* No wall-clock limits in unit tests: hypothesis runs without its per-example deadline (speed is measured by
  ``benchmarks/``, bounds are CPU-time limits in a child process, see ``tests/support/limits.py``).
* Streamlit's scan of the installed packages for v2 components runs once per test process, not once per
  ``AppTest``: see :func:`_scan_components_once`.
* The Python processes the tests start read their bytecode from a cache in the temporary directory:
  see :func:`_children_use_bytecode`.
"""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from streamlit.components.v2 import manifest_scanner

from tests.support.paths import ROOT

SYSTEM_DIR = ROOT / "tests" / "system"
SYSTEM_ONLY_MARKERS = ("browser", "load", "deploy")

settings.register_profile("rlplan", deadline=None, print_blob=True)
settings.load_profile("rlplan")


def _scan_components_once() -> None:
    """Every ``AppTest`` makes its own ``BidiComponentManager`` at its first run, which calls
    ``streamlit.components.v2.manifest_scanner.scan_component_manifests``: it parses the METADATA of every installed
    distribution (~150 here) to find v2 components, 0.3-0.4 s of CPU each time on this 2-core machine, most of a
    fresh AppTest's first run (0.06 s without it). A server scans once, when its runtime starts. Nothing installs or
    removes a package during a test run, so the scan's answer is the same every time: remembered per process."""
    scan = manifest_scanner.scan_component_manifests
    if not hasattr(scan, "cache_info"):  # already remembered (conftest imported twice)
        manifest_scanner.scan_component_manifests = functools.cache(scan)


_scan_components_once()


def _children_use_bytecode() -> None:
    """The CLI runs, the CPU-limited children (``tests/support/limits.py``) and the servers the tests start are
    fresh interpreters. Where the environment forbids writing bytecode (``PYTHONDONTWRITEBYTECODE``, as on this
    development machine), each one compiled every module it imports from source: 0.1-0.2 s more import time a
    process (``benchmarks/bench_cli.py``, from source against with bytecode). They (and the xdist workers, started
    after this runs) now share a bytecode cache under the temporary directory (``PYTHONPYCACHEPREFIX``, which mirrors
    each source file's absolute path, so checkouts never mix). Nothing is written into the checkout either way. Python
    checks each cached file against its source's modification time and size."""
    if os.environ.get("PYTHONPYCACHEPREFIX"):
        return  # the caller chose where bytecode goes
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / f"rlplan-test-bytecode-{os.getuid()}")


_children_use_bytecode()


def _under(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder)
    except ValueError:
        return False
    return True


@pytest.hookimpl(tryfirst=True)  # before pytest's own -m deselection reads the markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    misplaced = []
    for item in items:
        if _under(Path(str(item.path)), SYSTEM_DIR):
            item.add_marker(pytest.mark.system)
        else:
            marks = [m for m in SYSTEM_ONLY_MARKERS if item.get_closest_marker(m)]
            if marks:
                misplaced.append(f"{item.nodeid} ({', '.join(marks)})")
    if misplaced:
        raise pytest.UsageError(
            "tests marked browser/load/deploy must live under tests/system/: " + "; ".join(misplaced)
        )


@pytest.fixture(scope="session")
def artifacts_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Where system tests put screenshots and figures: ``$RLPLAN_TEST_ARTIFACTS`` when set (``.ci/run`` sets
    it to keep them), else a temporary directory. Never a tracked path."""
    configured = os.environ.get("RLPLAN_TEST_ARTIFACTS")
    if configured:
        path = Path(configured).resolve()
        path.mkdir(parents=True, exist_ok=True)
    else:
        path = tmp_path_factory.mktemp("artifacts")
    yield path
