"""Figure builders and text exports: traces, stacking order, totals equal to the report, consistent colours,
limit lines; the scenario YAML round-trips; the approximate-size model; the pure modules stay pure."""

from __future__ import annotations

import subprocess
import sys

import plotly.graph_objects as go
import pytest
import yaml

from calculator import estimate, load_scenario
from calculator.inputs.presets import scenario_presets
from calculator.model.sizes import approximate_model, parse_size
from calculator.report.models import Report
from tests.support.paths import ROOT
from ui import figures, summary
from ui.fields import all_fields, decode_value, encode_value, scenario_flat

PRESET = "qwen2.5-7b-grpo-8xh100"

# DESIGN.md 6.2: the names the dashboard colours by.
VOCABULARY = [
    *(
        f"{r}_{k}"
        for r in ("actor", "critic", "ref", "reward")
        for k in ("params", "grads", "optimizer", "activations", "logits", "entropy")
    ),
    "rollout_weights",
    "kv_cache",
    "rollout_activations",
    "rollout_non_torch",
    "cuda_graphs",
    "sync_bucket",
    "sync_full_tensor",
    "cuda_context",
    "nccl_buffers",
    "fragmentation",
]


def _report(preset: str = PRESET, **overrides) -> Report:
    return estimate(load_scenario(preset, overrides=overrides))


def _ys(trace: go.Bar) -> list[float]:
    return [0.0 if v is None else float(v) for v in trace.y]


@pytest.fixture(scope="module")
def report() -> Report:
    return _report()


@pytest.fixture(scope="module")
def ppo_report() -> Report:
    return _report(**{"algorithm.adv_estimator": "gae", "reward_model.enable": True})


def test_memory_figure_stacks_every_component_and_sums_to_the_phase_totals(report: Report) -> None:
    fig = figures.memory_figure(report)
    assert fig.layout.barmode == "stack"
    names = [t.name for t in fig.data]
    assert names == figures.component_order(report.phases)
    assert set(names) == {c for p in report.phases for c in p.components}
    assert list(fig.data[0].x) == [p.name for p in report.phases]  # phases in report order
    for i, phase in enumerate(report.phases):
        total = sum(_ys(t)[i] for t in fig.data)
        assert total == pytest.approx(phase.total_gib, rel=1e-12)
        for t in fig.data:
            assert _ys(t)[i] == pytest.approx(phase.components.get(t.name, 0.0))


def test_stacking_order_puts_resident_state_first_and_runtime_on_top(report: Report) -> None:
    names = figures.component_order(report.phases)
    assert names.index("actor_params") < names.index("kv_cache") < names.index("cuda_context")
    assert names[-1] in ("fragmentation", "nccl_buffers", "cuda_context")


def test_limit_lines_are_usable_memory_and_rollout_budget(report: Report) -> None:
    fig = figures.memory_figure(report)
    ys = sorted(round(s.y0, 6) for s in fig.layout.shapes)
    assert ys == sorted([round(report.hardware.usable_memory_gib, 6), round(report.rollout.budget_gib_per_gpu, 6)])
    texts = " ".join(a.text for a in fig.layout.annotations)
    assert f"{report.hardware.usable_memory_gib:.1f}" in texts and f"{report.rollout.budget_gib_per_gpu:.1f}" in texts
    assert fig.layout.yaxis.range[1] >= report.hardware.usable_memory_gib


def test_hover_shows_gib_and_the_formula(report: Report) -> None:
    fig = figures.memory_figure(report)
    trace = next(t for t in fig.data if t.name == "actor_params")
    phase = report.phases[0]
    formula = figures.component_formula(phase, "actor_params")
    assert formula and formula.split()[0] in trace.customdata[0][0]
    assert "GiB" in trace.hovertemplate and "customdata[0]" in trace.hovertemplate


def test_colours_are_consistent_across_charts(report: Report, ppo_report: Report) -> None:
    for fig in (figures.memory_figure(report), figures.memory_figure(ppo_report)):
        for t in fig.data:
            assert t.marker.color == figures.component_color(t.name)
    cmp = figures.comparison_figure([("a", report), ("b", ppo_report)])
    for t in cmp.data:
        assert t.marker.color == figures.component_color(t.name)
    for name in VOCABULARY:
        assert name in figures.COMPONENT_COLORS
    assert len({figures.COMPONENT_COLORS[n] for n in VOCABULARY}) == len(VOCABULARY)  # distinct


def test_unknown_component_gets_a_stable_fallback_colour() -> None:
    a = figures.component_color("something_new")
    assert a == figures.component_color("something_new")
    assert a not in figures.COMPONENT_COLORS.values()


def test_role_figure_sums_by_role(ppo_report: Report) -> None:
    fig = figures.role_figure(ppo_report)
    roles_present = {c.role for p in ppo_report.phases for c in p.details}
    assert len(fig.data) == len(roles_present)
    for i, phase in enumerate(ppo_report.phases):
        assert sum(_ys(t)[i] for t in fig.data) == pytest.approx(phase.total_gib, rel=1e-9)
    for t in fig.data:
        assert t.marker.color in figures.ROLE_COLORS.values()


