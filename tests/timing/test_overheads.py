"""Costs around the GPU work (calculator/timing/overheads.py), by hand on the Qwen2.5-7B GRPO preset (8 x H100,
1024 prompts x 5 samples of 512 + 600 tokens) and on Qwen3-30B-A3B: per-phase dispatch, data-parallel stragglers,
MoE grouped GEMM and load imbalance, weight-sync per-tensor cost, engine wake/sleep and the LoRA base restore."""

from __future__ import annotations

import pytest

from calculator import load_scenario
from calculator.inputs.presets import model_presets
from calculator.names import Phase
from calculator.report.estimate import build_context
from calculator.timing.lengths import balanced_straggler_factor, fit_lengths, straggler_factor
from calculator.timing.overheads import DATAPROTO_BYTES_PER_TOKEN, num_weight_tensors
from calculator.timing.step import phase_times
from tests.support.qwen7b_h100 import BASE, EFF_PCIE, H100_PCIE5, P7, times

MODELS = model_presets()


def test_every_phase_pays_the_fixed_dispatch_and_its_data():
    """verl <= 0.8 (legacy RayPPOTrainer) handles the PADDED batch: 1024 x 5 sequences x (512 max prompt + 1024 max
    response) positions x 36 B = 283.1 MB at 1 GB/s = 0.283 s, + 1 s fixed; the weight sync ships no batch."""
    s, t = times({"verl_version": "0.8"})
    assert (s.data.max_prompt_length, s.data.max_response_length) == (512, 1024)
    data = 1024 * 5 * 1536 * DATAPROTO_BYTES_PER_TOKEN / 1e9
    assert data == pytest.approx(0.2831, abs=1e-4)
    for p, pt in t.items():
        expected = 1.0 if p == Phase.WEIGHT_SYNC else 1.0 + data
        assert pt.terms["dispatch"] == pytest.approx(expected, rel=1e-12), p
        assert "padded" in pt.notes["dispatch"]


def test_v1_trainer_moves_unpadded_samples():
    """verl 0.9 (V1 trainer, TransferQueue): 1024 x 5 sequences x 1112 real tokens x 36 B = 0.205 s + 1 s."""
    _, t = times()
    data = 1024 * 5 * 1112 * DATAPROTO_BYTES_PER_TOKEN / 1e9
    assert t[Phase.UPDATE_ACTOR].terms["dispatch"] == pytest.approx(1.0 + data, rel=1e-12)
    assert "TransferQueue" in t[Phase.UPDATE_ACTOR].notes["dispatch"]


def test_dispatch_follows_the_max_lengths_not_the_mean():
    """Same mean lengths, max response 1024 -> 4096: the driver's bytes grow by (512 + 4096) / (512 + 1024) = 3x."""
    _, t1 = times({"verl_version": "0.8"})
    _, t4 = times({"verl_version": "0.8", "data.max_response_length": 4096})
    d1 = t1[Phase.UPDATE_ACTOR].terms["dispatch"] - 1.0
    d4 = t4[Phase.UPDATE_ACTOR].terms["dispatch"] - 1.0
    assert d4 == pytest.approx(3.0 * d1, rel=1e-9)


def test_dispatch_does_not_shrink_with_more_gpus():
    _, t8 = times()
    _, t16 = times({"hardware.num_gpus": 16})
    assert t16[Phase.UPDATE_ACTOR].terms["dispatch"] == t8[Phase.UPDATE_ACTOR].terms["dispatch"]


def test_update_waits_for_the_slowest_rank():
    """verl 0.7 / 0.8: mini-batch 256 prompts x 5 = 1280 sequences over 8 FSDP ranks = 160 per rank, 4 mini-batches
    (1024 / 256); lengths: the clipped log-normal with mean 600 of max 1024 (preset); balance_batch puts the same
    length band in each mini-batch on every rank (lengths.balanced_straggler_factor)."""
    s, t = times({"verl_version": "0.8"})
    upd = t[Phase.UPDATE_ACTOR]
    d = fit_lengths(600, s.data.max_response_length, 0.01)
    f = balanced_straggler_factor(d, 512.0, 4, 160.0, 8)
    assert 1.0 < f < straggler_factor(d.cv() * 600 / 1112, 160, 8)  # banded: below the random-rank factor
    gpu = upd.terms["compute"]
    hidden = upd.terms["fsdp_comm"] + upd.terms["cpu_offload_pcie"] + upd.terms["host_overhead"]
    assert upd.terms["dp_straggler"] == pytest.approx(max(0.0, (f - 1) * gpu - hidden), rel=1e-9)
    assert "dp_straggler" not in t[Phase.OLD_LOG_PROB].terms  # balance_batch evens the whole batch's tokens
    assert "same length band" in upd.notes["dp_straggler"]


