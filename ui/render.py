"""Streamlit pieces shared by the pages: the headline, notices, problems, charts with PNG download, advice.

Every message that can echo user input is escaped with ``ui.text.md`` before a Markdown element.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
import streamlit as st

from calculator import Advice, Report, Scenario, Suggestion, advise, rejections
from ui import cache, export, field_values, fields, keys, state
from ui.i18n import tr
from ui.i18n_messages import check_text, lever_title
from ui.i18n_warnings import warning_text
from ui.text import md, md_lines

VERL_WARNING_PREFIX = "verl: "  # estimate() appends check_config's messages to report.warnings this way


def problems(built: state.Built) -> None:
    L = state.lang()
    st.error("**" + tr(L, "err.invalid_inputs") + "**\n\n" + md_lines(built.problems), icon=":material/block:")


def notices() -> None:
    """What was ignored before any result: link parameters that could not be used, preset files that could
    not be read (the app runs on the presets that did load)."""
    L = state.lang()
    url = st.session_state.get(keys.URL_PROBLEMS) or []
    if url:
        st.warning("**" + tr(L, "url.ignored") + "**\n\n" + md_lines(url), icon=":material/link_off:")
    files = state.preset_file_problems()
    if files:
        st.warning(
            "**" + tr(L, "err.preset_files", n=len(files)) + "**\n\n" + md_lines(list(files)),
            icon=":material/folder_off:",
        )


def _fmt_gib(x: float) -> str:
    return f"{x:.2f} GiB"


def headline(report: Report) -> None:
    """The answer at a glance: does it fit, with how much headroom, where is the peak, what about max lengths."""
    _verdict(report)
    _metrics(report)


def _verdict(report: Report) -> None:
    """Fits / fits but not at max lengths / does not fit, with every reason from ``peak.reasons`` (one source
    for every view: calculator/report/verdict.py) and its fix."""
    L = state.lang()
    r = report
    p = r.peak
    usable = r.hardware.usable_memory_gib
    if p.fits and p.worst_case_fits:
        st.success(
            tr(L, "head.fits", peak=p.gib_per_gpu, usable=usable, phase=p.phase, headroom=p.headroom_gib),
            icon=":material/check_circle:",
        )
    elif p.fits:
        head = tr(
            L,
            "head.fits_not_worst",
            peak=p.gib_per_gpu,
            usable=usable,
            phase=p.phase,
            worst=p.worst_case_gib_per_gpu,
            worst_phase=p.worst_case_phase,
        )
        st.warning(head + "\n\n" + md_lines(p.worst_case_reasons, limit=1000), icon=":material/warning:")
    else:
        st.error(
            "**" + tr(L, "head.not_fit", n=len(p.reasons)) + "**\n\n" + md_lines(p.reasons, limit=1000),
            icon=":material/error:",
        )


def peak_delta(report: Report) -> str:
    """The peak metric's delta: the memory headroom, saying 'does not fit' when the verdict fails anyway."""
    p = report.peak
    if p.fits or p.headroom_gib < 0:
        return f"{p.headroom_gib:+.2f} GiB"
    return tr(state.lang(), "metric.memory_headroom", headroom=p.headroom_gib)


def column_verdict(report: Report) -> None:
    """A short verdict for a narrow column (Compare): fits, or the first reason and how many more."""
    L = state.lang()
    reasons = report.peak.reasons
    if not reasons:
        st.caption(":green[:material/check_circle:] " + tr(L, "cmp.fits"))
        return
    more = " " + tr(L, "cmp.more_reasons", n=len(reasons) - 1) if len(reasons) > 1 else ""
    st.caption(":red[:material/error:] " + md(tr(L, "cmp.not_fit", reason=reasons[0]) + more, limit=600))


