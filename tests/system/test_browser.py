"""The dashboard in a real headless browser: Playwright (sync API) drives Debian's chromium against
``streamlit run app.py``. Run with ``pytest -m browser tests/test_browser.py``."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from calculator import estimate, load_scenario
from tests.support.paths import ROOT
from ui import keys
from ui.i18n import tr
from ui.state import DEFAULT_PRESET

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = ROOT / "test-artifacts"
TIMEOUT_MS = 30_000

if not os.path.exists(CHROMIUM):
    pytest.skip(f"{CHROMIUM} is missing: apt-get install -y chromium", allow_module_level=True)
playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect
expect.set_options(timeout=TIMEOUT_MS)


def key_class(key: str) -> str:
    """The CSS class Streamlit gives a keyed widget (st-key- + the key with other characters as '-')."""
    return ".st-key-" + re.sub(r"[^a-zA-Z0-9_-]", "-", key.strip())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    port = _free_port()
    cmd = [
        sys.executable, "-m", "streamlit", "run", "app.py",
        "--server.headless", "true", "--server.address", "127.0.0.1", "--server.port", str(port),
        "--browser.gatherUsageStats", "false",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=1).read() == b"ok":
                break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
            pytest.fail(f"streamlit did not start:\n{out[-3000:]}")
        time.sleep(0.2)
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture()
def page(server: str) -> Iterator:
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        pg = browser.new_page(viewport={"width": 1600, "height": 1250})
        pg.set_default_timeout(TIMEOUT_MS)
        yield pg
        browser.close()


def metric_value(pg, label: str):
    return pg.locator('[data-testid="stMetric"]').filter(has_text=label).locator('[data-testid="stMetricValue"]')


def test_estimate_page_updates_chart_and_headline(server: str, page) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    base = estimate(load_scenario(DEFAULT_PRESET))
    more = estimate(load_scenario(DEFAULT_PRESET, overrides={"hardware.num_gpus": 16}))
    assert f"{base.peak.gib_per_gpu:.2f}" != f"{more.peak.gib_per_gpu:.2f}"

    page.goto(server)
    chart = page.locator(".js-plotly-plot").first
    expect(chart).to_be_visible()
    peak = metric_value(page, tr("en", "metric.peak"))
    expect(peak).to_have_text(f"{base.peak.gib_per_gpu:.2f} GiB")
    totals = chart.locator("g.annotation text")
    expect(totals).to_contain_text([f"{p.total_gib:.1f}" for p in base.phases])
    expect(page.locator('[data-testid="stException"]')).to_have_count(0)
    page.screenshot(path=str(ARTIFACTS / "estimate.png"))

    # A number input commits on Enter.
    gpus = page.locator(f"{key_class(keys.NUM_GPUS)} input")
    gpus.fill("16")
    gpus.press("Enter")
    expect(peak).not_to_have_text(f"{base.peak.gib_per_gpu:.2f} GiB")
    expect(peak).to_have_text(f"{more.peak.gib_per_gpu:.2f} GiB")
    expect(totals).to_contain_text([f"{p.total_gib:.1f}" for p in more.phases])
    expect(page).to_have_url(re.compile(r"hardware\.num_gpus=16"))  # the link carries the change
    page.screenshot(path=str(ARTIFACTS / "estimate-16gpus.png"))

    # The link reopens the same view in a fresh session.
    page.goto(page.url)
    expect(metric_value(page, tr("en", "metric.peak"))).to_have_text(f"{more.peak.gib_per_gpu:.2f} GiB")
    expect(page.locator(f"{key_class(keys.NUM_GPUS)} input")).to_have_value("16")

    # Chinese: labels switch, numbers stay identical.
    page.locator('[data-testid="stSidebar"] label').filter(has_text="中文").click()
    expect(metric_value(page, tr("zh", "metric.peak"))).to_have_text(f"{more.peak.gib_per_gpu:.2f} GiB")
    page.screenshot(path=str(ARTIFACTS / "estimate-zh.png"))


def test_docs_screenshot(server: str, page) -> None:
    """A clean screenshot of the default view for the README (docs/screenshot.png)."""
    base = estimate(load_scenario(DEFAULT_PRESET))
    page.goto(server)
    expect(page.locator(".js-plotly-plot").first).to_be_visible()
    expect(metric_value(page, tr("en", "metric.peak"))).to_have_text(f"{base.peak.gib_per_gpu:.2f} GiB")
    expect(page.locator(".js-plotly-plot g.annotation text").first).to_be_visible()
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "screenshot.png"
    page.screenshot(path=str(shot))
    (ROOT / "docs").mkdir(exist_ok=True)
    shutil.copyfile(shot, ROOT / "docs" / "screenshot.png")


def test_png_download_is_rendered_server_side(server: str, page) -> None:
    """The chart PNG button runs kaleido + chromium on the server when clicked (deferred download)."""
    from ui.export import png_export_available

    if not png_export_available():
        pytest.skip("kaleido or chromium missing on the server: the toolbar camera is the PNG export")
    page.goto(server)
    expect(page.locator(".js-plotly-plot").first).to_be_visible()
    button = page.locator(key_class(keys.DL_PNG_COMPONENTS)).get_by_role("button")
    with page.expect_download(timeout=60_000) as info:
        button.click()
    path = info.value.path()
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    assert info.value.suggested_filename.endswith(".png")
    (ARTIFACTS / "memory-components.png").write_bytes(data)


def test_compare_page_renders(server: str, page) -> None:
    page.goto(f"{server}/compare")
    chart = page.locator(".js-plotly-plot").first
    expect(chart).to_be_visible()
    expect(page.locator('[data-testid="stMetricValue"]')).to_have_count(2)
    expect(page.locator('[data-testid="stException"]')).to_have_count(0)
    page.screenshot(path=str(ARTIFACTS / "compare.png"))
