"""``estimate(scenario) -> Report`` (calculator/report/estimate.py): the peak and its fit, the headroom, rollout
concurrency from the KV blocks, the optional step time, where warnings come from, and the roles present."""

from __future__ import annotations

import math

import pytest

from calculator import estimate, load_scenario
from calculator.report.estimate import build_context
from calculator.units import GIB_BYTES

BASE = "qwen2.5-7b-grpo-8xh100"


@pytest.fixture(scope="module")
def report():
    return estimate(load_scenario(BASE))


def test_peak_is_the_largest_phase_and_fits_below_usable(report):
    peak = max(report.phases, key=lambda p: p.total_bytes)
    assert report.peak.phase == peak.name and report.peak.gib_per_gpu == peak.total_bytes / GIB_BYTES
    assert report.peak.usable_memory_gib == 79.22 and report.hardware.usable_memory_gib == 79.22
    assert report.peak.headroom_gib == pytest.approx(79.22 - report.peak.gib_per_gpu)
    assert report.peak.fits and report.rollout.starts
    worst = max(report.worst_case_phases, key=lambda p: p.total_bytes)
    assert report.peak.worst_case_phase == worst.name


def test_an_engine_that_cannot_start_does_not_fit():
    r = estimate(load_scenario(BASE, overrides={"rollout.gpu_memory_utilization": 0.95}))
    assert not r.rollout.starts and not r.peak.fits and not r.peak.worst_case_fits


def test_concurrency_from_kv_blocks():
    """KV-limited case (TP 1 at util 0.3): sequences at once = floor(blocks / ceil(tokens per sequence / 16)),
    at most max_num_seqs, for the mean (512 + 600) and the max (512 + 1024) sequence."""
    r = estimate(
        load_scenario(BASE, overrides={"rollout.gpu_memory_utilization": 0.3, "rollout.tensor_model_parallel_size": 1})
    )
    blocks = r.rollout.kv_cache_tokens_per_replica // 16
    assert r.rollout.max_concurrent_sequences_per_replica == min(256, blocks // math.ceil(1112 / 16))
    assert r.rollout.max_concurrent_sequences_per_replica_at_max_len == min(256, blocks // (1536 // 16))
    assert r.rollout.max_concurrent_sequences_per_replica < 256  # the KV cache binds here
    assert r.rollout.num_replicas == 8 and r.rollout.sequences_per_replica == 1024 * 5 // 8


def test_rollout_numbers_are_the_engine_budget(report):
    rb = build_context(load_scenario(BASE)).rollout
    ro = report.rollout
    assert ro.kv_cache_tokens_per_replica == rb.kv_tokens
    assert ro.budget_gib_per_gpu == rb.budget_bytes / GIB_BYTES
    assert ro.kv_cache_gib_per_gpu == rb.kv_cache_bytes / GIB_BYTES
    assert ro.startup_required_gib == int(79.22 * GIB_BYTES * 0.6) / GIB_BYTES


def test_step_time_is_optional(report):
    assert report.time is not None and report.time.step_s > 0
    bare = estimate(load_scenario(BASE), with_time=False)
    assert bare.time is None and bare.phases == report.phases and bare.peak == report.peak


def test_warnings_order_extra_then_estimate_then_verl():
    s = load_scenario(
        BASE, overrides={"actor.ppo_micro_batch_size_per_gpu": 48, "rollout.gpu_memory_utilization": 0.95}
    )
    ws = estimate(s, extra_warnings=["from the caller"]).warnings
    assert ws[0] == "from the caller"
    assert ws[1].startswith("vLLM will refuse to start")
    assert ws[-1].startswith("verl: data size must be divisible")


def test_model_and_hardware_info():
    r = estimate(load_scenario("qwen3-30b-a3b-grpo-16xh100"))
    assert r.model.total_params > r.model.active_params  # MoE: 8 of 128 experts per token
    assert r.hardware.num_gpus == 16 and r.hardware.num_nodes == 2 and r.hardware.gpu_name == "H100-SXM5-80GB"
    fp8 = estimate(load_scenario(BASE, overrides={"rollout.kv_cache_dtype": "fp8"}))
    assert fp8.model.kv_cache_bytes_per_token * 2 == estimate(load_scenario(BASE)).model.kv_cache_bytes_per_token


@pytest.mark.parametrize(
    ("preset", "overrides", "roles"),
    [
        (BASE, {}, ["actor", "rollout", "ref"]),
        (BASE, {"actor.use_kl_loss": False}, ["actor", "rollout"]),
        (BASE, {"model.lora_rank": 8}, ["actor", "rollout"]),  # the ref is the actor without adapters
        ("qwen2.5-7b-ppo-8xh100", {"reward_model.enable": True}, ["actor", "rollout", "ref", "critic", "reward"]),
    ],
)
def test_roles(preset: str, overrides: dict, roles: list[str]):
    assert estimate(load_scenario(preset, overrides=overrides)).roles == roles


@pytest.mark.parametrize("sid", ["qwen2.5-7b-ppo-8xh100", "seed002-7b-dora-1xa100"])
def test_without_warnings_every_number_is_the_same(sid):
    """The planner's fast path: no warnings or decisions, and nothing else changes (verl's checks still run:
    a check that raises is a fit criterion, calculator.report.verdict)."""
    s = load_scenario(sid)
    full, lean = estimate(s), estimate(s, with_warnings=False)
    assert full.decisions and lean.warnings == [] and lean.decisions == [] and lean.checks == full.checks
    assert lean == full.model_copy(update={"warnings": [], "decisions": []})


def test_rollout_data_parallel_in_the_report():
    """Qwen3-30B-A3B on 16 GPUs, rollout TP 2 x DP 2: 4 replicas of 2 engines; each engine's KV cache is checked
    against max_model_len, the replica holds both (calculator/memory/engine.py kv_tokens_per_replica)."""
    from calculator import estimate, load_scenario

    base = {"rollout.tensor_model_parallel_size": 2}
    r1 = estimate(load_scenario("qwen3-30b-a3b-grpo-16xh100", overrides={**base, "rollout.data_parallel_size": 1}))
    r2 = estimate(load_scenario("qwen3-30b-a3b-grpo-16xh100", overrides={**base, "rollout.data_parallel_size": 2}))
    ro = r2.rollout
    assert (r1.rollout.num_replicas, ro.num_replicas) == (8, 4) and ro.engines_per_replica == 2
    assert ro.kv_cache_tokens_per_replica == 2 * ro.kv_cache_tokens_per_engine
    assert r1.rollout.kv_cache_tokens_per_replica == r1.rollout.kv_cache_tokens_per_engine
    # the routed experts are split over TP x DP = 4 ranks instead of 2: fewer weights, more KV per engine
    assert ro.weights_gib_per_gpu < r1.rollout.weights_gib_per_gpu
    assert ro.kv_cache_tokens_per_engine > r1.rollout.kv_cache_tokens_per_engine
