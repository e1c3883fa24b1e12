"""Screenshot-ready layout (issue 13 item 11) in Debian's chromium at the two laptop sizes people plan on:
no metric value, label or delta is clipped (``scrollWidth > clientWidth`` on the element or any descendant),
the headline agrees with the metrics, a collapsed sidebar gives the content its width back, the step-time legend
is not a scroll box, and the Mean/Max control shows whole labels.

Run: ``python3 -m pytest -m system -n 0 tests/system/test_layout.py``."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from urllib.parse import urlencode

import pytest

from calculator import estimate, load_scenario
from tests.support.server import Server
from ui import keys
from ui.i18n import tr
from ui.state import DEFAULT_PRESET

pytestmark = pytest.mark.browser

VIEWPORTS = ((1440, 900), (1280, 800))
# The scenario: 70B on 32 x H200, large numbers in every card.
BIG = {"preset": DEFAULT_PRESET, "model.path": "llama3.1-70b", "hardware.num_gpus": "32", "hardware.gpu": "h200-141gb"}

# Elements (and their descendants) whose content is cut when scrollWidth exceeds clientWidth.
CLIPPED_JS = """(selector) => {
  const out = [];
  for (const root of document.querySelectorAll(selector)) {
    for (const el of [root, ...root.querySelectorAll('*')]) {
      if (el.scrollWidth > el.clientWidth + 1) {
        out.push(`${root.getAttribute('data-testid')}: ${root.innerText.trim()} (${el.scrollWidth} > ${el.clientWidth})`);
        break;
      }
    }
  }
  return out;
}"""
INSIDE_COLUMN_JS = """(selector) => [...document.querySelectorAll(selector)].map((el) => {
  const col = el.closest('[data-testid="stColumn"]');
  const a = el.getBoundingClientRect(), b = col.getBoundingClientRect();
  return a.width === 0 || (a.left >= b.left - 1 && a.right <= b.right + 1);  // width 0: a hidden help icon
})"""
METRIC_PARTS = '[data-testid="stMetricValue"], [data-testid="stMetricLabel"], [data-testid="stMetricDelta"]'


def _open(browser, server: Server, sync_api: ModuleType, size: tuple[int, int], query: dict[str, str]):
    pg = browser.new_page(viewport={"width": size[0], "height": size[1]})
    pg.set_default_timeout(30_000)
    pg.goto(f"{server.url}/?{urlencode(query)}")
    sync_api.expect(pg.locator('[data-testid="stMetricValue"]').first).to_be_visible()
    sync_api.expect(pg.locator(".js-plotly-plot").first).to_be_visible()
    return pg


@pytest.mark.parametrize("size", VIEWPORTS, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("query", [{"preset": DEFAULT_PRESET}, BIG], ids=["default", "70b-h200"])
def test_metric_cards_are_not_clipped(
    server: Server, browser, sync_api: ModuleType, size: tuple[int, int], query: dict, artifacts_dir: Path
) -> None:
    pg = _open(browser, server, sync_api, size, query)
    overrides = {k: (int(v) if k == "hardware.num_gpus" else v) for k, v in query.items() if "." in k}
    report = estimate(load_scenario(DEFAULT_PRESET, overrides=overrides))
    peak = pg.locator('[data-testid="stMetric"]').filter(has_text=tr("en", "metric.peak"))
    sync_api.expect(peak.locator('[data-testid="stMetricValue"]')).to_have_text(f"{report.peak.gib_per_gpu:.2f} GiB")
    pg.screenshot(path=str(artifacts_dir / f"layout-{size[0]}-{'big' if len(query) > 1 else 'default'}.png"))
    assert pg.locator('[data-testid="stMetricValue"]').count() >= 5
    clipped = pg.evaluate(CLIPPED_JS, METRIC_PARTS)
    assert not clipped, clipped
    # the Mean/Max (expected/worst) control shows whole labels
    clipped = pg.evaluate(CLIPPED_JS, f".st-key-{keys.VIEW_CASE}, .st-key-{keys.VIEW_CASE} *")
    assert not clipped, clipped
    # ... and stays inside its page column (a group wider than the column is cut at the column's edge)
    inside = pg.evaluate(INSIDE_COLUMN_JS, f".st-key-{keys.VIEW_CASE} button")
    assert all(inside), inside


@pytest.mark.parametrize("size", VIEWPORTS, ids=lambda s: f"{s[0]}x{s[1]}")
def test_headline_agrees_with_metrics(server: Server, browser, sync_api: ModuleType, size: tuple[int, int]) -> None:
    """The verdict's numbers are the cards' numbers (one report read by both)."""
    pg = _open(browser, server, sync_api, size, {"preset": DEFAULT_PRESET})
    report = estimate(load_scenario(DEFAULT_PRESET))
    alert = pg.locator('[data-testid="stAlert"]').first
    sync_api.expect(alert).to_contain_text(f"{report.peak.gib_per_gpu:.2f}")
    values = pg.locator('[data-testid="stMetricValue"]')
    sync_api.expect(values.first).to_have_text(f"{report.peak.gib_per_gpu:.2f} GiB")
    sync_api.expect(values.nth(1)).to_have_text(f"{report.hardware.usable_memory_gib:.2f} GiB")


def test_collapsed_sidebar_widens_the_content(server: Server, browser, sync_api: ModuleType) -> None:
    pg = _open(browser, server, sync_api, (1280, 800), {"preset": DEFAULT_PRESET})
    main = pg.locator('[data-testid="stMainBlockContainer"]')
    width_open = main.bounding_box()["width"]
    pg.locator('[data-testid="stSidebar"]').hover()
    pg.locator('[data-testid="stSidebarCollapseButton"] button').click()
    sync_api.expect(pg.locator('[data-testid="stSidebar"]')).to_have_attribute("data-collapsed", "true")
    # the sidebar slides out over a transition: wait until it has left the viewport, then measure
    pg.wait_for_function(
        "(() => { const r = document.querySelector('[data-testid=\"stSidebar\"]')?.getBoundingClientRect();"
        " return !r || r.width < 5 || r.right <= 5; })()"
    )
    pg.wait_for_function(f"document.querySelector('[data-testid=\"stMainBlockContainer\"]').offsetWidth > {width_open}")
    sidebar = pg.locator('[data-testid="stSidebar"]').bounding_box()
    assert sidebar is None or sidebar["width"] < 5 or sidebar["x"] + sidebar["width"] <= 5, sidebar
    assert main.bounding_box()["width"] > width_open + 200


def test_step_time_legend_is_not_a_scroll_box(server: Server, browser, sync_api: ModuleType) -> None:
    """Plotly turns a legend taller than its room into a scroll box (a ``.scrollbar`` rect): every entry is visible."""
    pg = _open(browser, server, sync_api, (1280, 800), {"preset": DEFAULT_PRESET})
    chart = pg.locator(f".st-key-{keys.CHART_TIME} .js-plotly-plot")
    sync_api.expect(chart).to_be_visible()
    bars = chart.locator("g.legend rect.scrollbar")
    heights = [float(b.get_attribute("height") or 0) for b in bars.all()]
    assert all(h == 0 for h in heights), heights
