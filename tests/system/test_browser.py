"""The dashboard in a real headless browser: Playwright (sync API) drives Debian's chromium against
``streamlit run app.py`` (tests/support/server.py). Run with ``python3 -m pytest -m system -n 0 tests/system``.

Screenshots go to the artifacts directory (``$RLPLAN_TEST_ARTIFACTS``, else a temporary one), never into the
repository; ``docs/screenshot.py`` regenerates the README's picture on purpose."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode, urlparse

import pytest

from calculator import estimate, load_scenario
from tests.support.hostile import PAYLOAD
from tests.support.paths import ROOT
from tests.support.server import Server
from ui import keys
from ui.i18n import tr
from ui.state import DEFAULT_PRESET

pytestmark = pytest.mark.browser

PEAK = tr("en", "metric.peak")


def key_class(key: str) -> str:
    """The CSS class Streamlit gives a keyed widget (st-key- + the key with other characters as '-')."""
    return ".st-key-" + re.sub(r"[^a-zA-Z0-9_-]", "-", key.strip())


def default_peak(overrides: dict | None = None) -> str:
    return f"{estimate(load_scenario(DEFAULT_PRESET, overrides=overrides or {})).peak.gib_per_gpu:.2f} GiB"


@pytest.fixture()
def page(browser) -> Iterator:
    pg = browser.new_page(viewport={"width": 1600, "height": 1250})
    pg.set_default_timeout(30_000)
    yield pg


def metric_value(pg, label: str):
    return pg.locator('[data-testid="stMetric"]').filter(has_text=label).locator('[data-testid="stMetricValue"]')


def test_estimate_page_updates_chart_and_headline(server: Server, page, sync_api, artifacts_dir: Path) -> None:
    expect = sync_api.expect
    base = estimate(load_scenario(DEFAULT_PRESET))
    more = estimate(load_scenario(DEFAULT_PRESET, overrides={"hardware.num_gpus": 16}))
    assert f"{base.peak.gib_per_gpu:.2f}" != f"{more.peak.gib_per_gpu:.2f}"

    page.goto(server.url)
    chart = page.locator(".js-plotly-plot").first
    expect(chart).to_be_visible()
    peak = metric_value(page, PEAK)
    expect(peak).to_have_text(f"{base.peak.gib_per_gpu:.2f} GiB")
    totals = chart.locator("g.annotation text")
    expect(totals).to_contain_text([f"{p.total_gib:.1f}" for p in base.phases])
    expect(page.locator('[data-testid="stException"]')).to_have_count(0)
    page.screenshot(path=str(artifacts_dir / "estimate.png"))

    # A number input commits on Enter.
    gpus = page.locator(f"{key_class(keys.NUM_GPUS)} input")
    gpus.fill("16")
    gpus.press("Enter")
    expect(peak).not_to_have_text(f"{base.peak.gib_per_gpu:.2f} GiB")
    expect(peak).to_have_text(f"{more.peak.gib_per_gpu:.2f} GiB")
    expect(totals).to_contain_text([f"{p.total_gib:.1f}" for p in more.phases])
    expect(page).to_have_url(re.compile(r"hardware\.num_gpus=16"))  # the link carries the change
    page.screenshot(path=str(artifacts_dir / "estimate-16gpus.png"))

    # The link reopens the same view in a fresh session.
    page.goto(page.url)
    expect(metric_value(page, PEAK)).to_have_text(f"{more.peak.gib_per_gpu:.2f} GiB")
    expect(page.locator(f"{key_class(keys.NUM_GPUS)} input")).to_have_value("16")

    # Chinese: labels switch, numbers stay identical.
    page.locator('[data-testid="stSidebar"] label').filter(has_text="中文").click()
    expect(metric_value(page, tr("zh", "metric.peak"))).to_have_text(f"{more.peak.gib_per_gpu:.2f} GiB")
    page.screenshot(path=str(artifacts_dir / "estimate-zh.png"))


# What the page holds at the moment each element first appears (recorded in the page, before its own scripts run).
ORDER_PROBE = """
window.__rlplanOrder = [];
new MutationObserver(() => {
  const seen = (name) => window.__rlplanOrder.some((e) => e.what === name);
  const note = (name, selector) => {
    if (!seen(name) && document.querySelector(selector)) {
      window.__rlplanOrder.push({
        what: name,
        tables: document.querySelectorAll('[data-testid="stDataFrame"]').length,
        downloads: document.querySelectorAll('[data-testid="stDownloadButton"]').length,
        charts: document.querySelectorAll(".js-plotly-plot").length,
      });
    }
  };
  note("chart drawn", ".js-plotly-plot .main-svg");
  note("table", '[data-testid="stDataFrame"]');
  note("inputs", '[data-testid="stSidebar"] [data-testid="stSelectbox"]');
}).observe(document, { childList: true, subtree: true });
"""


def test_first_visit_draws_the_memory_chart_before_the_rest(server: Server, page, sync_api) -> None:
    """ui/first_paint.py: the first chart is drawn while nothing below it is on the page and the sidebar has no
    inputs yet; the rest (inputs, two more charts, tables, downloads) follows without any interaction, and the
    trigger is gone."""
    expect = sync_api.expect
    page.add_init_script(ORDER_PROBE)
    page.goto(server.url)
    expect(page.locator(".js-plotly-plot")).to_have_count(3)
    expect(page.locator('[data-testid="stDataFrame"]').first).to_be_visible()
    expect(page.locator('[data-testid="stDownloadButton"]').first).to_be_visible()
    expect(page.locator(f"{key_class(keys.PRESET)}")).to_be_visible()
    expect(page.locator(key_class(keys.CHART_DRAWN))).to_have_count(0)
    expect(page.locator('[data-testid="stException"]')).to_have_count(0)
    order = page.evaluate("window.__rlplanOrder")
    assert [e["what"] for e in order][0] == "chart drawn" and len(order) == 3, order
    assert order[0] | {"what": ""} == {"what": "", "tables": 0, "downloads": 0, "charts": 1}, order


def test_docs_screenshot_script(tmp_path: Path, chromium: str) -> None:
    """docs/screenshot.py (which regenerates the README's docs/screenshot.png) works; here it writes to tmp_path."""
    out = tmp_path / "screenshot.png"
    done = subprocess.run(
        [sys.executable, "docs/screenshot.py", "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 50_000


def test_png_download_is_rendered_server_side(server: Server, page, sync_api, artifacts_dir: Path) -> None:
    """The chart PNG button runs kaleido + chromium on the server when clicked (deferred download)."""
    from ui.export import png_export_available

    assert png_export_available(), "kaleido (requirements.txt) and chromium (apt-get install -y chromium) are needed"
    page.goto(server.url)
    sync_api.expect(page.locator(".js-plotly-plot").first).to_be_visible()
    button = page.locator(key_class(keys.DL_PNG_COMPONENTS)).get_by_role("button")
    with page.expect_download(timeout=60_000) as info:
        button.click()
    data = Path(info.value.path()).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    assert info.value.suggested_filename.endswith(".png")
    (artifacts_dir / "memory-components.png").write_bytes(data)


def test_compare_page_renders(server: Server, page, sync_api, artifacts_dir: Path) -> None:
    expect = sync_api.expect
    page.goto(f"{server.url}/compare")
    expect(page.locator(".js-plotly-plot").first).to_be_visible()
    # two columns, each with its peak and its step time (issue 13 item 13)
    expect(page.locator('[data-testid="stMetricValue"]')).to_have_count(4)
    expect(page.locator('[data-testid="stMetric"]').filter(has_text=tr("en", "metric.step_time"))).to_have_count(2)
    expect(page.locator('[data-testid="stException"]')).to_have_count(0)
    page.screenshot(path=str(artifacts_dir / "compare.png"))


def test_injected_markup_never_reaches_the_dom(server: Server, page, sync_api) -> None:
    """The tampered link of tests/ui/test_bad_input.py in chromium: the messages are there, no injected image,
    link or script, no dialog, no request to the injected host."""
    params = {"preset": PAYLOAD, "rollout.n": PAYLOAD, PAYLOAD: "1", "hardware.gpu": "<script>alert('EVIL')</script>"}
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(f"{server.url}/?{urlencode(params)}")
    sync_api.expect(metric_value(page, PEAK)).to_have_text(default_peak())
    alert = page.locator('[data-testid="stAlert"]').filter(has_text="EVIL").first
    sync_api.expect(alert).to_be_visible()
    assert "![EVIL](http://evil.example/p.png)" in alert.inner_text().replace("\u200b", "")  # shown as text
    assert page.locator('img[src*="evil.example"]').count() == 0
    assert page.locator('a[href*="evil.example"]').count() == 0
    assert page.locator('img[src="x"]').count() == 0
    assert page.locator(".katex").filter(has_text="EVIL").count() == 0
    assert page.locator('[data-testid="stException"]').count() == 0
    assert not dialogs and not [u for u in requests if urlparse(u).hostname == "evil.example"]