def test_worst_case_view_uses_the_worst_case_phases(report: Report) -> None:
    fig = figures.memory_figure(report, worst=True)
    for i, phase in enumerate(report.worst_case_phases):
        assert sum(_ys(t)[i] for t in fig.data) == pytest.approx(phase.total_gib, rel=1e-12)


def test_comparison_figure_shares_one_y_range(report: Report, ppo_report: Report) -> None:
    small = _report(**{"hardware.gpu": "h200-141gb"})
    fig = figures.comparison_figure([("grpo", report), ("ppo", ppo_report), ("h200", small)])
    ranges = {tuple(fig.layout[k].range) for k in fig.layout if k.startswith("yaxis")}
    assert len(ranges) == 1
    top = next(iter(ranges))[1]
    assert top >= max(r.hardware.usable_memory_gib for r in (report, ppo_report, small))
    legend_names = [t.name for t in fig.data if t.showlegend]
    assert len(legend_names) == len(set(legend_names))  # each component once in the legend
    # each panel's stack still sums to its phase totals
    for idx, r in enumerate((report, ppo_report, small), start=1):
        axis = "x" if idx == 1 else f"x{idx}"
        traces = [t for t in fig.data if t.xaxis == axis]
        for i, phase in enumerate(r.phases):
            assert sum(_ys(t)[i] for t in traces) == pytest.approx(phase.total_gib, rel=1e-12)


@pytest.mark.parametrize("preset", sorted(scenario_presets()))
def test_every_preset_builds_figures(preset: str) -> None:
    r = _report(preset)
    for fig in (figures.memory_figure(r, lang="zh"), figures.role_figure(r)):
        assert isinstance(fig, go.Figure) and fig.data


# ----------------------------------------------------------------------------- text exports


def test_scenario_yaml_round_trips() -> None:
    s = load_scenario(PRESET, overrides={"hardware.num_gpus": 16, "rollout.n": 8})
    again = load_scenario(yaml.safe_load(summary.scenario_yaml(s)))
    assert again == s


def test_markdown_summary_has_the_key_figures(report: Report) -> None:
    s = load_scenario(PRESET)
    md = summary.markdown_summary(s, report, "en", algorithm="GRPO")
    assert f"{report.peak.gib_per_gpu:.2f} GiB" in md
    assert f"`{report.peak.phase}`" in md
    for name in next(p for p in report.phases if p.name == report.peak.phase).components:
        assert f"`{name}`" in md
    assert "rollout.n" in md  # a setting that differs from verl's defaults
    h = report.host
    assert h is not None and f"{h.total_gib_per_node:.1f} / {h.usable_ram_gib_per_node:.1f} GiB" in md
    zh = summary.markdown_summary(s, report, "zh")
    assert f"{report.peak.gib_per_gpu:.2f} GiB" in zh and "每卡峰值" in zh


def test_breakdown_rows_sum_to_the_phase(report: Report) -> None:
    for phase in report.phases:
        rows = summary.breakdown_rows(phase)
        assert sum(r["GiB"] for r in rows) == pytest.approx(phase.total_gib, abs=0.01)
        assert all(r["Formula"] for r in rows)


def test_field_values_round_trip_through_the_url() -> None:
    flat = scenario_flat(load_scenario(PRESET))
    for path, spec in all_fields().items():
        value = flat[path]
        assert decode_value(spec, encode_value(value)) == value, path


# ----------------------------------------------------------------------------- approximate models


@pytest.mark.parametrize(
    ("text", "total", "moe"),
    [
        ("7B dense", 7e9, False),
        ("1.5B", 1.5e9, False),
        ("500M", 5e8, False),
        ("30B-A3B MoE", 30e9, True),
        ("235B moe", 235e9, True),
    ],
)
def test_parse_size(text: str, total: float, moe: bool) -> None:
    spec = parse_size(text)
    assert spec.total_params == total and spec.moe is moe


@pytest.mark.parametrize("text", ["", "seven", "7X", "3B-A5B", "-2B"])
def test_parse_size_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_size(text)


@pytest.mark.parametrize("text", ["7B", "13B", "70B", "30B-A3B", "100B-A10B MoE", "3B"])
def test_approximate_model_is_close_and_labelled(text: str) -> None:
    spec = parse_size(text)
    m = approximate_model(spec)
    assert m.config["_name_or_path"].startswith("≈")
    assert abs(m.error_fraction) <= 0.2
    s = load_scenario(PRESET, overrides={"model.config": m.config})
    assert estimate(s).model.total_params == m.total_params


# ----------------------------------------------------------------------------- purity (the PNG export: tests/system/test_png_export.py)


def test_pure_modules_do_not_import_streamlit() -> None:
    code = "import sys, ui.figures, ui.summary, ui.fields, ui.options, ui.i18n; print('streamlit' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "False"
