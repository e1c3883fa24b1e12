"""Where the repository is, for tests at any depth under tests/."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app.py"
