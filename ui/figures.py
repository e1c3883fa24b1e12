"""Pure figure builders: a Report in, a ``plotly.graph_objects.Figure`` out (no streamlit here).

Colours are fixed per component name (DESIGN.md 6.2 vocabulary) and per role, so the same thing has
the same colour on every chart and page. Stacks are built from ``PhaseOut.components`` (GiB per GPU),
so each bar's height is exactly the phase's ``total_gib``; the hover shows the formula text from
``PhaseOut.details`` (``Component.formula``).
"""

from __future__ import annotations

import hashlib
import textwrap
from collections.abc import Sequence

import plotly.graph_objects as go

from calculator import PhaseOut, Report
from ui.export import FONT_FAMILY, plain_text
from ui.i18n import tr, tr_or

_BLUES = ("#08306b", "#08519c", "#2171b5", "#4292c6", "#6baed6", "#9ecae1", "#c6dbef")
_PURPLES = ("#3f007d", "#54278f", "#6a51a3", "#807dba", "#9e9ac8", "#bcbddc", "#dadaeb")
_GREENS = ("#00441b", "#006d2c", "#238b45", "#41ab5d", "#74c476", "#a1d99b", "#c7e9c0")
_PINKS = ("#67001f", "#980043", "#ce1256", "#e7298a", "#df65b0", "#c994c7", "#d4b9da")
_TRAINING_KINDS = ("params", "unsharded_params", "grads", "optimizer", "activations", "logits", "entropy")

COMPONENT_COLORS: dict[str, str] = {
    **{f"actor_{k}": c for k, c in zip(_TRAINING_KINDS, _BLUES, strict=True)},
    **{f"critic_{k}": c for k, c in zip(_TRAINING_KINDS, _PURPLES, strict=True)},
    **{f"ref_{k}": c for k, c in zip(_TRAINING_KINDS, _GREENS, strict=True)},
    **{f"reward_{k}": c for k, c in zip(_TRAINING_KINDS, _PINKS, strict=True)},
    "actor_head_grad": "#3182bd",
    "critic_head_grad": "#756bb1",
    "rollout_weights": "#a63603",
    "kv_cache": "#f16913",
    "rollout_activations": "#fd8d3c",
    "rollout_non_torch": "#fdae6b",
    "cuda_graphs": "#7f2704",
    "sync_bucket": "#01665e",
    "sync_full_tensor": "#35978f",
    "sync_shard_clone": "#80cdc1",
    "sync_lora_gather": "#003c30",
    "cuda_context": "#525252",
    "nccl_buffers": "#969696",
    "fragmentation": "#cccccc",
}

ROLE_COLORS: dict[str, str] = {
    "actor": "#2171b5",
    "critic": "#6a51a3",
    "ref": "#238b45",
    "reward": "#ce1256",
    "rollout": "#f16913",
    "sync": "#35978f",
    "runtime": "#969696",
}
ROLE_ORDER = ("actor", "critic", "ref", "reward", "rollout", "sync", "runtime")

# Bottom-to-top stacking: what stays resident first (training state, engine weights), transients above,
# runtime overhead on top. Names outside this list follow, in order of first appearance.
COMPONENT_ORDER: tuple[str, ...] = (
    *(f"{r}_{k}" for r in ("actor", "critic", "ref", "reward") for k in ("params", "grads", "optimizer")),
    "rollout_weights",
    "kv_cache",
    "rollout_activations",
    "rollout_non_torch",
    "cuda_graphs",
    *(
        f"{r}_{k}"
        for r in ("actor", "critic", "ref", "reward")
        for k in ("unsharded_params", "activations", "logits", "entropy", "head_grad", "dora_weight", "optimizer_step")
    ),
    "sync_bucket",
    "sync_full_tensor",
    "sync_shard_clone",
    "sync_lora_gather",
    "cuda_context",
    "nccl_buffers",
    "fragmentation",
)

