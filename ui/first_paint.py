"""The Estimate page's first visit in two runs: the headline and the memory chart, then the rest (inputs
included) once the browser has drawn the chart (issue #18: first chart <= 3 s in chromium).

Why. The browser builds the whole page on one thread: every element that reaches it before the chart is drawn
(breakdown table, formula blocks, rollout budget, warnings, downloads, two more charts, the sidebar's inputs) is
rendered, and its JavaScript bundle evaluated, before or between plotly's own work. Our three charts on a page of
their own took about as long as a one-chart page; the other ~100 elements made the difference. Measured with
``benchmarks/bench_browser.py`` (3 fresh contexts, this 2-core machine): first chart 5.08 -> 2.88 s at load ~2.3,
7.26 -> 3.24 s at load ~4, the complete page no later (5.09 -> 4.41 s); the inputs in the first run would cost
~10 % of that gain (interleaved, under load).

How. On a session's first run of the page, :func:`first_screen_only` is True: the page renders its headline and
the memory chart (not the sidebar's inputs) and calls :func:`finish_first_screen`, which mounts a tiny script (a
``st.components.v2`` component: no iframe, nothing loaded from elsewhere) and stops the run. The script waits until
the page's first plotly chart has drawn its SVG, lets the browser paint that frame, and sends a trigger; the
trigger reruns the page, which now renders everything. The first run clears the flag, so every later run (the
trigger's, or a widget change's) renders the whole page; a first run without a chart (no scenario, the calculator
failing) shows the inputs at once. If the chart never draws, the script sends the trigger after ``FALLBACK_S``.

Only a browser can say when the chart is drawn, so only a browser's session is split: the websocket request of
every browser engine carries a ``User-Agent`` starting ``Mozilla/``. Clients that run no JavaScript (AppTest,
the scripted websocket clients of the load and hostile-client tests) get the whole page in one run, as before.
"""

from __future__ import annotations

import functools
from typing import Any

import streamlit as st

from ui import keys

FALLBACK_S = 10  # the trigger is sent after this long even if no chart was drawn (a chart that failed)
TRIGGER = "drawn"  # the component's trigger name; its callback argument is on_<TRIGGER>_change

# Waits for the first plotly chart of the page to have drawn its SVG, then for the next frame to be painted
# (requestAnimationFrame runs before the paint, the timeout after it), and sends one trigger (at once in a tab
# in the background, which paints no frame).
CHART_DRAWN_JS = f"""
export default function (component) {{
  const {{ setTriggerValue }} = component;
  let sent = false;
  const send = () => {{ if (!sent) {{ sent = true; setTriggerValue("{TRIGGER}", true); }} }};
  // a tab in the background paints nothing (and runs no animation frame): nothing to wait for there
  const afterPaint = () => (document.hidden ? send() : requestAnimationFrame(() => setTimeout(send, 0)));
  const drawn = () => document.querySelector(".js-plotly-plot .main-svg") !== null;
  if (drawn()) {{ afterPaint(); return; }}
  const observer = new MutationObserver(() => {{ if (drawn()) {{ observer.disconnect(); afterPaint(); }} }});
  observer.observe(document.body, {{ childList: true, subtree: true }});
  setTimeout(() => {{ observer.disconnect(); send(); }}, {FALLBACK_S * 1000});
}}
"""


@functools.cache
def _chart_drawn_component() -> Any:
    """Registered once per process (a second registration under the same name only logs a warning)."""
    return st.components.v2.component("rlplan_chart_drawn", js=CHART_DRAWN_JS)


def is_browser_agent(agent: str | None) -> bool:
    """A browser's User-Agent: Chromium, Firefox, Safari and Edge all start theirs with ``Mozilla/``."""
    return bool(agent) and agent.startswith("Mozilla/")  # type: ignore[union-attr]


def _is_browser() -> bool:
    """The session's websocket request came from a browser."""
    try:
        return is_browser_agent(st.context.headers.get("User-Agent"))
    except Exception:  # no request behind this run (AppTest has no headers): not a browser
        return False


def first_screen_only() -> bool:
    """True once per session: on the first run of the page in a browser. Clears itself, so the next run (the
    browser's trigger, or any widget change) renders the whole page."""
    if st.session_state.get(keys.FIRST_SCREEN_DONE):
        return False
    st.session_state[keys.FIRST_SCREEN_DONE] = True
    return _is_browser()


def finish_first_screen() -> None:
    """Mount the chart-drawn trigger and end this run (the rest of the page comes with the next run)."""
    _chart_drawn_component()(key=keys.CHART_DRAWN, height=0, **{f"on_{TRIGGER}_change": _noop})
    st.stop()


def _noop() -> None:
    """The trigger's callback: the rerun it causes is all that is needed."""