def _metrics(report: Report) -> None:
    """Peak, usable memory, peak phase, worst case, rollout concurrency and (with a time model) step time."""
    L = state.lang()
    r = report
    p = r.peak
    usable = r.hardware.usable_memory_gib
    weights = [1.0, 1.0, 1.3, 1.25, 1.1, 1.0]
    cols = st.columns(weights if r.time is not None else weights[:5])
    cols[0].metric(
        tr(L, "metric.peak"),
        _fmt_gib(p.gib_per_gpu),
        delta=peak_delta(r),
        delta_color="normal" if p.fits or p.headroom_gib < 0 else "off",
        help=tr(L, "metric.peak_help"),
        border=True,
    )
    cols[1].metric(
        tr(L, "metric.usable"),
        _fmt_gib(usable),
        delta=r.hardware.gpu_name or r.hardware.gpu,
        delta_color="off",
        delta_arrow="off",
        help=tr(L, "metric.usable_help"),
        border=True,
    )
    cols[2].metric(
        tr(L, "metric.peak_phase"),
        p.phase,
        delta=tr(L, "metric.of_phases", n=len(r.phases)),
        delta_color="off",
        delta_arrow="off",
        help=tr(L, "metric.peak_phase_help"),
        border=True,
    )
    cols[3].metric(
        tr(L, "metric.worst"),
        _fmt_gib(p.worst_case_gib_per_gpu),
        delta=f"{usable - p.worst_case_gib_per_gpu:+.2f} GiB · {p.worst_case_phase}",
        delta_color="normal",
        help=tr(L, "metric.worst_help"),
        border=True,
    )
    ro = r.rollout
    cols[4].metric(
        tr(L, "metric.concurrency"),
        f"{ro.max_concurrent_sequences_per_replica:,} / {ro.sequences_per_replica:,}",
        delta=_concurrency_delta(r),
        delta_color="off",
        delta_arrow="off",
        help=tr(L, "metric.concurrency_help"),
        border=True,
    )
    if r.time is not None:
        step = r.time.step_s
        cols[5].metric(
            tr(L, "metric.step_time"),
            "—" if step is None else f"{step:,.1f} s",
            delta=tr(L, "metric.no_start") if step is None else f"{r.time.tokens_per_s:,.0f} tok/s",
            delta_color="off",
            delta_arrow="off",
            help=tr(L, "metric.step_time_help"),
            border=True,
        )


