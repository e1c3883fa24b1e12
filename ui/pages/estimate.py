"""Estimate: peak memory per GPU, phase by phase, for the scenario in the sidebar."""

from __future__ import annotations

import json
from urllib.parse import urlencode

import streamlit as st

from calculator import Report, placement_hint
from ui import cache, catalogue, figures, first_paint, inputs, keys, render, state, summary
from ui.figures_time import step_time_figure, step_time_page_figure
from ui.i18n import tr, tr_or
from ui.placement import render_placement
from ui.text import formula_list, md, md_lines

L = state.lang()
built = state.build_scenario()
# a browser's first visit: headline and memory chart first, the inputs and the rest once it is drawn; a first
# run without a scenario shows the inputs at once, and no later run is split
first_screen = first_paint.first_screen_only() and built.scenario is not None
if not first_screen:
    inputs.render_sidebar(built)
params = state.sync_url(built)  # the share link at the bottom too

render.notices()
if built.scenario is None:
    st.markdown(f"#### {tr(L, 'est.title')}")
    render.problems(built)
    st.stop()

scenario = built.scenario
key = cache.scenario_key(scenario)
try:
    report: Report = cache.cached_estimate(scenario, key)  # shared by every session with the same scenario
except Exception as exc:  # the calculator raised on a valid scenario: show it, never a traceback
    if first_screen:  # no chart to wait for: the inputs now
        inputs.render_sidebar(built)
    st.error(md(tr(L, "err.calculator", what=f"{type(exc).__name__}: {exc}")), icon=":material/error:")
    st.stop()

algo = st.session_state.get(keys.ALGO, scenario.algorithm.adv_estimator)
st.markdown(f"#### {tr(L, 'est.title')}")
st.caption(md(render.scenario_caption(report, algo)))
render.headline(report)
render.advice(scenario, report)
render_placement(scenario, report, L)  # split placements only (ui/placement.py)


# ----------------------------------------------------------------------------- memory (left) | time and rollout (right)
has_step = report.time is not None and report.time.step_s is not None
# the exported figure keeps its title with the total; the page shows a copy laid out for the column
fig_time = cache.cached_figure("step_time", key, lambda: step_time_figure(report, lang=L), L) if has_step else None
fig_time_page = (
    cache.cached_figure("step_time_page", key, lambda: step_time_page_figure(fig_time), L) if has_step else None
)
left, right = st.columns([3, 2], gap="large")

