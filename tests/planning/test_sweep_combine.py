"""The trade-off sweep computed as trainer side x engine side (calculator/planning/sweep_combine.py) gives
exactly the points of evaluating every combination alone (sweep.full_sweep)."""

from __future__ import annotations

import pytest

from calculator import load_scenario
from calculator.inputs.presets import scenario_presets
from calculator.planning import sweep_combine
from calculator.planning.sweep import full_sweep

BASE = "qwen2.5-7b-grpo-8xh100"
DYNAMIC = {"actor.use_dynamic_bsz": True, "actor.ppo_max_token_len_per_gpu": 16384}
CASES = [(sid, {}) for sid in sorted(scenario_presets())] + [
    (BASE, DYNAMIC),
    (BASE, {"model.path": "llama3.1-8b", "algorithm.adv_estimator": "gae", **DYNAMIC}),
    (BASE, {"actor.strategy": "megatron"}),
    (BASE, {"rollout.free_cache_engine": False}),
    (BASE, {"hardware.gpu": "a100-40gb"}),  # many points do not fit or the engine cannot start
]


def _no_fallback(s):
    raise AssertionError("the combined sweep fell back to full_sweep")


@pytest.mark.parametrize(("sid", "overrides"), CASES, ids=[f"{sid}-{i}" for i, (sid, _) in enumerate(CASES)])
def test_every_point_equals_the_full_sweep(sid, overrides, monkeypatch):
    s = load_scenario(sid, overrides=overrides)
    expected = full_sweep(s)
    monkeypatch.setattr(sweep_combine, "full_sweep", _no_fallback)
    assert sweep_combine.tradeoff_sweep(s) == expected  # every field of every point, in order


def test_sglang_uses_the_full_sweep():
    """SGLang sizes its KV pool from the trainer's memory: the sides are coupled, so no split."""
    s = load_scenario(BASE, overrides={"rollout.name": "sglang"})
    assert sweep_combine.tradeoff_sweep(s) == full_sweep(s)


def test_a_wrong_split_is_caught_and_falls_back(monkeypatch):
    """If the rollout's seconds were (wrongly) taken from the trainer side, the cross points evaluated alone
    differ and the sweep falls back to evaluating every point."""
    s = load_scenario(BASE)
    monkeypatch.setattr(sweep_combine, "ENGINE_TIMED", frozenset())
    calls = []
    real = sweep_combine.full_sweep
    monkeypatch.setattr(sweep_combine, "full_sweep", lambda s: calls.append(s) or real(s))
    assert sweep_combine.tradeoff_sweep(s) == real(s)
    assert calls == [s]
