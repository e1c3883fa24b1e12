"""The timeline (Gantt) of one steady-state step of a split placement: what each pool does when
(``Report.placement.timeline``; DESIGN.md 4.10)."""

from __future__ import annotations

import plotly.graph_objects as go

from calculator import Report

_COLOURS = {
    "weight_sync": "#7f7f7f",
    "generate next batch": "#1f77b4",
    "wait_prev_gen": "#d62728",
    "old_log_prob": "#ff7f0e",
    "ref_log_prob": "#bcbd22",
    "critic_values": "#9467bd",
    "update_critic": "#8c564b",
    "update_actor": "#2ca02c",
    "reward": "#e377c2",
}


def placement_timeline_figure(report: Report, title: str = "") -> go.Figure | None:
    """Horizontal bars per pool (rollout, trainer), one per span, from start to end in seconds; None when
    colocated."""
    pl = report.placement
    if pl is None:
        return None
    fig = go.Figure()
    shown: set[str] = set()
    for span in pl.timeline:
        fig.add_trace(
            go.Bar(
                y=[span.pool],
                x=[span.end_s - span.start_s],
                base=[span.start_s],
                orientation="h",
                name=span.name,
                legendgroup=span.name,
                showlegend=span.name not in shown,
                marker_color=_COLOURS.get(span.name, "#17becf"),
                hovertemplate=f"{span.pool}: {span.name}<br>%{{base:.1f}} s → {span.end_s:.1f} s<extra></extra>",
            )
        )
        shown.add(span.name)
    fig.update_layout(
        barmode="overlay",
        title=title or None,
        xaxis_title="seconds into the step",
        yaxis=dict(categoryorder="array", categoryarray=["trainer", "rollout"]),
        height=260,
        margin=dict(l=10, r=10, t=30 if title else 10, b=10),
        legend=dict(orientation="h", y=-0.35),
    )
    return fig


__all__ = ["placement_timeline_figure"]