_FALLBACK = ("#8c6d31", "#bd9e39", "#e7ba52", "#843c39", "#ad494a", "#d6616b", "#7b4173", "#a55194")
USABLE_LINE_COLOR = "#c0392b"
BUDGET_LINE_COLOR = "#7f8c8d"
FONT = dict(family=FONT_FAMILY, size=13)


def component_color(name: str) -> str:
    """The colour of a component; unknown names get a stable colour from their role prefix or their hash."""
    if name in COMPONENT_COLORS:
        return COMPONENT_COLORS[name]
    digest = int(hashlib.sha1(name.encode()).hexdigest(), 16)
    return _FALLBACK[digest % len(_FALLBACK)]


def role_color(role: str) -> str:
    return ROLE_COLORS.get(role, _FALLBACK[int(hashlib.sha1(role.encode()).hexdigest(), 16) % len(_FALLBACK)])


def component_order(phases: Sequence[PhaseOut]) -> list[str]:
    """Component names present in any phase, in stacking order (bottom first)."""
    present: list[str] = []
    for p in phases:
        present += [c for c in p.components if c not in present]
    rank = {name: i for i, name in enumerate(COMPONENT_ORDER)}
    return sorted(present, key=lambda n: (rank.get(n, len(rank)), present.index(n)))


def _wrap(text: str, width: int = 90) -> str:
    return "<br>".join(textwrap.wrap(text, width)) if text else ""


def component_formula(phase: PhaseOut, name: str) -> str:
    """Formula text(s) of a component in a phase (several pieces with one name are joined with ' + ')."""
    return " + ".join(c.formula for c in phase.details if c.name == name)


def component_role(phases: Sequence[PhaseOut], name: str) -> str:
    for p in phases:
        for c in p.details:
            if c.name == name:
                return c.role
    return "runtime"


def role_totals(phase: PhaseOut) -> dict[str, float]:
    """GiB per role in one phase (sums ``Component.bytes`` by ``Component.role``)."""
    out: dict[str, float] = {}
    for c in phase.details:
        out[c.role] = out.get(c.role, 0.0) + c.gib
    return out


def _phases(report: Report, worst: bool) -> list[PhaseOut]:
    return list(report.worst_case_phases if worst and report.worst_case_phases else report.phases)


def _layout(lang: str, title: str | None, height: int) -> dict:
    """The common layout, as a plain mapping (the figure is constructed once, validated once)."""
    return dict(
        barmode="stack",
        height=height,
        margin=dict(l=10, r=10, t=60 if title else 30, b=10),
        font=FONT,
        title=dict(text=plain_text(title), x=0.01, xanchor="left") if title else None,  # plain text, no markup
        legend=dict(
            orientation="h",
            yanchor="top",
            y=-0.1,
            xanchor="left",
            x=0,
            traceorder="normal",
            entrywidth=125,
            entrywidthmode="pixels",
            font=dict(size=11),
        ),
        hoverlabel=dict(align="left"),
        plot_bgcolor="white",
        paper_bgcolor="white",
        bargap=0.35,
        xaxis=dict(showgrid=False),
        yaxis=dict(title=dict(text=tr(lang, "fig.gib_per_gpu")), gridcolor="#eceff1", zerolinecolor="#cfd8dc"),
    )