with left:
    # the heading and the Mean/Max control share a row that wraps when the column is narrow (never clipped)
    with st.container(horizontal=True, vertical_alignment="center", gap="medium"):
        st.markdown(f"**{tr(L, 'est.memory')}**", width="content")
        worst = (
            st.segmented_control(
                tr(L, "est.case"),
                ["expected", "worst"],
                default="expected",
                format_func=lambda v: tr(L, f"est.case.{v}"),
                key=keys.VIEW_CASE,
                help=tr(L, "est.case_help"),
                label_visibility="collapsed",
            )
            == "worst"
        )
    fig_components = cache.cached_figure(
        "memory", key, lambda: figures.memory_figure(report, lang=L, worst=worst), L, worst
    )
    fig_roles = cache.cached_figure("roles", key, lambda: figures.role_figure(report, lang=L, worst=worst), L, worst)
    tab_c, tab_r = st.tabs([tr(L, "est.by_component"), tr(L, "est.by_role")])
    with tab_c:
        render.chart(fig_components, keys.CHART_MEMORY, "rlplan-memory-by-component")
    if first_screen:  # the rest of the page comes with the next run
        first_paint.finish_first_screen()
    with tab_r:
        render.chart(fig_roles, keys.CHART_ROLES, "rlplan-memory-by-role")

    # breakdown of one phase
    st.markdown(f"**{tr(L, 'est.breakdown')}**")
    phases = list(report.worst_case_phases if worst and report.worst_case_phases else report.phases)
    names = [p.name for p in phases]
    peak_name = report.peak.worst_case_phase if worst else report.peak.phase
    if st.session_state.get(keys.BREAKDOWN_PHASE) not in [None, "__peak__", *names]:
        del st.session_state[keys.BREAKDOWN_PHASE]  # a phase of the previous scenario: back to the peak
    choice = st.pills(
        tr(L, "est.phase"),
        ["__peak__", *names],
        default="__peak__",
        format_func=lambda v: tr(L, "est.peak_phase_option", phase=peak_name) if v == "__peak__" else v,
        key=keys.BREAKDOWN_PHASE,
        label_visibility="collapsed",
        wrap=True,
    )
    phase = next(p for p in phases if p.name == (choice if choice in names else peak_name))
    rows = summary.breakdown_rows(phase, L)
    formula_col = tr(L, "table.formula")
    st.dataframe(
        cache.cached_table(
            "breakdown",
            key,
            lambda: [{k: v for k, v in r.items() if k != formula_col} for r in rows],
            L,
            worst,
            phase.name,
        ),
        hide_index=True,
        width="stretch",
        column_config={
            tr(L, "table.gib"): st.column_config.NumberColumn(format="%.2f"),
            tr(L, "table.share"): st.column_config.ProgressColumn(format="%.1f%%", min_value=0, max_value=100),
        },
    )
    st.caption(tr(L, "est.phase_total", phase=phase.name, total=phase.total_gib, alloc=phase.trainer_allocated_gib))
    # every component's formula in one element (an element costs the server ~0.25 ms a rerun; issue #18)
    st.markdown(f"**{tr(L, 'est.how')}**")
    with st.expander(tr(L, "est.how_components", n=len(rows), phase=phase.name)):
        comp_col, gib_col = tr(L, "table.component"), tr(L, "table.gib")
        items = [
            (f"{r[comp_col]} — {r[gib_col]:.2f} GiB", r[formula_col], tr_or(L, f"comp.{r[comp_col]}", "")) for r in rows
        ]
        st.markdown(formula_list(items))

with right:
    if report.time is not None and fig_time is None:  # the step cannot run: no time (calculator: time.reason)
        st.markdown(f"**{tr(L, 'est.step_time_none')}**")
    if fig_time is not None:
        st.markdown(
            f"**{tr(L, 'est.step_time')}: {report.time.step_s:,.1f} s** · {report.time.tokens_per_s:,.0f} tok/s"
        )
        render.chart(fig_time_page, keys.CHART_TIME, "rlplan-step-time")
        hint = placement_hint(report)  # would separate rollout and trainer pools help? (calculator.planning)
        if hint:
            st.caption(md(hint))
    ro = report.rollout
    with st.container(border=True):
        st.markdown(f"**{tr(L, 'est.rollout_title', engine=ro.engine, replicas=ro.num_replicas)}**")
        budget_rows = [
            (tr(L, "est.ro.weights"), ro.weights_gib_per_gpu),
            (tr(L, "est.ro.activations"), ro.activation_gib_per_gpu),
            (tr(L, "est.ro.non_torch"), ro.non_torch_gib_per_gpu),
            (tr(L, "est.ro.graphs"), ro.cuda_graphs_gib_per_gpu),
            (tr(L, "est.ro.kv"), ro.kv_cache_gib_per_gpu),
        ]
        st.dataframe(
            cache.cached_table(
                "rollout", key, lambda: [{tr(L, "est.ro.item"): n, "GiB / GPU": v} for n, v in budget_rows], L
            ),
            hide_index=True,
            width="stretch",
            column_config={"GiB / GPU": st.column_config.NumberColumn(format="%.2f")},
        )
        st.caption(
            tr(
                L,
                "est.ro.budget",
                budget=ro.budget_gib_per_gpu,
                util=scenario.rollout.gpu_memory_utilization,
                usable=report.hardware.usable_memory_gib,
            )
        )
        st.markdown(
            tr(
                L,
                "est.ro.capacity",
                tokens=ro.kv_cache_tokens_per_replica,
                conc=ro.max_concurrent_sequences_per_replica,
                conc_max=ro.max_concurrent_sequences_per_replica_at_max_len,
                demand=ro.sequences_per_replica,
            )
        )
        if ro.engine == "vllm":
            ok = ro.startup_free_gib >= ro.startup_required_gib
            st.markdown(
                (":material/check_circle: " if ok else ":material/block: ")
                + tr(L, "est.ro.startup", free=ro.startup_free_gib, required=ro.startup_required_gib)
            )
        # vLLM's start check is per engine (one DP rank's cache); equal to the replica's without rollout DP
        kv_engine = ro.kv_cache_tokens_per_engine or ro.kv_cache_tokens_per_replica
        kv_ok = 0 < kv_engine >= ro.max_model_len
        st.markdown(
            (":material/check_circle: " if kv_ok else ":material/block: ")
            + tr(L, "est.ro.kv_check", tokens=kv_engine, mml=ro.max_model_len)
        )
        if ro.start_reasons:  # why the engine cannot start: the same lines as the headline (peak.reasons)
            st.error(md_lines(ro.start_reasons, limit=1000), icon=":material/block:")
        if ro.formulas:
            with st.expander(tr(L, "est.how")):
                st.markdown(formula_list([(name, text, "") for name, text in ro.formulas.items()]))
    if report.host is not None:  # host RAM per node (calculator.memory.host): a fit criterion too
        h = report.host
        with st.container(border=True):
            mark = ":material/check_circle: " if h.fits else ":material/block: "
            title = tr(
                L,
                "est.host_title",
                total=h.total_gib_per_node,
                usable=h.usable_ram_gib_per_node,
                ram=h.ram_gib_per_node,
            )
            st.markdown(f"{mark}**{title}**")
            st.dataframe(
                cache.cached_table(
                    "host",
                    key,
                    lambda: [{tr(L, "est.ro.item"): n, "GiB / node": v} for n, v in h.components.items()],
                    L,
                ),
                hide_index=True,
                width="stretch",
                column_config={"GiB / node": st.column_config.NumberColumn(format="%.1f")},
            )
            with st.expander(tr(L, "est.how")):
                st.markdown(md_lines([f"{k}: {v}" for k, v in h.formulas.items()], limit=1000))
    render.warnings(report, scenario)

