"""Dashboard pieces for split placements (issue 17): the sidebar selector, the per-pool summary, the
"colocated vs split" comparison. Strings live in :data:`STRINGS` (English and Chinese)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import streamlit as st

from calculator import Report, Scenario, estimate
from ui import field_values, keys
from ui.figures_placement import placement_timeline_figure

# The fields shown under Hardware; the fully_async ones only with that mode.
PLACEMENT_FIELDS = (
    "placement.mode",
    "placement.rollout_nnodes",
    "placement.rollout_n_gpus_per_node",
    "placement.physical_gpus_per_node",
    "placement.staleness_threshold",
    "placement.trigger_parameter_sync_step",
    "placement.require_batches",
    "placement.partial_rollout",
    "placement.use_rollout_log_probs",
)
_SPLIT_FIELDS = PLACEMENT_FIELDS[1:4]
_ASYNC_FIELDS = PLACEMENT_FIELDS[4:]

STRINGS: dict[str, dict[str, str]] = {
    "en": {
        "title": "Placement: rollout and trainer pools",
        "timeline": "One steady-state step (generation of the next batch overlaps training)",
        "pool": "Pool",
        "gpus": "GPUs",
        "peak": "Peak GiB / GPU",
        "phase": "Peak phase",
        "fits": "Fits",
        "summary": "{mode}: {rollout} rollout GPUs + {trainer} trainer GPUs on {nodes} node(s). Generation "
        "{gen:,.1f} s beside training {train:,.1f} s; weight sync {sync:.2f} s; the trainer waits {wait:,.1f} s.",
        "nodes": "Node rule (verl docs): {rule}",
        "compare": "Colocated vs split on the same GPUs",
        "compare_help": "The same run colocated on all {total} GPUs (hybrid engine), next to this split.",
        "layout": "Layout",
        "step": "Step s",
        "colocated": "colocated x {n}",
        "split": "{mode} ({r} + {t})",
        "split_col": "Split placement",
        "no_split": "no split fits",
    },
    "zh": {
        "title": "部署方式：rollout 池与训练池",
        "timeline": "一个稳态步（下一批的生成与本批训练重叠）",
        "pool": "池",
        "gpus": "GPU 数",
        "peak": "峰值 GiB / GPU",
        "phase": "峰值阶段",
        "fits": "放得下",
        "summary": "{mode}：rollout {rollout} 张 GPU + 训练 {trainer} 张 GPU，共 {nodes} 个节点。生成 "
        "{gen:,.1f} s 与训练 {train:,.1f} s 并行；权重同步 {sync:.2f} s；trainer 等待 {wait:,.1f} s。",
        "nodes": "节点数规则（verl 文档）：{rule}",
        "compare": "同样 GPU 数下：共置 vs 分离",
        "compare_help": "同一训练在全部 {total} 张 GPU 上共置（混合引擎），与当前分离部署对比。",
        "layout": "部署",
        "step": "单步 s",
        "colocated": "共置 x {n}",
        "split": "{mode}（{r} + {t}）",
        "split_col": "分离部署",
        "no_split": "没有放得下的分离方案",
    },
}


def ptr(lang: str, key: str, /, **values: object) -> str:
    text = STRINGS.get(lang, STRINGS["en"]).get(key) or STRINGS["en"][key]
    return text.format(**values) if values else text


def placement_inputs(errors: dict[str, list[str]], field_widget: Callable[..., None]) -> None:
    """The placement selector and, for a split, its pool sizes (and fully_async's knobs)."""
    field_widget("placement.mode", errors)
    mode = field_values.get("placement.mode", "colocated")
    if mode == "colocated":
        return
    c1, c2 = st.columns(2)
    for i, path in enumerate(_SPLIT_FIELDS):
        with c1 if i % 2 == 0 else c2:
            field_widget(path, errors)
    if mode == "fully_async":
        c1, c2 = st.columns(2)
        for i, path in enumerate(_ASYNC_FIELDS):
            with c1 if i % 2 == 0 else c2:
                field_widget(path, errors)


def pool_rows(report: Report, lang: str) -> pd.DataFrame:
    rows = [
        {
            ptr(lang, "pool"): p.name,
            ptr(lang, "gpus"): p.num_gpus,
            ptr(lang, "peak"): round(p.peak.gib_per_gpu, 2),
            ptr(lang, "phase"): p.peak.phase,
            ptr(lang, "fits"): "✓" if p.peak.fits else "✗",
        }
        for p in report.pools or []
    ]
    return pd.DataFrame(rows)


def colocated_twin(s: Scenario) -> Scenario | None:
    """The same run colocated on all the split's GPUs (None when it is not a valid scenario)."""
    total = s.hardware.num_gpus + s.placement.rollout_num_gpus
    d: dict[str, Any] = s.model_dump(mode="python")
    d["placement"] = {"mode": "colocated"}
    d["hardware"].update(num_gpus=total, gpus_per_node=s.placement.physical_gpus_per_node)
    try:
        return Scenario.model_validate(d)
    except ValueError:
        return None


def comparison_rows(s: Scenario, split: Report, lang: str) -> pd.DataFrame:
    """Colocated (same total GPUs) vs this split: step, peak, fit."""
    rows = []
    twin = colocated_twin(s)
    if twin is not None:
        col = estimate(twin)
        rows.append(
            {
                ptr(lang, "layout"): ptr(lang, "colocated", n=twin.hardware.num_gpus),
                ptr(lang, "step"): round(col.time.step_s, 1) if col.time else None,
                ptr(lang, "peak"): round(col.peak.gib_per_gpu, 2),
                ptr(lang, "fits"): "✓" if col.peak.fits else "✗",
            }
        )
    mode = s.placement.mode
    rows.append(
        {
            ptr(lang, "layout"): ptr(lang, "split", mode=mode, r=s.placement.rollout_num_gpus, t=s.hardware.num_gpus),
            ptr(lang, "step"): round(split.time.step_s, 1) if split.time else None,
            ptr(lang, "peak"): round(split.peak.gib_per_gpu, 2),
            ptr(lang, "fits"): "✓" if split.peak.fits else "✗",
        }
    )
    return pd.DataFrame(rows)


def split_column(plan_data: dict[str, Any], row: dict[str, Any], lang: str) -> dict[str, str]:
    """Planner table: the row's split (``plan --placement``), or nothing for a colocated plan."""
    mode = plan_data.get("placement")
    if not mode:
        return {}
    split = row.get("split")
    if not split:
        return {ptr(lang, "split_col"): ptr(lang, "no_split") if row.get("recommended") else ""}
    st_ = split.get("settings", {})
    step = split.get("step_s")
    text = (
        f"{mode} x {split['num_gpus']}: {step:,.1f} s, ${split.get('cost_per_step') or 0:.3f}/step; "
        f"rollout {st_.get('rollout.nnodes')} x {st_.get('rollout.n_gpus_per_node')} GPUs"
        if step is not None
        else f"{mode} x {split['num_gpus']}"
    )
    return {ptr(lang, "split_col"): text}


def render_placement(scenario: Scenario, report: Report, lang: str) -> None:
    """Estimate page: the pools, the timeline of one step, and colocated vs split on the same GPUs."""
    pl = report.placement
    if report.pools is None:
        return
    with st.container(border=True):
        st.markdown(f"**{ptr(lang, 'title')}**")
        if pl is not None:
            st.markdown(
                ptr(
                    lang,
                    "summary",
                    mode=pl.mode,
                    rollout=pl.rollout_num_gpus,
                    trainer=pl.trainer_num_gpus,
                    nodes=pl.num_nodes,
                    gen=pl.generation_s,
                    train=pl.training_s,
                    sync=pl.weight_sync_s,
                    wait=pl.wait_s,
                )
            )
            st.caption(ptr(lang, "nodes", rule=pl.nodes_rule))
        st.dataframe(pool_rows(report, lang), hide_index=True, width="stretch")
        fig = placement_timeline_figure(report)
        if fig is not None:
            st.markdown(f"**{ptr(lang, 'timeline')}**")
            st.plotly_chart(fig, key=keys.CHART_PLACEMENT, config={"displaylogo": False})
        st.markdown(f"**{ptr(lang, 'compare')}**")
        total = scenario.hardware.num_gpus + scenario.placement.rollout_num_gpus
        st.caption(ptr(lang, "compare_help", total=total))
        st.dataframe(comparison_rows(scenario, report, lang), hide_index=True, width="stretch")


__all__ = [
    "render_placement",
    "split_column",
    "PLACEMENT_FIELDS",
    "STRINGS",
    "colocated_twin",
    "comparison_rows",
    "placement_inputs",
    "pool_rows",
    "ptr",
]
