"""First chart in a real browser (issue #18: <= 3 s in Debian's chromium): time from ``page.goto`` until the
first plotly chart is visible, for the dashboard and for a one-chart Streamlit page on the same machine, and,
for the dashboard, until the whole Estimate page is there (its three charts, the breakdown table and the
download buttons: a browser's first visit renders the rest after the first chart, ui/first_paint.py).

    python benchmarks/bench_browser.py [--rounds 5]

Each round opens a fresh browser context (no cache, as a first visit). The server is started once and warmed
by one visit (the first visit of a server process also imports pandas and plotly). Needs /usr/bin/chromium and
Playwright (shared/TESTING.md). The browser runs on the same cores as the server: noisy. Prints figures; not a
test.

The goal's figure is Playwright's: ``goto`` until ``wait_for(state="visible")`` returns. Playwright checks from
inside the page between the page's own tasks, so it notices the chart only once the browser is free: measured
here 0.3-0.4 s after the page's own clock on the one-chart page, up to ~0.7 s while the rest of the Estimate page
is being built. The page itself records when the first chart was first laid out visible (a MutationObserver and
the next animation frame, in ms since navigation start, ``PAINT_PROBE``); both are printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from tests.support.server import CHROMIUM, CHROMIUM_ARGS, streamlit_server  # noqa: E402

# The first animation frame in which the first plotly chart has a box and is not hidden (ms since navigation start).
PAINT_PROBE = """
window.__firstChartMs = null;
const chartShown = () => {
  const el = document.querySelector(".js-plotly-plot");
  if (!el || !el.querySelector(".main-svg")) return false;
  const box = el.getBoundingClientRect();
  return box.width > 0 && box.height > 0 && getComputedStyle(el).visibility !== "hidden";
};
const observer = new MutationObserver(() => {
  if (window.__firstChartMs === null && chartShown()) {
    observer.disconnect();
    requestAnimationFrame(() => { window.__firstChartMs = performance.now(); });
  }
});
observer.observe(document, { childList: true, subtree: true, attributes: true });
"""

ONE_CHART = """
import plotly.graph_objects as go
import streamlit as st
st.plotly_chart(go.Figure(go.Bar(x=["a", "b", "c"], y=[1, 3, 2])))
"""


def first_chart_s(browser, url: str, whole_page: bool = False) -> tuple[float, float, float]:
    """Seconds from ``goto`` to the first visible chart (Playwright), to the complete page (``whole_page``: the
    Estimate page's last elements; otherwise the first chart), and the page's own first-chart frame."""
    ctx = browser.new_context()
    ctx.add_init_script(PAINT_PROBE)
    page = ctx.new_page()
    t0 = time.perf_counter()
    page.goto(url)
    page.locator(".js-plotly-plot").first.wait_for(state="visible", timeout=60_000)
    first = time.perf_counter() - t0
    if whole_page:
        page.locator(".js-plotly-plot").nth(2).wait_for(state="attached", timeout=60_000)
        page.locator('[data-testid="stDataFrame"]').first.wait_for(state="visible", timeout=60_000)
        page.locator('[data-testid="stDownloadButton"]').last.wait_for(state="visible", timeout=60_000)
    complete = time.perf_counter() - t0
    painted_ms = page.evaluate("window.__firstChartMs")
    ctx.close()
    return first, complete, painted_ms / 1000 if painted_ms is not None else float("nan")


def measure(browser, url: str, rounds: int, whole_page: bool = False) -> list[tuple[float, float, float]]:
    first_chart_s(browser, url, whole_page)  # warm the server process
    return [first_chart_s(browser, url, whole_page) for _ in range(rounds)]


def summary(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s (min {min(values):.2f}, max {max(values):.2f})"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    load_before = os.getloadavg()[0]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        with streamlit_server() as server:
            ours = measure(browser, server.url, args.rounds, whole_page=True)
        with tempfile.TemporaryDirectory() as tmp:
            app = Path(tmp) / "one_chart.py"
            app.write_text(ONE_CHART, encoding="utf-8")
            with streamlit_server(args=(), script=str(app)) as server:
                ref = measure(browser, server.url, args.rounds)
        browser.close()
    load_after = os.getloadavg()[0]
    print(f"first chart visible after goto, median of {args.rounds} fresh contexts (goal <= 3 s):")
    print(f"  rlplan Estimate page: {summary([r[0] for r in ours])}")
    print(f"  one-chart Streamlit page: {summary([r[0] for r in ref])}")
    print(f"rlplan Estimate page complete (3 charts, tables, downloads): {summary([r[1] for r in ours])}")
    print("first chart laid out visible, the page's own clock (ms since navigation start, PAINT_PROBE):")
    print(f"  rlplan Estimate page: {summary([r[2] for r in ours])}")
    print(f"  one-chart Streamlit page: {summary([r[2] for r in ref])}")
    print(
        f"machine load (1-min average) before / after: {load_before:.1f} / {load_after:.1f} on {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    main()
