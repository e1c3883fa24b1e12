"""Step-time and trade-off figures: traces, totals equal to the report, colours, labels."""

from __future__ import annotations

import pytest

from calculator import estimate, load_scenario
from calculator.planning.tradeoff import pareto_front, tradeoff_sweep
from ui.figures_time import (
    CURRENT_COLOR,
    INFEASIBLE_COLOR,
    PHASE_COLORS,
    USABLE_LINE_COLOR,
    step_time_figure,
    tradeoff_figure,
    variant_text,
)

BASE = "qwen2.5-7b-grpo-8xh100"


@pytest.fixture(scope="module")
def report():
    return estimate(
        load_scenario(BASE, overrides={"algorithm.adv_estimator": "gae", "critic.ppo_micro_batch_size_per_gpu": 8})
    )


@pytest.fixture(scope="module")
def points():
    return tradeoff_sweep(load_scenario(BASE))


def test_step_bar_is_stacked_by_phase_and_sums_to_step(report):
    fig = step_time_figure(report)
    top = [tr for tr in fig.data if tr.legendgroup == "phases"]
    assert [tr.name for tr in top] == list(report.time.phases_s)
    assert sum(tr.x[0] for tr in top) == pytest.approx(report.time.step_s)
    for tr in top:
        assert tr.marker.color == PHASE_COLORS[tr.name]
        assert tr.x[0] == pytest.approx(report.time.phases_s[tr.name])


def test_mechanism_bars_sum_to_each_phase(report):
    fig = step_time_figure(report)
    terms = [tr for tr in fig.data if tr.legendgroup == "terms"]
    assert terms
    phases = list(terms[0].y)
    assert phases == list(report.time.phases_s)
    for i, p in enumerate(phases):
        assert sum(tr.x[i] for tr in terms) == pytest.approx(report.time.phases_s[p])
    assert fig.layout.barmode == "stack"


def test_step_figure_needs_a_time_estimate():
    r = estimate(load_scenario(BASE), with_time=False)
    with pytest.raises(ValueError):
        step_time_figure(r)


def test_tradeoff_traces(points):
    fig = tradeoff_figure(points, None)
    names = [tr.name for tr in fig.data]
    assert names == ["does not fit", "fits", "Pareto front", "current settings"]
    no_fit, fits, front, current = fig.data
    assert no_fit.marker.color == INFEASIBLE_COLOR
    assert len(no_fit.x) == sum(not p.fits for p in points)
    assert len(fits.x) == sum(p.fits for p in points)
    assert list(front.x) == [p.peak_gib_per_gpu for p in pareto_front(points)]
    cur = next(p for p in points if p.is_current)
    assert (current.x[0], current.y[0]) == (cur.peak_gib_per_gpu, cur.step_s)
    assert current.marker.color == CURRENT_COLOR
    assert any(variant_text(cur.settings) in h for h in current.hovertext)
    assert all("rollout.gpu_memory_utilization" in h for h in fits.hovertext)


def test_tradeoff_usable_memory_line(points):
    fig = tradeoff_figure(points, None)
    lines = [s for s in fig.layout.shapes if s.type == "line"]
    assert len(lines) == 1 and lines[0].x0 == pytest.approx(points[0].usable_memory_gib)
    assert lines[0].line.color == USABLE_LINE_COLOR


def test_tradeoff_explicit_current_and_chinese_labels(points):
    other = points[5]
    fig = tradeoff_figure(points, other, lang="zh")
    assert fig.data[-1].name == "当前配置"
    assert (fig.data[-1].x[0], fig.data[-1].y[0]) == (other.peak_gib_per_gpu, other.step_s)
    assert "显存" in fig.layout.xaxis.title.text


def test_mechanism_bars_carry_their_formula_in_the_hover():
    """Issue 15: each mechanism's bar shows its formula and inputs (``time.term_formulas``) on hover."""
    r = estimate(load_scenario(BASE))
    fig = step_time_figure(r)
    bars = {tr.name: tr for tr in fig.data if tr.legendgroup == "terms"}
    for name in ("dispatch", "engine_host", "per_tensor_overhead", "dp_straggler"):
        assert name in bars, name
        assert "%{customdata}" in bars[name].hovertemplate
        texts = [c for c in bars[name].customdata if c]
        assert texts, name
    sync = list(r.time.phases_s).index("weight_sync")
    assert "checkpoint tensors" in bars["per_tensor_overhead"].customdata[sync]


def test_variant_text_spells_out_the_settings() -> None:
    """The trade-off table and hover say "parameter offload", never the calculator's short "p-off"."""
    settings = {
        "model.enable_gradient_checkpointing": True,
        "actor.fsdp_config.param_offload": True,
        "actor.fsdp_config.optimizer_offload": True,
        "rollout.tensor_model_parallel_size": 2,
        "rollout.gpu_memory_utilization": 0.6,
        "actor.ppo_max_token_len_per_gpu": 16384,
    }
    text = variant_text(settings)
    assert text == (
        "gradient checkpointing · parameter offload · optimizer offload · rollout TP 2 · rollout memory 0.6"
        " · 16k tokens per GPU"
    )  # 16384 // 1024 = 16
    assert "p-off" not in text and "o-off" not in text
    assert "参数卸载" in variant_text(settings, "zh")
