"""Planner: for each GPU type, the fewest GPUs that fit and the recommended configuration."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import streamlit as st

from calculator import Scenario, plan
from ui import cache, inputs, keys, render, state
from ui.fields import encode_value
from ui.i18n import tr
from ui.options import gpu_ids, gpu_label
from ui.placement import split_column
from ui.text import md


def run_plan(s: Scenario, gpus: tuple[str, ...], max_gpus: int, margin: float) -> dict[str, Any]:
    """The plan as JSON data (a large sweep over GPU types and counts): computed once per distinct request in this
    server process and shared by every session (``ui/cache.py``: views only read it). A split placement in the
    sidebar also searches the split of each row's GPUs (``row["split"]``)."""

    def make() -> dict[str, Any]:
        return plan(s, gpus=list(gpus) or None, max_gpus=max_gpus, margin=margin).model_dump(mode="json")

    return cache.PLANS.get_or_make(("plan", cache.scenario_key(s), gpus, max_gpus, margin), make)


def _settings(d: Any) -> str:
    return ", ".join(f"{k}={encode_value(v)}" for k, v in (d or {}).items()) if isinstance(d, dict) else str(d or "")


L = state.lang()
built = state.build_scenario()
inputs.render_sidebar(built)
state.sync_url(built)

st.markdown(f"#### {tr(L, 'plan.title')}")
st.caption(tr(L, "plan.caption"))
render.notices()
if built.scenario is None:
    render.problems(built)
    st.stop()

c1, c2, c3 = st.columns([4, 1, 1])
with c1:
    gpus = st.multiselect(
        tr(L, "plan.gpus"),
        gpu_ids(),
        format_func=gpu_label,
        key=keys.PLAN_GPUS,
        help=tr(L, "plan.gpus_help"),
        placeholder=tr(L, "plan.all_gpus"),
    )
with c2:
    max_gpus = st.number_input(
        tr(L, "plan.max_gpus"), min_value=1, max_value=65536, value=1024, step=8, key=keys.PLAN_MAX_GPUS
    )
with c3:
    margin = st.number_input(
        tr(L, "plan.margin"),
        min_value=0.0,
        max_value=0.9,
        value=0.10,
        step=0.05,
        format="%.2f",
        key=keys.PLAN_MARGIN,
        help=tr(L, "plan.margin_help"),
    )

try:
    with st.spinner("…"):
        data = run_plan(built.scenario, tuple(gpus), int(max_gpus), float(margin))
except Exception as exc:  # the calculator raised on a valid scenario: say so, never a traceback
    st.error(md(tr(L, "plan.failed", why=f"{type(exc).__name__}: {exc}")), icon=":material/error:")
    st.stop()


def _num(value: Any, fmt: str) -> str:
    """A number cell as text; "—" where the row has no configuration (never Python's None)."""
    return "—" if value is None else fmt.format(value)


def _layout(rec: dict[str, Any]) -> dict[str, str]:
    """The Megatron layout column of a Megatron plan (``recommended.megatron_layout``); no column for FSDP."""
    if built.scenario is None or built.scenario.actor.strategy != "megatron":
        return {}
    m = rec.get("megatron_layout") or {}
    names = (("TP", "tensor_model_parallel_size"), ("PP", "pipeline_model_parallel_size"))
    names += (("EP", "expert_model_parallel_size"),)
    text = " · ".join(f"{k} {m[f]}" for k, f in names if f in m) or "—"
    return {tr(L, "plan.layout"): text}


rows = []
for row in data.get("rows", []):
    rec = row.get("recommended") or {}
    note = row.get("note", "")
    rows.append(
        {
            tr(L, "plan.gpu"): row.get("gpu_name") or gpu_label(row.get("gpu", "")),
            tr(L, "plan.min_gpus"): str(row["min_gpus"])
            if row.get("min_gpus") is not None
            else tr(L, "plan.no_fit", why=note or tr(L, "plan.none")),
            tr(L, "plan.rec_gpus"): _num(rec.get("num_gpus"), "{:d}"),
            tr(L, "plan.nodes"): _num(rec.get("num_nodes"), "{:d}"),
            tr(L, "plan.peak"): _num(rec.get("peak_gib_per_gpu"), "{:.1f}"),
            tr(L, "plan.worst"): _num(rec.get("worst_case_gib_per_gpu"), "{:.1f}"),
            tr(L, "plan.step"): _num(rec.get("step_s"), "{:,.1f}"),
            tr(L, "plan.cost"): _num(rec.get("cost_per_step"), "${:.3f}"),
            **_layout(rec),
            tr(L, "plan.settings"): _settings(rec.get("settings")) if rec else "—",
            tr(L, "plan.min_settings"): _settings(row.get("min_settings")) if row.get("min_gpus") is not None else "—",
            tr(L, "plan.note"): note,
            **split_column(data, row, L),
        }
    )
st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", height=min(36 * (len(rows) + 1) + 4, 900))
with_overrides = [r for r in data.get("rows", []) if (r.get("recommended") or {}).get("verl_overrides")]
if with_overrides:
    with st.expander(tr(L, "plan.overrides")):
        for r in with_overrides:
            st.markdown(f"**{md(r.get('gpu_name') or r.get('gpu'))}**")
            st.code(" \\\n".join(r["recommended"]["verl_overrides"]), language="bash")
            if r.get("split"):
                st.code(" \\\n".join(r["split"]["verl_overrides"]), language="bash")
if built.scenario.actor.strategy == "megatron":
    st.caption(tr(L, "plan.layouts_searched"))
if "elapsed_s" in data:
    st.caption(tr(L, "plan.elapsed", s=float(data["elapsed_s"])))
st.download_button(
    tr(L, "plan.dl_json"),
    data=lambda: json.dumps(data, indent=2, ensure_ascii=False),  # made on click (deferred), not every rerun
    file_name="rlplan-plan.json",
    mime="application/json",
    key=keys.PLAN_DL_JSON,
    on_click="ignore",
    icon=":material/data_object:",
)
