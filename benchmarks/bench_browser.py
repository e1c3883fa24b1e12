"""First chart in a real browser (issue #18: <= 3 s in Debian's chromium): time from ``page.goto`` until the
first plotly chart is visible, for the dashboard and for a one-chart Streamlit page on the same machine.

    python benchmarks/bench_browser.py [--rounds 5]

Each round opens a fresh browser context (no cache, as a first visit). The server is started once and warmed
by one visit (the first visit of a server process also imports pandas and plotly). Needs /usr/bin/chromium and
Playwright (shared/TESTING.md). The browser runs on the same cores as the server: noisy. Prints figures; not a
test.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from playwright.sync_api import sync_playwright  # noqa: E402

from tests.support.server import CHROMIUM, CHROMIUM_ARGS, streamlit_server  # noqa: E402

ONE_CHART = """
import plotly.graph_objects as go
import streamlit as st
st.plotly_chart(go.Figure(go.Bar(x=["a", "b", "c"], y=[1, 3, 2])))
"""


def first_chart_s(browser, url: str) -> float:
    ctx = browser.new_context()
    page = ctx.new_page()
    t0 = time.perf_counter()
    page.goto(url)
    page.locator(".js-plotly-plot").first.wait_for(state="visible", timeout=60_000)
    elapsed = time.perf_counter() - t0
    ctx.close()
    return elapsed


def measure(browser, url: str, rounds: int) -> list[float]:
    first_chart_s(browser, url)  # warm the server process
    return [first_chart_s(browser, url) for _ in range(rounds)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        with streamlit_server() as server:
            ours = measure(browser, server.url, args.rounds)
        with tempfile.TemporaryDirectory() as tmp:
            app = Path(tmp) / "one_chart.py"
            app.write_text(ONE_CHART, encoding="utf-8")
            with streamlit_server(args=(), script=str(app)) as server:
                ref = measure(browser, server.url, args.rounds)
        browser.close()
    print(f"first chart visible after goto, median of {args.rounds} fresh contexts (goal <= 3 s):")
    print(f"  rlplan Estimate page: {statistics.median(ours):.2f} s (min {min(ours):.2f}, max {max(ours):.2f})")
    print(f"  one-chart Streamlit page: {statistics.median(ref):.2f} s (min {min(ref):.2f}, max {max(ref):.2f})")


if __name__ == "__main__":
    main()