def _limit_lines(report: Report, lang: str, axis: int = 1) -> tuple[list[dict], list[dict]]:
    """Shapes and labels of the usable-memory line and the rollout engine's budget line (util x total)."""
    x_dom = "x domain" if axis == 1 else f"x{axis} domain"
    yref = "y" if axis == 1 else f"y{axis}"
    usable = report.hardware.usable_memory_gib
    budget = report.rollout.budget_gib_per_gpu
    lines = [(usable, USABLE_LINE_COLOR, 2, "dash", tr(lang, "fig.usable_line", gib=usable), "bottom", 2)]
    if budget > 0:
        text = tr(lang, "fig.budget_line", gib=budget, engine=report.rollout.engine)
        lines.append((budget, BUDGET_LINE_COLOR, 1.5, "dot", text, "top", -2))
    shapes, labels = [], []
    for y, color, width, dash, text, anchor, shift in lines:
        shapes.append(
            dict(
                type="line",
                xref=x_dom,
                x0=0,
                x1=1,
                yref=yref,
                y0=y,
                y1=y,
                line=dict(color=color, width=width, dash=dash),
            )
        )
        labels.append(
            dict(
                xref=x_dom,
                x=1,
                xanchor="right",
                yref=yref,
                y=y,
                yanchor=anchor,
                yshift=shift,
                text=text,
                showarrow=False,
                font=dict(color=color, size=11),
                bgcolor="rgba(255,255,255,0.85)",
            )
        )
    return shapes, labels


def _component_traces(phases: Sequence[PhaseOut], names: Sequence[str], axis: int = 1) -> list[dict]:
    traces = []
    x = [p.name for p in phases]
    for name in names:
        y = [p.components.get(name) for p in phases]
        formulas = [_wrap(component_formula(p, name)) if name in p.components else "" for p in phases]
        shares = [
            f"{(p.components[name] / p.total_gib * 100) if p.total_gib else 0:.0f}%" if name in p.components else ""
            for p in phases
        ]
        traces.append(
            dict(
                type="bar",
                name=name,
                x=x,
                y=y,
                xaxis="x" if axis == 1 else f"x{axis}",
                yaxis="y" if axis == 1 else f"y{axis}",
                marker=dict(color=component_color(name), line=dict(width=0.5, color="white")),
                customdata=list(zip(formulas, shares, strict=True)),
                hovertemplate=(
                    f"<b>{name}</b> · %{{x}}<br>%{{y:.2f}} GiB (%{{customdata[1]}})"
                    f"<br><span style='color:#555'>%{{customdata[0]}}</span><extra></extra>"
                ),
                legendgroup=name,
                showlegend=True,
            )
        )
    return traces


def _total_labels(phases: Sequence[PhaseOut], axis: int = 1) -> list[dict]:
    xref, yref = ("x", "y") if axis == 1 else (f"x{axis}", f"y{axis}")
    return [
        dict(
            x=p.name,
            y=p.total_gib,
            xref=xref,
            yref=yref,
            text=f"<b>{p.total_gib:.1f}</b>",
            showarrow=False,
            yanchor="bottom",
            yshift=2,
            font=dict(size=11, color="#263238"),
        )
        for p in phases
    ]


def _top(report: Report, phases: Sequence[PhaseOut]) -> float:
    return max([p.total_gib for p in phases] + [report.hardware.usable_memory_gib]) * 1.12


def phase_tick(name: str) -> str:
    """A phase name on two lines, split at the underscore that balances them ("old_log_<br>prob"): horizontal
    tick labels that neither rotate into the legend nor get clipped (PPO has seven phases)."""
    cuts = [i for i, ch in enumerate(name) if ch == "_"]
    if len(name) <= 8 or not cuts:
        return name
    i = min(cuts, key=lambda c: max(c + 1, len(name) - c - 1))
    return f"{name[: i + 1]}<br>{name[i + 1 :]}"


def phase_axis(phases: Sequence[PhaseOut]) -> dict:
    names = [p.name for p in phases]
    return dict(tickangle=0, tickvals=names, ticktext=[phase_tick(n) for n in names], automargin=True)


def _stacked(report: Report, phases: list[PhaseOut], traces: list[dict], lang: str, title: str | None) -> go.Figure:
    layout = _layout(lang, title, height=520)
    layout["xaxis"].update(phase_axis(phases))
    layout["legend"]["y"] = -0.16  # below the two-line phase labels
    shapes, labels = _limit_lines(report, lang)
    layout["shapes"] = shapes
    layout["annotations"] = labels + _total_labels(phases)
    layout["yaxis"]["range"] = [0, _top(report, phases)]
    return go.Figure(data=traces, layout=layout)


