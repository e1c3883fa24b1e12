"""Regenerate the README's dashboard picture (docs/screenshot.png): the default view in headless chromium.

    python3 docs/screenshot.py                 # overwrites docs/screenshot.png (review and commit it)
    python3 docs/screenshot.py --out shot.png  # anywhere else

Needs Debian's chromium (``apt-get install -y chromium``) and Playwright (requirements-dev.txt). The tests
run this script with ``--out`` in a temporary directory; nothing but this script writes docs/screenshot.png.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from playwright.sync_api import expect, sync_playwright  # noqa: E402

from calculator import estimate, load_scenario  # noqa: E402
from tests.support.server import CHROMIUM, CHROMIUM_ARGS, streamlit_server  # noqa: E402
from ui.i18n import tr  # noqa: E402
from ui.state import DEFAULT_PRESET  # noqa: E402


def take_screenshot(out: Path) -> None:
    """Start the app on a free loopback port, wait until the charts, their totals, the headline and the inputs
    are drawn, and save a 1600 x 1250 screenshot of the default view to ``out``."""
    peak = f"{estimate(load_scenario(DEFAULT_PRESET)).peak.gib_per_gpu:.2f} GiB"
    with streamlit_server() as server, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1250})
            page.goto(server.url)
            expect(page.locator(".js-plotly-plot").first).to_be_visible(timeout=30_000)
            metric = page.locator('[data-testid="stMetric"]').filter(has_text=tr("en", "metric.peak"))
            expect(metric.locator('[data-testid="stMetricValue"]')).to_have_text(peak, timeout=30_000)
            expect(page.locator(".js-plotly-plot g.annotation text").first).to_be_visible(timeout=30_000)
            # a first visit draws the memory chart first, then the rest (ui/first_paint.py): wait for the whole page
            expect(page.locator(".js-plotly-plot")).to_have_count(3, timeout=30_000)
            expect(page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]').first).to_be_visible(
                timeout=30_000
            )
            out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(out))
        finally:
            browser.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshot.png", help="where to write the PNG")
    args = parser.parse_args(argv)
    take_screenshot(args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
