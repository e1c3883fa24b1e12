"""FLOP counts, link bandwidths and the phase-time record (calculator/timing/flops.py), hand-checked."""

from __future__ import annotations

import pytest

from calculator import load_scenario
from calculator.model.roles import lora_params
from calculator.report.estimate import build_context
from calculator.timing.flops import (
    FULL_RECOMPUTE,
    NO_RECOMPUTE,
    PhaseTime,
    Recompute,
    achieved_fraction,
    attention_flops_per_token,
    collective_bytes_per_s,
    fmt_s,
    forward_flops_per_token,
    gemm_efficiency,
    hbm_bytes_per_s,
    matmul_params,
    pcie_bytes_per_s,
    peak_flops,
    ridge_flop_per_byte,
    ridge_ratio,
    ring_fraction,
    strided_group_bytes_per_s,
    train_flops_per_token,
    trainable_matmul_params,
    verl_counted_flops_per_token,
)
from tests.support.qwen7b_h100 import (
    BASE,
    EFF_DECODE,
    EFF_NET,
    EFF_NVLINK,
    EFF_PCIE,
    H100_HBM,
    H100_NVLINK_UNI,
    H100_PCIE5,
    H100_TFLOPS,
    HEAD_DIM,
    HEADS,
    LAYERS,
    N_MM,
    P7,
    H,
    V,
)


def test_collective_bandwidth_across_nodes():
    s = load_scenario(BASE, overrides={"hardware.num_gpus": 16})
    gpu = build_context(s).gpu
    assert collective_bytes_per_s(s, gpu, 8) == pytest.approx(H100_NVLINK_UNI * EFF_NVLINK)
    # 8 NICs x 50 GB/s per node at 70%, below NVLink's 337.5 GB/s
    assert collective_bytes_per_s(s, gpu, 16) == pytest.approx(8 * 50e9 * EFF_NET)


def _role(overrides: dict | None = None):
    s = load_scenario(BASE, overrides=overrides or {})
    return s, build_context(s)


def test_matmul_params_policy_and_value_head():
    """A policy's matmul weights are all but the input embedding (untied lm_head included); a value model swaps
    the V x h lm_head for an h x 1 score head."""
    _, ctx = _role()
    assert matmul_params(ctx.actor) == N_MM == P7 - V * H
    _, ppo = _role({"algorithm.adv_estimator": "gae"})
    assert matmul_params(ppo.critic) == N_MM - V * H + H


def test_attention_flops():
    """Per layer: L x (q_dim + o_dim) per causal token at sequence L; 2 c (q_dim + o_dim) per decode token."""
    _, ctx = _role()
    arch = ctx.actor.arch
    assert attention_flops_per_token(arch, 1000, causal=True) == LAYERS * 1000 * (2 * HEADS * HEAD_DIM)
    assert attention_flops_per_token(arch, 1000, causal=False) == 2 * LAYERS * 1000 * (2 * HEADS * HEAD_DIM)


def test_train_flops_full_lora_and_recompute():
    s, ctx = _role()
    attn = attention_flops_per_token(ctx.actor.arch, 1112, causal=True)
    executed, model = train_flops_per_token(s, ctx.actor, 1112, recompute=NO_RECOMPUTE)
    assert executed == model == 6 * N_MM + 3 * attn
    executed, model = train_flops_per_token(s, ctx.actor, 1112, recompute=FULL_RECOMPUTE)
    assert model == 6 * N_MM + 3 * attn and executed == 8 * N_MM + 4 * attn  # one more forward
    selective = Recompute(0.0, 1.0)
    assert train_flops_per_token(s, ctx.actor, 1112, recompute=selective)[0] == 6 * N_MM + 4 * attn
    lora_s, lora_ctx = _role({"model.lora_rank": 32})
    adapters = lora_params(lora_ctx.actor.arch, 32, "all-linear")
    assert trainable_matmul_params(lora_s, lora_ctx.actor) == adapters
    # frozen base: forward + input grads (4N), no weight grads; the adapters' own 6 N_lora
    assert (
        train_flops_per_token(lora_s, lora_ctx.actor, 1112, recompute=NO_RECOMPUTE)[1]
        == 4 * N_MM + 6 * adapters + 3 * attn
    )
    assert forward_flops_per_token(ctx.actor, 1112) == 2 * N_MM + attn


@pytest.mark.parametrize(
    ("tokens", "eff"), [(0, 1 / 129), (1, 1 / 129), (128, 0.5), (384, 0.75), (1 << 20, (1 << 20) / ((1 << 20) + 128))]
)
def test_gemm_efficiency(tokens: float, eff: float):
    s, _ = _role()
    assert gemm_efficiency(s, tokens) == pytest.approx(eff)


def test_rates_of_an_h100():
    s, ctx = _role()
    gpu = ctx.gpu
    assert peak_flops(gpu) == H100_TFLOPS
    assert hbm_bytes_per_s(s, gpu) == pytest.approx(H100_HBM * EFF_DECODE)
    assert pcie_bytes_per_s(s, gpu) == pytest.approx(H100_PCIE5 * EFF_PCIE)


@pytest.mark.parametrize(("n", "share"), [(1, 0.0), (2, 0.5), (8, 7 / 8), (16, 15 / 16)])
def test_ring_fraction(n: int, share: float):
    assert ring_fraction(n) == share


def test_phase_time_and_format():
    t = PhaseTime(terms={"compute": 1.5, "comm": 0.25}, formula="f", extra={"diagnostic": 9.0})
    assert t.seconds == 1.75  # extra is not part of the sum
    assert fmt_s(1.75) == "1.75 s" and fmt_s(0.0042) == "4.2 ms" and fmt_s(0.01) == "0.01 s"


