"""Trade-off sweep, Pareto front and technique table (issue #5)."""

from __future__ import annotations

import math

import pytest

from calculator import estimate, load_scenario
from calculator.planning.tradeoff import (
    TechniqueRow,
    TradeoffPoint,
    apply_settings,
    pareto_front,
    rollout_tp_options,
    sweep_settings,
    technique_table,
    tradeoff_sweep,
)

BASE = "qwen2.5-7b-grpo-8xh100"
TECHNIQUES = {
    "gradient checkpointing",
    "activation offload",
    "param offload",
    "optimizer offload",
    "fused kernels",
    "entropy chunking",
    "dynamic batching (token budget)",
    "rollout TP x2",
    "Ulysses SP 2",
    "LoRA rank 32",
}


@pytest.fixture(scope="module")
def scenario():
    return load_scenario(BASE)


@pytest.fixture(scope="module")
def points(scenario):
    return tradeoff_sweep(scenario)


def test_sweep_is_every_combination(scenario, points):
    tps = rollout_tp_options(scenario)
    assert tps == [1, 2, 4]  # Qwen2.5-7B has 28 heads: TP 8 would not divide them
    utils = sorted({0.4, 0.5, 0.6, 0.7, 0.8, scenario.rollout.gpu_memory_utilization})
    assert len(points) == 2**5 * len(tps) * len(utils)
    keys = {tuple(sorted(p.settings.items())) for p in points}
    assert len(keys) == len(points)


def test_dynamic_batch_adds_token_budget_levels():
    s = load_scenario(BASE, overrides={"actor.use_dynamic_bsz": True, "actor.ppo_max_token_len_per_gpu": 16384})
    budgets = {st["actor.ppo_max_token_len_per_gpu"] for st in sweep_settings(s)}
    assert budgets == {8192, 16384, 32768}
    small = load_scenario(BASE, overrides={"actor.use_dynamic_bsz": True, "actor.ppo_max_token_len_per_gpu": 2048})
    floor = small.data.max_prompt_length + small.data.max_response_length  # verl rejects a budget below it
    assert min(st["actor.ppo_max_token_len_per_gpu"] for st in sweep_settings(small)) >= floor


def test_current_point_is_present_once_and_equals_estimate(scenario, points):
    current = [p for p in points if p.is_current]
    assert len(current) == 1
    r = estimate(scenario)
    assert current[0].peak_gib_per_gpu == pytest.approx(r.peak.gib_per_gpu, rel=1e-12)
    assert current[0].step_s == pytest.approx(r.time.step_s, rel=1e-12)
    assert current[0].fits == r.peak.fits