# ----------------------------------------------------------------------------- share and export
st.markdown(f"#### {tr(L, 'est.export')}")
base = catalogue.base_scenario()
slug = (report.model.name + "-" + report.hardware.gpu).replace(" ", "_").replace("/", "_")[:60]
title = f"{summary.title(scenario, report, base)} · {algo}"
case_note = tr(L, "png.case.worst" if worst else "png.case.expected")
# one horizontal container, not a column per button (7 elements to the browser instead of 13; issue #18)
with st.container(horizontal=True, gap="small"):
    st.download_button(
        tr(L, "dl.yaml"),
        data=lambda: summary.scenario_yaml(scenario),  # built on click (deferred), not every rerun
        file_name=f"scenario-{slug}.yaml",
        mime="application/x-yaml",
        key=keys.DL_YAML,
        on_click="ignore",
        icon=":material/description:",
        width="stretch",
    )
    st.download_button(
        tr(L, "dl.json"),
        data=lambda: json.dumps(report.model_dump(mode="json"), indent=2, ensure_ascii=False),
        file_name=f"report-{slug}.json",
        mime="application/json",
        key=keys.DL_JSON,
        on_click="ignore",
        icon=":material/data_object:",
        width="stretch",
    )
    st.download_button(
        tr(L, "dl.md"),
        data=lambda: summary.markdown_summary(scenario, report, L, algorithm=algo, base=base),
        file_name=f"summary-{slug}.md",
        mime="text/markdown",
        key=keys.DL_MD,
        on_click="ignore",
        icon=":material/article:",
        width="stretch",
    )
    render.png_button(
        fig_components,
        keys.DL_PNG_COMPONENTS,
        f"memory-components-{slug}",
        tr(L, "dl.png_components"),
        title,
        case_note,
    )
    render.png_button(fig_roles, keys.DL_PNG_ROLES, f"memory-roles-{slug}", tr(L, "dl.png_roles"), title, case_note)
    if fig_time is not None:
        render.png_button(fig_time, keys.DL_PNG_TIME, f"step-time-{slug}", tr(L, "dl.png_time"), title)
st.caption(tr(L, "est.share", n=len([k for k in params if "." in k]), preset=params.get("preset", "")))
st.code("?" + urlencode(params), language=None, wrap_lines=True)
