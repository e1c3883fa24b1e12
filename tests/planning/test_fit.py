"""The fit rule (calculator/planning/fit.py): four criteria, each with the numbers in its reason, the overshoot as
the sum of every excess, verl 0.9's max_model_len, and the batch-split and parallel-size rules verl and vLLM
assert before allocating anything (one boundary test each)."""

from __future__ import annotations

import pytest

from calculator import estimate, load_scenario
from calculator.planning.fit import (
    DEFAULT_MARGIN,
    batch_geometry_problem,
    fit_check,
    max_model_len,
    parallel_problem,
)
from calculator.resolve.architectures import resolve_architectures

BASE = "qwen2.5-7b-grpo-8xh100"


def _fit(overrides: dict | None = None, margin: float = DEFAULT_MARGIN):
    s = load_scenario(BASE, overrides=overrides or {})
    return fit_check(estimate(s), s, margin)


def test_reference_fits_with_every_criterion():
    f = _fit()
    assert DEFAULT_MARGIN == 0.10
    assert f.limit_gib_per_gpu == pytest.approx(79.22 * 0.9)
    assert f.within_margin and f.worst_case_fits and f.engine_starts and f.kv_holds_max_model_len
    assert f.fits and f.reasons == [] and f.overshoot_gib == 0.0


def test_margin_boundary():
    """Fits exactly when the peak is at most usable x (1 - margin)."""
    peak = _fit().peak_gib_per_gpu
    at = 1 - peak / 79.22
    assert _fit(margin=at - 1e-9).within_margin
    assert not _fit(margin=at + 1e-6).within_margin


def test_too_small_a_gpu_says_why_with_numbers():
    """A100-40GB (39.38 GiB usable): the update and the worst case no longer fit."""
    f = _fit({"hardware.gpu": "a100-40gb"})
    assert not f.fits
    assert f.reasons[0].startswith(
        f"peak {f.peak_gib_per_gpu:.1f} GiB in {f.peak_phase} > {f.limit_gib_per_gpu:.1f} GiB"
    )
    assert f.reasons[1] == f"worst case (max lengths) {f.worst_case_gib_per_gpu:.1f} GiB > usable 39.38 GiB"
    report = estimate(load_scenario(BASE, overrides={"hardware.gpu": "a100-40gb"}))
    excess = sum(max(0.0, p.total_gib - f.limit_gib_per_gpu) for p in report.phases) + sum(
        max(0.0, p.total_gib - f.usable_memory_gib) for p in report.worst_case_phases
    )
    assert f.overshoot_gib == pytest.approx(excess)  # the engine starts and holds max_model_len: nothing else


def test_engine_that_cannot_start_is_a_reason():
    f = _fit({"rollout.gpu_memory_utilization": 0.95})  # the trainer's resident state leaves less free than that
    assert not f.engine_starts and not f.fits
    assert "the rollout engine does not start" in " ".join(f.reasons)


def test_kv_cache_must_hold_one_max_model_len_sequence():
    f = _fit({"rollout.max_model_len": 2_000_000})
    assert f.max_model_len == 2_000_000 and not f.kv_holds_max_model_len
    kv = f"KV cache holds {f.kv_cache_tokens_per_replica} tokens per replica < max_model_len 2000000"
    assert any(kv in r for r in f.reasons)


def test_max_model_len_defaults_to_the_model_context():
    s = load_scenario(BASE)
    arch = resolve_architectures(s)[0]
    assert s.rollout.max_model_len is None and max_model_len(s, arch) == arch.max_position_embeddings == 131072
    assert max_model_len(load_scenario(s, overrides={"rollout.max_model_len": 4096}), arch) == 4096


@pytest.mark.parametrize(
    ("overrides", "problem"),
    [
        ({}, None),
        ({"hardware.num_gpus": 6, "rollout.tensor_model_parallel_size": 1},
         "train_batch_size x n (5120) is not divisible by 6 GPUs"),
        ({"hardware.num_gpus": 16, "actor.ppo_mini_batch_size": 1, "data.train_batch_size": 16, "rollout.n": 1},
         "ppo_mini_batch_size x n (1) is not divisible by the 16 data-parallel ranks"),
    ],
)  # fmt: skip
def test_batch_geometry(overrides: dict, problem: str | None):
    assert batch_geometry_problem(load_scenario(BASE, overrides=overrides)) == problem


@pytest.mark.parametrize(
    ("overrides", "problem"),
    [
        ({}, None),
        ({"rollout.tensor_model_parallel_size": 8}, "vLLM: attention heads (28) not divisible by rollout TP 8"),
        ({"actor.ulysses_sequence_parallel_size": 8}, "Ulysses SP 8 does not divide the attention / KV heads"),
        ({"actor.use_dynamic_bsz": True, "actor.ppo_max_token_len_per_gpu": 1000},
         "token budget 1000 x SP 1 < longest sequence 1536"),
        ({"actor.use_dynamic_bsz": True, "actor.ppo_max_token_len_per_gpu": 1536}, None),  # the boundary passes
    ],
)  # fmt: skip
def test_parallel_rules(overrides: dict, problem: str | None):
    s = load_scenario(BASE, overrides=overrides)
    assert parallel_problem(s, resolve_architectures(s)[0]) == problem