def test_weight_tensor_counts_by_hand():
    """Qwen2.5-7B: per layer q,k,v,o + 3 biases + 2 norms + gate/up/down = 12, x 28 = 336, + embedding, final norm,
    untied lm_head = 339. Qwen3-30B-A3B: q,k,v,o + q/k norms + 2 norms = 8, + router + 128 x 3 experts = 393 per
    layer x 48 = 18,864, + 3 = 18,867."""
    assert num_weight_tensors(MODELS["qwen2.5-7b"].architecture) == 339
    assert num_weight_tensors(MODELS["qwen3-30b-a3b"].architecture) == 18_867


def test_weight_sync_per_tensor_and_wake_sleep():
    _, t = times()
    w = t[Phase.WEIGHT_SYNC].terms
    assert w["per_tensor_overhead"] == pytest.approx(339 * 1e-3)  # 339 tensors x 1 ms
    assert w["engine_wake_sleep"] == 2.0
    assert "lora_base_restore" not in w


def test_moe_weight_sync_takes_tens_of_seconds():
    """Qwen3-30B-A3B: 18,867 tensors x 1 ms = 18.9 s (public refits of large MoE models: tens of seconds)."""
    s = load_scenario(BASE, overrides={"model.path": "qwen3-30b-a3b", "rollout.tensor_model_parallel_size": 4})
    w = phase_times(build_context(s))[Phase.WEIGHT_SYNC].terms
    assert w["per_tensor_overhead"] == pytest.approx(18.867)


def test_lora_wake_up_restores_the_base_weights_over_pcie():
    """Sleep level 1 keeps the base in host memory: 7.6 B params x 2 B / TP 2 per GPU over 63 GB/s x 0.8."""
    _, t = times({"model.lora_rank": 32})
    w = t[Phase.WEIGHT_SYNC].terms
    assert w["lora_base_restore"] == pytest.approx(P7 * 2 / 2 / (H100_PCIE5 * EFF_PCIE), rel=1e-9)
    assert w["per_tensor_overhead"] < 339e-3 * 2  # adapters only: 2 per adapted module per layer


def test_moe_grouped_gemm_and_load_imbalance_megatron_ep():
    """Qwen3-30B-A3B, Megatron EP 8 over 16 GPUs: rows per expert = tokens x 8 / 128 x 8; expert share of the
    compute = 48 x 8 x expert params / active matmul params; imbalance 1.2 on expert compute + all-to-all."""
    ov = {
        "model.path": "qwen3-30b-a3b",
        "hardware.num_gpus": 16,
        "rollout.tensor_model_parallel_size": 4,
        "actor.strategy": "megatron",
        "actor.megatron.expert_model_parallel_size": 8,
    }
    s = load_scenario(BASE, overrides=ov)
    ctx = build_context(s)
    upd = phase_times(ctx)[Phase.UPDATE_ACTOR]
    arch = ctx.actor.arch
    from calculator.timing.flops import gemm_efficiency, matmul_params

    tokens = ctx.r.passes[Phase.UPDATE_ACTOR].expected.tokens_per_gpu
    rows = tokens * 8 / 128 * 8
    share = 48 * 8 * arch.expert_params() / matmul_params(ctx.actor)
    compute = upd.terms["compute"] * share
    eff_g = rows / (rows + 256)
    assert upd.terms["moe_grouped_gemm"] == pytest.approx(
        max(0.0, compute / eff_g - compute / gemm_efficiency(s, tokens, ctx.gpu)), rel=1e-9
    )
    assert upd.terms["moe_load_imbalance"] == pytest.approx(0.2 * (compute / eff_g + upd.terms["tp_ep_comm"]), rel=1e-9)


def test_dense_models_have_no_moe_terms():
    _, t = times()
    assert not any(k.startswith("moe_") for pt in t.values() for k in pt.terms)


@pytest.mark.parametrize("version", ["0.6", "0.9"])
def test_unsorted_releases_pay_the_random_straggler(version: str):
    """verl 0.5 / 0.6 keep each rank's partition in batch order, and so does the 0.9 V1 trainer: the straggler follows
    the whole spread, 1 + cv / sqrt(160) x E[max of 8 normals] with cv of prompt + response = cv_R x 600 / 1112."""
    s, t = times({"verl_version": version})
    upd = t[Phase.UPDATE_ACTOR]
    d = fit_lengths(600, s.data.max_response_length, 0.01)
    f = straggler_factor(d.cv() * 600 / 1112, 1280 / 8, 8)
    gpu = upd.terms["compute"]
    hidden = upd.terms["fsdp_comm"] + upd.terms["cpu_offload_pcie"] + upd.terms["host_overhead"]
    assert upd.terms["dp_straggler"] == pytest.approx(max(0.0, (f - 1) * gpu - hidden), rel=1e-9)
    assert "keeps batch order" in upd.notes["dp_straggler"]
