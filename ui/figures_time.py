"""Pure figure builders for step time and the memory/time trade-off (no streamlit here).

``step_time_figure`` reads ``report.time``: the top bar is the step stacked by phase (its length is
``step_s``), the lower bars split each phase by mechanism (``terms_s``; each bar's length is that
phase's ``phases_s``; hovering a mechanism shows its formula and inputs from ``term_formulas``). ``tradeoff_figure`` plots ``calculator.planning.tradeoff`` points: peak GiB per GPU
against step time, infeasible points grey, the Pareto front as a line, the current settings marked,
and the GPU's usable memory as a vertical line. Colours are fixed per phase (``PHASE_COLORS``) and
per mechanism (``TERM_COLORS``) so every chart and page agrees.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from calculator import PHASE_ORDER, Report, TradeoffPoint, pareto_front
from ui.export import FONT_FAMILY

PHASE_COLORS: dict[str, str] = {
    "rollout": "#f16913",
    "reward": "#ce1256",
    "old_log_prob": "#6baed6",
    "ref_log_prob": "#238b45",
    "critic_values": "#9e9ac8",
    "update_critic": "#6a51a3",
    "update_actor": "#08519c",
    "weight_sync": "#35978f",
}
TERM_COLORS: dict[str, str] = {
    "compute": "#4c72b0",
    "prefill": "#fdae6b",
    "decode": "#f16913",
    "long_tail": "#a63603",
    "tp_allreduce": "#7f2704",
    "ep_all_to_all": "#e7298a",
    "fsdp_comm": "#8172b3",
    "tp_ep_comm": "#8172b3",
    "cp_ring_attention": "#6a3d9a",
    "dp_comm": "#b39ddb",
    "ulysses_all_to_all": "#c994c7",
    "pipeline_bubble": "#bdbdbd",
    "param_stream_pcie": "#55a868",
    "cpu_offload_pcie": "#55a868",
    "offload_pcie": "#8fd175",
    "activation_offload": "#c7e9c0",
    "optimizer_step": "#937860",
    "optimizer_step_cpu": "#da8bc3",
    "gather": "#35978f",
    "bucket_copies": "#80cdc1",
    "engine_host": "#fd8d3c",
    "host_launch": "#fdd0a2",
    "dispatch": "#969696",
    "dp_straggler": "#636363",
    "moe_grouped_gemm": "#dd3497",
    "moe_load_imbalance": "#ae017e",
    "per_tensor_overhead": "#01665e",
    "engine_wake_sleep": "#5ab4ac",
    "lora_base_restore": "#c7eae5",
    "gemm_small_batch": "#9ecae1",
    "host_overhead": "#d9d9d9",
}
INFEASIBLE_COLOR = "#c7c7c7"
FEASIBLE_COLOR = "#2171b5"
FRONT_COLOR = "#e6550d"
CURRENT_COLOR = "#111111"
USABLE_LINE_COLOR = "#c0392b"
FONT = dict(family=FONT_FAMILY, size=13)
_FALLBACK = ("#8c6d31", "#bd9e39", "#e7ba52", "#843c39", "#ad494a", "#d6616b")

_LABELS: dict[str, dict[str, str]] = {
    "en": {
        "step": "Step",
        "seconds": "seconds per step",
        "step_title": "Step time {s:.1f} s: {tps:,.0f} tokens/s ({tpg:,.0f} per GPU)",
        "by_mechanism": "by mechanism",
        "phases": "phases",
        "peak": "peak memory per GPU (GiB)",
        "time": "step time (s)",
        "fits": "fits",
        "no_fit": "does not fit",
        "front": "Pareto front",
        "current": "current settings",
        "usable": "usable {gib:.1f} GiB",
        "tradeoff_title": "Memory / time trade-off ({n} settings, {f} fit)",
        "v.ckpt": "gradient checkpointing",
        "v.act_off": "activation offload",
        "v.p_off": "parameter offload",
        "v.o_off": "optimizer offload",
        "v.fused": "fused kernels",
        "v.tp": "rollout TP {n}",
        "v.util": "rollout memory {u:g}",
        "v.budget": "{k}k tokens per GPU",
    },
    "zh": {
        "step": "单步",
        "seconds": "每步秒数",
        "step_title": "单步耗时 {s:.1f} 秒：{tps:,.0f} token/秒（每卡 {tpg:,.0f}）",
        "by_mechanism": "按机制",
        "phases": "阶段",
        "peak": "每卡峰值显存 (GiB)",
        "time": "单步耗时 (秒)",
        "fits": "可运行",
        "no_fit": "显存不足",
        "front": "帕累托前沿",
        "v.ckpt": "梯度检查点",
        "v.act_off": "激活卸载",
        "v.p_off": "参数卸载",
        "v.o_off": "优化器卸载",
        "v.fused": "融合算子",
        "v.tp": "推理 TP {n}",
        "v.util": "推理显存占比 {u:g}",
        "v.budget": "每卡 {k}k token",
        "current": "当前配置",
        "usable": "可用 {gib:.1f} GiB",
        "tradeoff_title": "显存 / 时间权衡（{n} 种配置，{f} 种可运行）",
    },
}


def _t(lang: str, key: str, **kw: object) -> str:
    return _LABELS.get(lang, _LABELS["en"])[key].format(**kw)


def phase_color(name: str) -> str:
    return PHASE_COLORS.get(name, _FALLBACK[sum(map(ord, name)) % len(_FALLBACK)])


def term_color(name: str) -> str:
    return TERM_COLORS.get(name, _FALLBACK[sum(map(ord, name)) % len(_FALLBACK)])


def _layout_dict(title: str, height: int, *, legend_right: bool = False) -> dict:
    legend = (
        dict(
            orientation="v", x=1.02, xanchor="left", y=1.0, yanchor="top", groupclick="toggleitem", traceorder="grouped"
        )
        if legend_right
        else dict(orientation="h", yanchor="top", y=-0.15, x=0.0)
    )
    return dict(
        title=dict(text=title, x=0.0, xanchor="left"),
        font=FONT,
        height=height,
        template="plotly_white",
        barmode="stack",
        legend=legend,
        margin=dict(l=10, r=10, t=60, b=10),
    )


def _layout(fig: go.Figure, title: str, height: int, *, legend_right: bool = False) -> None:
    fig.update_layout(**_layout_dict(title, height, legend_right=legend_right))


@functools.cache
def _two_rows() -> dict:
    """The axes of the step-time figure's two rows (step on top, phases below) as ``make_subplots`` lays them out.
    Made once: ``make_subplots`` builds and validates a whole figure."""
    layout = make_subplots(rows=2, cols=1, row_heights=[0.22, 0.78], vertical_spacing=0.08).to_dict()["layout"]
    return {k: layout[k] for k in ("xaxis", "yaxis", "xaxis2", "yaxis2")}


def step_time_figure(report: Report, *, lang: str = "en") -> go.Figure:
    """Step stacked by phase (top row) and each phase stacked by mechanism (bottom row), seconds.

    Built as plain dicts and validated once by ``go.Figure`` (trace by trace with ``add_trace`` and
    ``update_layout`` it took ~90 ms of a new scenario's first rerun; issue #18)."""
    t = report.time
    if t is None:
        raise ValueError("report has no time estimate (estimate(..., with_time=True))")
    phases = [p for p in PHASE_ORDER if p in t.phases_s] + [p for p in t.phases_s if p not in PHASE_ORDER]
    traces: list[dict] = []
    for p in phases:
        sec = t.phases_s[p]
        terms = "<br>".join(f"{k}: {v:.2f} s" for k, v in t.terms_s.get(p, {}).items() if v > 0)
        traces.append(
            dict(
                type="bar",
                y=[_t(lang, "step")],
                x=[sec],
                name=p,
                orientation="h",
                marker=dict(color=phase_color(p)),
                legendgroup="phases",
                legendgrouptitle=dict(text=_t(lang, "phases")),
                hovertemplate=f"<b>{p}</b>: {sec:.2f} s ({100 * sec / t.step_s if t.step_s else 0:.0f}%)<br>{terms}"
                "<extra></extra>",
                xaxis="x",
                yaxis="y",
            )
        )
    term_names: list[str] = []
    for p in phases:
        for k in t.terms_s.get(p, {}):
            if k not in term_names:
                term_names.append(k)
    for k in term_names:
        xs = [t.terms_s.get(p, {}).get(k, 0.0) for p in phases]
        if not any(xs):
            continue
        traces.append(
            dict(
                type="bar",
                y=phases,
                x=xs,
                name=k,
                orientation="h",
                marker=dict(color=term_color(k)),
                legendgroup="terms",
                legendgrouptitle=dict(text=_t(lang, "by_mechanism")),
                customdata=[_wrap(t.term_formulas.get(p, {}).get(k, "")) for p in phases],
                hovertemplate=f"<b>%{{y}}</b> · {k}: %{{x:.2f}} s<br>%{{customdata}}<extra></extra>",
                xaxis="x2",
                yaxis="y2",
            )
        )
    layout = copy.deepcopy(_two_rows())
    layout["xaxis2"]["title"] = dict(text=_t(lang, "seconds"))
    layout["yaxis2"]["autorange"] = "reversed"
    title = _t(lang, "step_title", s=t.step_s, tps=t.tokens_per_s, tpg=t.tokens_per_s_per_gpu)
    layout.update(_layout_dict(title, height=260 + 45 * len(phases), legend_right=True))
    return go.Figure(data=traces, layout=layout)


def _wrap(text: str, width: int = 90) -> str:
    """A term's formula for a hover box: HTML line breaks every ``width`` characters at a space."""
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + len(word) > width:
            lines.append(line)
            line = ""
        line = f"{line} {word}" if line else word
    return "<br>".join([*lines, line] if line else lines)


def step_time_page_figure(fig: go.Figure) -> go.Figure:
    """A copy of :func:`step_time_figure` for a narrow page column: no title (the page prints the total above
    it), the legend below in two columns and the figure tall enough that plotly never turns the legend into a
    scroll box hiding entries (it caps a legend at about half the figure's height)."""
    entries = [t for t in fig.data if t.showlegend is not False]
    groups = {t.legendgroup for t in entries}
    rows = sum(-(-sum(1 for t in entries if t.legendgroup == g) // 2) for g in groups)
    legend_px = 22 * rows + 24 * len(groups) + 20
    spec = fig.to_dict()  # a copy, changed here and validated once by go.Figure (go.Figure(fig) + update_layout: twice)
    layout = spec["layout"]
    layout.pop("title", None)  # no title: the page prints the total above the chart
    layout["margin"] = dict(l=10, r=10, t=10, b=10)
    layout["legend"] = dict(
        layout.get("legend", {}),  # keeps the grouping of the full figure's legend
        orientation="h",
        x=0,
        xanchor="left",
        y=-0.12,
        yanchor="top",
        font=dict(size=11),
        entrywidth=0.5,
        entrywidthmode="fraction",
    )
    layout["height"] = (fig.layout.height or 400) + 2 * legend_px
    return go.Figure(spec)


def variant_text(settings: dict, lang: str = "en") -> str:
    """A swept variant in words ("gradient checkpointing · parameter offload · rollout TP 2 · rollout memory
    0.6"), from its settings rather than the calculator's short label ("ckpt · p-off · TP2 · util 0.6")."""
    parts = []
    if settings.get("model.enable_gradient_checkpointing"):
        parts.append(_t(lang, "v.ckpt"))
    if settings.get("model.enable_activation_offload"):
        parts.append(_t(lang, "v.act_off"))
    if any(v for k, v in settings.items() if k.endswith("param_offload")):
        parts.append(_t(lang, "v.p_off"))
    if any(v for k, v in settings.items() if k.endswith("optimizer_offload")):
        parts.append(_t(lang, "v.o_off"))
    if settings.get("model.use_fused_kernels"):
        parts.append(_t(lang, "v.fused"))
    if "rollout.tensor_model_parallel_size" in settings:
        parts.append(_t(lang, "v.tp", n=settings["rollout.tensor_model_parallel_size"]))
    if "rollout.gpu_memory_utilization" in settings:
        parts.append(_t(lang, "v.util", u=settings["rollout.gpu_memory_utilization"]))
    if "actor.ppo_max_token_len_per_gpu" in settings:
        parts.append(_t(lang, "v.budget", k=settings["actor.ppo_max_token_len_per_gpu"] // 1024))
    return " · ".join(parts)


def _hover(p: TradeoffPoint, lang: str = "en") -> str:
    settings = "<br>".join(f"{k} = {v}" for k, v in p.settings.items())
    return (
        f"<b>{variant_text(p.settings, lang)}</b><br>peak {p.peak_gib_per_gpu:.1f} GiB ({p.peak_phase}) · step {p.step_s:.1f} s · "
        f"{p.tokens_per_s_per_gpu:,.0f} tok/s/GPU<br>{settings}"
    )


def tradeoff_figure(
    points: Sequence[TradeoffPoint], current: TradeoffPoint | None = None, lang: str = "en"
) -> go.Figure:
    """Peak GiB per GPU (x) against step time (y) for every swept setting that can run (a setting whose
    rollout engine cannot start has no step time)."""
    points = [p for p in points if p.step_s is not None]
    fig = go.Figure()
    groups = (
        ("no_fit", [p for p in points if not p.fits], INFEASIBLE_COLOR, 6),
        ("fits", [p for p in points if p.fits], FEASIBLE_COLOR, 7),
    )
    for key, pts, color, size in groups:
        fig.add_trace(
            go.Scatter(
                x=[p.peak_gib_per_gpu for p in pts],
                y=[p.step_s for p in pts],
                mode="markers",
                name=_t(lang, key),
                marker=dict(color=color, size=size, opacity=0.75),
                hovertext=[_hover(p, lang) for p in pts],
                hoverinfo="text",
            )
        )
    front = pareto_front(list(points))
    fig.add_trace(
        go.Scatter(
            x=[p.peak_gib_per_gpu for p in front],
            y=[p.step_s for p in front],
            mode="lines+markers",
            name=_t(lang, "front"),
            line=dict(color=FRONT_COLOR, width=2, shape="hv"),
            marker=dict(color=FRONT_COLOR, size=9),
            hovertext=[_hover(p, lang) for p in front],
            hoverinfo="text",
        )
    )
    if current is None:
        current = next((p for p in points if p.is_current), None)
    if current is not None:
        fig.add_trace(
            go.Scatter(
                x=[current.peak_gib_per_gpu],
                y=[current.step_s],
                mode="markers",
                name=_t(lang, "current"),
                marker=dict(symbol="star", size=18, color=CURRENT_COLOR, line=dict(color="white", width=1)),
                hovertext=[_hover(current, lang)],
                hoverinfo="text",
            )
        )
    usable = max((p.usable_memory_gib for p in points), default=0.0)
    if usable:
        fig.add_vline(
            x=usable,
            line=dict(color=USABLE_LINE_COLOR, dash="dash", width=2),
            annotation_text=_t(lang, "usable", gib=usable),
            annotation_position="top left",
            annotation_font_color=USABLE_LINE_COLOR,
        )
    fig.update_xaxes(title_text=_t(lang, "peak"), gridcolor="#eceff1")
    fig.update_yaxes(title_text=_t(lang, "time"), gridcolor="#eceff1", rangemode="tozero")
    _layout(fig, _t(lang, "tradeoff_title", n=len(points), f=sum(p.fits for p in points)), height=520)
    fig.update_layout(barmode=None, hovermode="closest")
    return fig
