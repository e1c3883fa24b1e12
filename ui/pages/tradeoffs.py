"""Trade-offs: how each optimization moves memory and step time for the current scenario."""

from __future__ import annotations

import dataclasses
from typing import Any

import pandas as pd
import streamlit as st

from calculator.scenario import Scenario
from ui import inputs, keys, render, state
from ui.fields import encode_value
from ui.i18n import tr


def _row(obj: Any) -> dict[str, Any]:
    """A result row (pydantic model, dataclass or mapping) as a flat dict for a table."""
    if hasattr(obj, "model_dump"):
        data = obj.model_dump(mode="json")
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        data = dataclasses.asdict(obj)
    elif isinstance(obj, dict):
        data = dict(obj)
    else:
        data = {"value": str(obj)}
    return {
        k: (", ".join(f"{a}={encode_value(b)}" for a, b in v.items()) if isinstance(v, dict) else v)
        for k, v in data.items()
    }


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


def technique_row(obj: Any) -> dict[str, Any]:
    """A TechniqueRow with the deciding numbers first (memory saved, time added), translated headers."""
    data = _row(obj)
    L = state.lang()
    out = {tr(L, label): data.pop(name) for name, label in TECHNIQUE_COLUMNS if name in data}
    for k in ("peak_gib_before", "peak_gib_after", "step_s_before", "step_s_after", "phase_saved_gib", "applicable"):
        data.pop(k, None)
    for k, v in out.items():
        if isinstance(v, float):
            out[k] = round(v, 2)
    return {**out, **data}


@st.cache_data(show_spinner=False, max_entries=32)
def sweep(s: Scenario) -> tuple[list[Any], list[Any], list[Any]]:
    """The trade-off sweep of one scenario (a large sweep: cached)."""
    tradeoff_sweep, pareto_front, technique_table = render.optional(
        "calculator.tradeoff", "tradeoff_sweep", "pareto_front", "technique_table"
    )
    points = list(tradeoff_sweep(s))
    return points, list(pareto_front(points)), list(technique_table(s))


L = state.lang()
built = state.build_scenario()
inputs.render_sidebar(built)
state.sync_url(built)

st.markdown(f"#### {tr(L, 'to.title')}")
st.caption(tr(L, "to.caption"))
render.url_problems()
if built.scenario is None:
    render.problems(built)
    st.stop()

calc = render.optional("calculator.tradeoff", "tradeoff_sweep", "pareto_front", "technique_table")
fig_mod = render.optional("ui.figures_time", "tradeoff_figure")
if calc is None:
    st.info(tr(L, "to.unavailable", why="calculator.tradeoff"), icon=":material/info:")
    st.stop()

try:
    with st.spinner("…"):
        points, front, techniques = sweep(built.scenario)
except Exception as exc:  # a module under construction must not break the page
    st.error(tr(L, "to.failed", why=f"{type(exc).__name__}: {exc}"), icon=":material/error:")
    st.stop()

if fig_mod is None:
    st.info(tr(L, "to.unavailable", why="ui.figures_time.tradeoff_figure"), icon=":material/info:")
else:
    fig = render.call_figure(fig_mod[0], points, lang=L)
    if fig is not None:
        render.chart(fig, keys.TO_CHART, "rlplan-tradeoffs")
        c_png, _ = st.columns([1, 5])
        with c_png:
            render.png_button(fig, keys.TO_DL_PNG, "rlplan-tradeoffs")

st.markdown(f"**{tr(L, 'to.techniques')}**")
st.dataframe(pd.DataFrame([technique_row(t) for t in techniques]), hide_index=True, width="stretch")

st.markdown(f"**{tr(L, 'to.pareto')}**")
rows = [
    {
        tr(L, "to.label"): getattr(p, "label", ""),
        tr(L, "to.peak"): round(getattr(p, "peak_gib_per_gpu", getattr(p, "peak_gib", 0.0)), 2),
        tr(L, "to.step"): round(getattr(p, "step_s", 0.0), 1),
        tr(L, "to.fits"): tr(L, "common.yes") if getattr(p, "fits", False) else tr(L, "common.no"),
        tr(L, "to.settings"): ", ".join(
            f"{k}={encode_value(v)}" for k, v in (getattr(p, "settings", {}) or {}).items()
        ),
    }
    for p in front
]
st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