def _concurrency_delta(r: Report) -> str:
    """Waves of generation per step, only when the engine starts (no waves without a KV cache)."""
    L = state.lang()
    ro = r.rollout
    if not ro.starts or ro.max_concurrent_sequences_per_replica <= 0:
        return tr(L, "metric.no_start")
    waves = -(-ro.sequences_per_replica // ro.max_concurrent_sequences_per_replica)
    return tr(L, "metric.waves", waves=waves, replicas=ro.num_replicas)


def chart(fig: go.Figure, key: str, filename: str) -> None:
    """A cached figure (``ui/cache.py``: never changed once made) in the page; its dict is made once, not per rerun."""
    st.plotly_chart(cache.chart_spec(fig), key=key, config=export.toolbar_config(filename), width="stretch")


def png_button(
    fig: go.Figure,
    key: str,
    filename: str,
    label: str | None = None,
    title: str | None = None,
    note: str | None = None,
) -> None:
    """A PNG download rendered server-side by kaleido on click (deferred: no cost until clicked).
    ``title`` (the scenario) and ``note`` (what the chart shows) head a copy of the figure (``export.with_header``)."""
    L = state.lang()
    if not export.png_export_available():
        return

    def render_png() -> bytes:
        return export.figure_png(export.with_header(fig, title, note))

    st.download_button(
        label or tr(L, "dl.png"),
        data=render_png,
        file_name=f"{filename}.png",
        mime="image/png",
        key=key,
        on_click="ignore",
        icon=":material/image:",
        width="stretch",
        help=tr(L, "dl.no_cjk_font") if L == "zh" and not export.cjk_font_installed() else None,
    )


def warnings(report: Report, scenario: Scenario) -> None:
    """The calculator's warnings, then verl 0.9.1's own config checks with their severity.

    ``estimate()`` also appends the checks to ``report.warnings`` as ``"verl: ..."`` lines (for the CLI and
    the JSON report); here they are shown once, from ``report.checks``, where the severity is known.
    """
    L = state.lang()
    own = [w for w in report.warnings if not w.startswith(VERL_WARNING_PREFIX)]
    checks = report.checks
    if not own and not checks:
        return
    with st.container(border=True):
        if own:
            st.markdown(f"**{tr(L, 'head.warnings', n=len(own))}**")
            for w in own:
                st.warning(md(warning_text(w, L), limit=2000), icon=":material/warning:")
        if checks:
            st.markdown(f"**{tr(L, 'head.verl_checks', n=len(checks))}**")
            rejected = rejections(checks)  # a missing micro-batch the estimate assumed is a warning (its value shown)
            for c in checks:
                text = check_text(c.rule, md(c.message, limit=2000), L)
                if c in rejected:
                    st.error(text, icon=":material/error:")
                else:
                    st.warning(text, icon=":material/info:")


def _advice(s: Scenario) -> Advice:
    """The advisor's ranked changes (tens of estimates per scenario), once per scenario in the process-wide LRU
    (``ui.cache``; an ``Advice`` is frozen), shared by every session."""
    return cache.CACHE.get_or_make(("advice", cache.scenario_key(s)), lambda: advise(s))


def apply_changes(changes: dict[str, Any]) -> None:
    """Callback: copy a suggestion's native field values into the input widgets."""
    for path, value in changes.items():
        if path == "model.path":
            st.session_state[keys.MODEL_PATH] = value
        elif fields.field(path) is not None:
            field_values.put(path, fields.coerce(fields.field(path), value))
    st.toast(tr(state.lang(), "adv.applied", n=len(changes)), icon=":material/check_circle:")


def advice(scenario: Scenario, report: Report, limit: int = 6) -> None:
    """What to change when it does not fit (calculator.planning.advisor): every option, those that fit first
    (the advisor's order), the first ``limit`` shown and the rest one toggle away; each one click away."""
    if report.peak.fits and report.peak.worst_case_fits:
        return
    L = state.lang()
    try:
        result = _advice(scenario)
    except Exception as exc:  # the estimate above stays useful: say what failed, never a traceback
        st.caption(md(tr(L, "adv.failed", why=f"{type(exc).__name__}: {exc}")))
        return
    suggestions = list(result.suggestions)
    if not suggestions:
        return
    n_fit = sum(sg.fits for sg in suggestions)
    with st.expander(tr(L, "adv.title", n=len(suggestions), fit=n_fit), expanded=True, icon=":material/build:"):
        st.caption(tr(L, "adv.caption"))
        shown = suggestions[:limit]
        if len(suggestions) > limit and st.toggle(tr(L, "adv.show_all", n=len(suggestions)), key="adv_show_all"):
            shown = suggestions
        for i, sg in enumerate(shown):
            _advice_row(i, sg)


def _advice_row(i: int, sg: Suggestion) -> None:
    """One option: fits / helps / does not help, then peak after, saving and step time (— when it cannot run) on a
    second line, and Apply. Three elements a row (a row of five columns was eleven, ~80 for the table: issue #18)."""
    L = state.lang()
    if sg.fits:
        mark = ":green[:material/check_circle:]"
    elif sg.helps:
        mark = ":orange[:material/remove_circle:]"
    else:
        mark = ":grey[:material/block:]"
    saving = f"−{sg.saving_gib:.2f} GiB" if sg.saving_gib >= 0 else f"+{-sg.saving_gib:.2f} GiB"
    if sg.added_step_s is not None:
        step = f"{sg.added_step_s:+.1f} s"
    elif sg.step_s is not None:  # the current scenario cannot run: no delta, the option's own step time
        step = f"{sg.step_s:,.1f} s"
    else:
        step = "—"
    figures = (
        f"{tr(L, 'adv.peak_after')} {sg.peak_gib_per_gpu:.2f} GiB · {tr(L, 'adv.saving')} {saving} · "
        f"{tr(L, 'adv.time')} {step}"
    )
    why = "\n".join(f"- {x}" for x in sg.fit.reasons)
    overrides = "\n".join(f"`{o}`" for o in sg.verl_overrides)
    with st.container(horizontal=True, vertical_alignment="center"):
        st.markdown(
            f"{mark} **{md(lever_title(sg.lever, sg.title, L))}**  \n:grey[{figures}]",
            help=f"{sg.explanation}\n\n{overrides}" + (f"\n\n{why}" if why else ""),
            width="stretch",  # the Apply buttons line up on the right
        )
        st.button(
            tr(L, "adv.apply"),
            key=f"adv_apply_{i}",
            on_click=apply_changes,
            args=(dict(sg.native_changes),),
            width="content",
        )


def scenario_caption(report: Report, algorithm: str) -> str:
    r = report
    return (
        f"{r.model.name} · {r.hardware.num_gpus} × {r.hardware.gpu_name or r.hardware.gpu} · {algorithm} · "
        f"verl {r.verl_version}"
    )
