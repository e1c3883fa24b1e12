"""Static PNG export of the figures (ui/export.py): kaleido renders with Debian's chromium, no server involved.
A system test because it needs chromium (``apt-get install -y chromium``), which no pip requirement provides."""

from __future__ import annotations

import pytest

from calculator import estimate, load_scenario
from ui import export, figures

pytestmark = pytest.mark.browser


def test_png_export(chromium: str) -> None:
    assert export.png_export_available(), "kaleido (requirements.txt) cannot find chromium"
    report = estimate(load_scenario("qwen2.5-7b-grpo-8xh100"))
    png = export.figure_png(figures.memory_figure(report, title="t"), width=800, height=450, scale=1)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