def _gpu(gpu_id: str):  # type: ignore[no-untyped-def]
    from calculator.inputs.presets import gpu_presets

    return gpu_presets()[gpu_id]


def test_ridge_points_from_the_datasheets():
    """H100-SXM 989e12 / 3350e9 = 295.2 FLOP/B (the reference: ratio 1); H20 148e12 / 4000e9 = 37.0."""
    assert ridge_flop_per_byte(_gpu("h100-80gb")) == pytest.approx(295.22, abs=0.01)
    assert ridge_ratio(_gpu("h100-80gb")) == pytest.approx(1.0, rel=1e-12)
    assert ridge_flop_per_byte(_gpu("h20-96gb")) == pytest.approx(37.0)


def test_achieved_fraction_roofline_by_hand():
    """tc 0.77, mfu 0.35: the non-tensor-core time per FLOP at H100's balance is 1/0.35 - 1/0.77 = 1.5584;
    H20 (ridge ratio 37.0 / 295.22 = 0.12533): 1 / (1.2987 + 1.5584 x 0.12533) = 0.6693;
    A100-80GB (312e12 / 2039e9 = 153.0, ratio 0.5183): 1 / (1.2987 + 0.8077) = 0.4747. H100: 0.35 itself."""
    s = load_scenario(None, {"model.path": "qwen2.5-7b"})
    assert achieved_fraction(s, _gpu("h100-80gb"), 0.35) == pytest.approx(0.35, rel=1e-12)
    assert achieved_fraction(s, _gpu("h20-96gb"), 0.35) == pytest.approx(0.6693, abs=1e-4)
    assert achieved_fraction(s, _gpu("a100-80gb"), 0.35) == pytest.approx(0.4747, abs=1e-4)
    # an MFU at or above the tensor-core ceiling is its own ceiling, on any GPU
    assert achieved_fraction(s, _gpu("h20-96gb"), 0.8) == 0.8
    # a GPU with a higher ridge than H100 (L40S: 362 / 864 = 419 FLOP/B) does worse than the H100 figure
    assert achieved_fraction(s, _gpu("l40s-48gb"), 0.35) < 0.35


def test_gemm_half_saturation_scales_with_the_ridge():
    """H20: M_half = 128 x 0.12533 = 16.04 tokens, so 128 rows reach 128 / 144.04 = 0.889 (H100: 0.5)."""
    s = load_scenario(None, {"model.path": "qwen2.5-7b"})
    assert gemm_efficiency(s, 128, _gpu("h100-80gb")) == pytest.approx(0.5, rel=1e-12)
    assert gemm_efficiency(s, 128, _gpu("h20-96gb")) == pytest.approx(128 / (128 + 128 * 37.0 / (989 / 3.35)), rel=1e-9)
    assert gemm_efficiency(s, 128) == 0.5  # no GPU: the H100 constant as stated


def _h100_nodes(num_gpus: int):
    s = load_scenario(
        None, overrides={"model.path": "qwen3-8b", "hardware.gpu": "h100-80gb", "hardware.num_gpus": num_gpus}
    )
    return s, build_context(s).gpu


def test_strided_group_bandwidth():
    """H100 nodes of 8 (NVLink 450 GB/s per direction x 0.75 = 337.5; NIC 50 GB/s x 0.7 = 35 per GPU):
    a group inside a node -> 337.5 GB/s whatever the stride; 4 ranks 1 apart over 32 GPUs -> inside a node too;
    16 ranks 1 apart -> 8 members per node: min(337.5, 35 x 8 = 280) = 280 (= collective_bytes_per_s);
    4 ranks 8 apart (one per node) -> one NIC, 35; 8 ranks 4 apart -> 2 per node: 70."""
    s, gpu = _h100_nodes(32)
    assert strided_group_bytes_per_s(s, gpu, 2, 4) == pytest.approx(337.5e9)
    assert strided_group_bytes_per_s(s, gpu, 4, 1) == pytest.approx(337.5e9)
    assert strided_group_bytes_per_s(s, gpu, 16, 1) == pytest.approx(280e9)
    assert strided_group_bytes_per_s(s, gpu, 16, 1) == pytest.approx(collective_bytes_per_s(s, gpu, 16))
    assert strided_group_bytes_per_s(s, gpu, 4, 8) == pytest.approx(35e9)
    assert strided_group_bytes_per_s(s, gpu, 8, 4) == pytest.approx(70e9)


def test_verl_counted_flops_per_token_qwen3_moe():
    """verl 0.5 counter for Qwen3-30B-A3B: active matmul weights 3,041,867,776 (LM head in, embedding out) + the
    embedding 151,936 x 2,048 = 311,164,928 -> 6 x 3,353,032,704 = 20,118,196,224; attention with Σ L² / Σ L = 3,000
    (mean 2,256, mean square 6,768,000): 12 x 3,000 x 48 layers x q_dim 4,096 = 7,077,888,000; sum 27,196,084,224.
    verl 0.9.1's coefficient 6 halves the attention: 23,657,140,224."""
    s = load_scenario(None, overrides={"model.path": "qwen3-30b-a3b"})
    arch = build_context(s).actor.arch
    assert verl_counted_flops_per_token(arch, 2256, 2256 * 3000, attention_coefficient=12) == 27_196_084_224
    assert verl_counted_flops_per_token(arch, 2256, 2256 * 3000, attention_coefficient=6) == 23_657_140_224
