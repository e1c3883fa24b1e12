"""The app imports the calculator only through its public API (``calculator/__init__.py``), and that API
names only things that exist."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import calculator

ROOT = Path(__file__).resolve().parent.parent
VIEW_FILES = sorted((ROOT / "ui").rglob("*.py")) + [ROOT / "app.py"]


def _calculator_submodule_imports(path: Path) -> list[str]:
    """``calculator.<submodule>`` imports anywhere in a file (module level, functions, type-checking blocks)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("calculator."):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} from {node.module} import ...")
        elif isinstance(node, ast.Import):
            found += [
                f"{path.relative_to(ROOT)}:{node.lineno} import {a.name}"
                for a in node.names
                if a.name.startswith("calculator.")
            ]
    return found


def test_view_files_found() -> None:
    assert ROOT / "app.py" in VIEW_FILES
    assert len(VIEW_FILES) > 10


@pytest.mark.parametrize("path", VIEW_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_views_import_only_the_public_api(path: Path) -> None:
    assert _calculator_submodule_imports(path) == [], "import these names from `calculator` (add them to __all__)"


def test_every_public_name_exists() -> None:
    missing = [name for name in calculator.__all__ if not hasattr(calculator, name)]
    assert missing == []
    assert len(set(calculator.__all__)) == len(calculator.__all__)


def test_public_names_the_views_use_are_exported() -> None:
    used = set()
    for path in VIEW_FILES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "calculator":
                used |= {a.name for a in node.names}
    assert used - set(calculator.__all__) == set()