def memory_figure(report: Report, *, lang: str = "en", worst: bool = False, title: str | None = None) -> go.Figure:
    """One stacked bar per phase (report order), one trace per component, limit lines for usable memory
    and the rollout engine's budget (util x total)."""
    phases = _phases(report, worst)
    return _stacked(report, phases, _component_traces(phases, component_order(phases)), lang, title)


def role_figure(report: Report, *, lang: str = "en", worst: bool = False, title: str | None = None) -> go.Figure:
    """Same bars stacked by role (actor, critic, ref, reward, rollout, sync, runtime)."""
    phases = _phases(report, worst)
    totals = [role_totals(p) for p in phases]
    present = [r for r in ROLE_ORDER if any(r in t for t in totals)]
    present += sorted({r for t in totals for r in t} - set(present))
    x = [p.name for p in phases]
    traces = []
    for role in present:
        details = []
        for p in phases:
            parts: dict[str, float] = {}
            for c in p.details:
                if c.role == role:
                    parts[c.name] = parts.get(c.name, 0.0) + c.gib
            details.append("<br>".join(f"{n}: {g:.2f} GiB" for n, g in parts.items()))
        traces.append(
            dict(
                type="bar",
                name=tr_or(lang, f"role.{role}", role),
                x=x,
                y=[t.get(role) for t in totals],
                marker=dict(color=role_color(role), line=dict(width=0.5, color="white")),
                customdata=details,
                hovertemplate="<b>%{fullData.name}</b> · %{x}<br>%{y:.2f} GiB<br>%{customdata}<extra></extra>",
            )
        )
    return _stacked(report, phases, traces, lang, title)


def comparison_figure(
    items: Sequence[tuple[str, Report]], *, lang: str = "en", worst: bool = False, title: str | None = None
) -> go.Figure:
    """Scenarios side by side (one panel each), stacked by component, on one shared y axis."""
    n = max(1, len(items))
    gap = 0.03
    width = (1 - gap * (n - 1)) / n
    layout = _layout(lang, title, height=600)
    layout["legend"]["y"] = -0.22
    layout["margin"]["b"] = 20
    traces: list[dict] = []
    shapes: list[dict] = []
    annotations: list[dict] = []
    seen: set[str] = set()
    top = 0.0
    for i, (label, report) in enumerate(items, start=1):
        phases = _phases(report, worst)
        x0 = (i - 1) * (width + gap)
        for trace in _component_traces(phases, component_order(phases), axis=i):
            trace["showlegend"] = trace["name"] not in seen
            seen.add(trace["name"])
            traces.append(trace)
        s, a = _limit_lines(report, lang, axis=i)
        shapes += s
        annotations += a + _total_labels(phases, axis=i)
        annotations.append(
            dict(
                xref="paper",
                yref="paper",
                x=x0 + width / 2,
                y=1.0,
                yanchor="bottom",
                xanchor="center",
                text=f"<b>{plain_text(label, limit=60)}</b>",  # a user's label: no plotly tags
                showarrow=False,
                font=dict(size=13),
            )  # fmt: skip
        )
        suffix = "" if i == 1 else str(i)
        layout[f"xaxis{suffix}"] = dict(
            domain=[x0, x0 + width], showgrid=False, tickangle=-35, tickfont=dict(size=10), anchor=f"y{suffix}"
        )
        if i > 1:
            layout[f"yaxis{suffix}"] = dict(matches="y", showticklabels=False, gridcolor="#eceff1", anchor=f"x{suffix}")
        top = max(top, _top(report, phases))
    for i in range(1, n + 1):
        layout["yaxis" if i == 1 else f"yaxis{i}"]["range"] = [0, top]
    layout["shapes"] = shapes
    layout["annotations"] = annotations
    return go.Figure(data=traces, layout=layout)