def test_every_point_equals_a_full_estimate(scenario, points):
    """The sweep's lean path must give what estimate() gives for the same settings."""
    for p in points[:: max(1, len(points) // 60)] + [p for p in points if not p.fits][:20]:
        s = apply_settings(scenario, p.settings)
        r = estimate(s)
        assert p.peak_gib_per_gpu == pytest.approx(r.peak.gib_per_gpu, rel=1e-12), p.label
        assert p.peak_phase == r.peak.phase
        assert p.step_s == pytest.approx(r.time.step_s, rel=1e-12), p.label
        assert p.fits == r.peak.fits, p.label
        # and the same as a validated scenario built from the dotted keys
        v = load_scenario(scenario, overrides=p.settings)
        assert estimate(v).peak.gib_per_gpu == pytest.approx(p.peak_gib_per_gpu, rel=1e-12)


def test_infeasible_points_are_flagged(points):
    over = [p for p in points if p.peak_gib_per_gpu > p.usable_memory_gib]
    assert over and not any(p.fits for p in over)  # no checkpointing: the update does not fit
    assert all(not p.settings["model.enable_gradient_checkpointing"] for p in over)


def test_front_is_non_dominated_and_feasible(points):
    front = pareto_front(points)
    assert front and all(p.fits for p in front)
    feasible = [p for p in points if p.fits]
    for f in front:
        for q in feasible:
            dominates = (
                q.peak_gib_per_gpu <= f.peak_gib_per_gpu
                and q.step_s <= f.step_s
                and (q.peak_gib_per_gpu < f.peak_gib_per_gpu or q.step_s < f.step_s)
            )
            assert not dominates, (q.label, f.label)
    # every feasible point is dominated by or on the front
    for q in feasible:
        assert any(f.peak_gib_per_gpu <= q.peak_gib_per_gpu and f.step_s <= q.step_s for f in front)
    assert [p.peak_gib_per_gpu for p in front] == sorted(p.peak_gib_per_gpu for p in front)
    assert [p.step_s for p in front] == sorted((p.step_s for p in front), reverse=True)


def test_front_by_brute_force():
    pts = [
        TradeoffPoint(
            label=f"{m},{t}",
            settings={},
            peak_gib_per_gpu=m,
            peak_phase="rollout",
            step_s=t,
            tokens_per_s_per_gpu=1.0,
            fits=fits,
            usable_memory_gib=80.0,
        )
        for (m, t, fits) in [(10, 100, True), (20, 50, True), (15, 120, True), (5, 10, False), (30, 50, True)]
    ]
    assert [p.label for p in pareto_front(pts)] == ["10,100", "20,50"]


@pytest.fixture(scope="module")
def table(scenario):
    return technique_table(scenario)


def test_table_has_every_technique(table):
    assert {r.technique for r in table} == TECHNIQUES
    assert all(isinstance(r, TechniqueRow) for r in table)


def test_table_rows_are_consistent(table, scenario):
    base = estimate(scenario)
    for r in table:
        if not r.applicable:
            assert r.note
            continue
        assert r.peak_gib_before == pytest.approx(base.peak.gib_per_gpu)
        assert r.step_s_before == pytest.approx(base.time.step_s)
        assert r.peak_saved_gib == pytest.approx(r.peak_gib_before - r.peak_gib_after)
        assert r.time_added_s == pytest.approx(r.step_s_after - r.step_s_before)
        assert r.time_added_pct == pytest.approx(100 * r.time_added_s / r.step_s_before)
        after = estimate(load_scenario(scenario, overrides=r.settings))
        assert r.peak_gib_after == pytest.approx(after.peak.gib_per_gpu)
        assert r.fits_after == after.peak.fits
        for phase, saved in r.phase_saved_gib.items():
            before = next(p.total_gib for p in base.phases if p.name == phase)
            now = next(p.total_gib for p in after.phases if p.name == phase)
            assert saved == pytest.approx(before - now)


def test_table_signs_follow_the_mechanisms(table):
    rows = {r.technique: r for r in table}
    ck = rows["gradient checkpointing"]  # on in the preset: the row turns it off
    assert ck.enabled_now and ck.time_added_s < 0 and ck.peak_saved_gib < 0 and not ck.fits_after
    assert rows["optimizer offload"].phase_saved_gib["rollout"] == pytest.approx(7_615_616_512 * 8 / 8 / 2**30)
    assert rows["optimizer offload"].time_added_s > 0
    assert rows["LoRA rank 32"].time_added_s < 0  # no weight gradients for the frozen base
    assert rows["fused kernels"].phase_saved_gib["old_log_prob"] > 0
    assert rows["rollout TP x2"].settings == {"rollout.tensor_model_parallel_size": 4}


def test_table_flags_inapplicable_techniques():
    s = load_scenario(BASE, overrides={"rollout.tensor_model_parallel_size": 4})
    rows = {r.technique: r for r in technique_table(s)}
    assert not rows["rollout TP x2"].applicable  # TP 8 does not divide Qwen2.5-7B's 28 heads
    meg = load_scenario(BASE, overrides={"actor.strategy": "megatron"})
    rows = {r.technique: r for r in technique_table(meg)}
    assert not rows["activation offload"].applicable
    assert not rows["gradient checkpointing"].applicable  # verl Megatron: override_transformer_config


def test_points_are_finite(points):
    for p in points:
        assert math.isfinite(p.step_s) and p.step_s > 0
        assert math.isfinite(p.peak_gib_per_gpu) and p.peak_gib_per_gpu > 0
        assert p.label


def test_megatron_sweep_uses_megatron_offload_keys():
    s = load_scenario(BASE, overrides={"actor.strategy": "megatron"})
    combos = sweep_settings(s)
    assert all("actor.megatron.param_offload" in c for c in combos)
    assert all(c["model.enable_activation_offload"] is False for c in combos)
    assert len(combos) == 2**3 * len(rollout_tp_options(s)) * 5  # util 0.4..0.8 (the preset's 0.6 among them)
