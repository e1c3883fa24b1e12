"""Trade-offs: how each optimization moves memory and step time for the current scenario."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from calculator import Scenario, TechniqueRow, TradeoffPoint, pareto_front, technique_table, tradeoff_sweep
from ui import cache, catalogue, inputs, keys, render, state, summary
from ui.fields import encode_value
from ui.figures_time import tradeoff_figure, variant_text
from ui.i18n import tr
from ui.text import md

TECHNIQUE_COLUMNS = (
    ("technique", "to.technique"),
    ("peak_saved_gib", "to.saved"),
    ("time_added_s", "to.time_added"),
    ("time_added_pct", "to.time_added_pct"),
    ("fits_after", "to.fits_after"),
    ("enabled_now", "to.enabled_now"),
    ("note", "to.note"),
    ("settings", "to.settings"),
)
HIDDEN_COLUMNS = ("peak_gib_before", "peak_gib_after", "step_s_before", "step_s_after", "phase_saved_gib", "applicable")


def _settings_text(settings: dict[str, Any]) -> str:
    return ", ".join(f"{k}={encode_value(v)}" for k, v in settings.items())


def technique_row(row: TechniqueRow) -> dict[str, Any]:
    """A TechniqueRow with the deciding numbers first (memory saved, time added), translated headers."""
    data = row.model_dump(mode="json")
    data["settings"] = _settings_text(data["settings"])
    L = state.lang()
    out = {tr(L, label): data.pop(name) for name, label in TECHNIQUE_COLUMNS}
    for k in HIDDEN_COLUMNS:
        data.pop(k, None)
    for k, v in out.items():
        if isinstance(v, float):
            out[k] = round(v, 2)
        elif v is None:  # no time delta against a step that cannot run
            out[k] = "—"
    return {**out, **data}


def _sweep(s: Scenario) -> tuple[list[TradeoffPoint], list[TradeoffPoint], list[TechniqueRow]]:
    points = tradeoff_sweep(s)
    return points, pareto_front(points), technique_table(s)


def sweep(s: Scenario, key: str) -> tuple[list[TradeoffPoint], list[TradeoffPoint], list[TechniqueRow]]:
    """The trade-off sweep of one scenario (``key``: its ``cache.scenario_key``): computed once per distinct scenario
    in this server process and shared by every session (``ui/cache.py``; views only read it)."""
    return cache.SWEEPS.get_or_make(("sweep", key), lambda: _sweep(s))


L = state.lang()
built = state.build_scenario()
inputs.render_sidebar(built)
state.sync_url(built)

st.markdown(f"#### {tr(L, 'to.title')}")
st.caption(tr(L, "to.caption"))
render.notices()
if built.scenario is None:
    render.problems(built)
    st.stop()

try:
    with st.spinner("…"):
        key = cache.scenario_key(built.scenario)
        points, front, techniques = sweep(built.scenario, key)
except Exception as exc:  # the calculator raised on a valid scenario: say so, never a traceback
    st.error(md(tr(L, "to.failed", why=f"{type(exc).__name__}: {exc}")), icon=":material/error:")
    st.stop()

fig = cache.SWEEPS.get_or_make(("chart", key, L), lambda: tradeoff_figure(points, lang=L))
render.chart(fig, keys.TO_CHART, "rlplan-tradeoffs")
c_png, _ = st.columns([1, 5])
with c_png:
    header = summary.title(built.scenario, cache.cached_estimate(built.scenario, key), catalogue.base_scenario())
    render.png_button(fig, keys.TO_DL_PNG, "rlplan-tradeoffs", title=header, note=tr(L, "png.tradeoffs"))

st.markdown(f"**{tr(L, 'to.techniques')}**")
# a static table: every note and setting in full (a data grid cuts long cells)
st.table(pd.DataFrame([technique_row(t) for t in techniques]).set_index(tr(L, "to.technique")))
st.caption(tr(L, "to.signs"))

st.markdown(f"**{tr(L, 'to.pareto')}**")
rows = [
    {
        tr(L, "to.label"): variant_text(p.settings, L),
        tr(L, "to.peak"): round(p.peak_gib_per_gpu, 2),
        tr(L, "to.step"): round(p.step_s, 1),
        tr(L, "to.fits"): tr(L, "common.yes") if p.fits else tr(L, "common.no"),
        tr(L, "to.settings"): _settings_text(p.settings),
    }
    for p in front
]
st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
