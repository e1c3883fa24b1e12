"""Activation bytes per token (calculator/model/activations.py), by hand from the saved-tensor inventory of the
module docstring, for a dense GQA model (Qwen2.5-7B), q/k-norm (Qwen3-8B), MoE (Qwen3-30B-A3B) and Gemma-2's four
fp32 norms per layer. tests/reference/test_activations_real.py checks the same formulas against the bytes the real
transformers code saves."""

from __future__ import annotations

import pytest

from calculator.inputs.presets import model_presets
from calculator.model import activations as act

MODELS = model_presets()
QWEN25 = MODELS["qwen2.5-7b"].architecture  # h 3584, 28 heads, 4 KV heads x 128, I 18944, 28 layers
QWEN3 = MODELS["qwen3-8b"].architecture  # h 4096, 32 heads, 8 KV heads x 128, I 12288, q/k norm
MOE = MODELS["qwen3-30b-a3b"].architecture  # h 2048, 32 heads x 128, 4 KV heads, 128 experts, top 8, I_moe 768
GEMMA = MODELS["gemma-2-2b"].architecture  # h 2304, 8 heads x 256, 4 KV heads, I 9216, 4 norms per layer


def norm(h: int) -> int:
    """RMSNorm: fp32 input (4h) + fp32 rsqrt (4) + bf16 normalised (2h) + bf16 output read by a linear (2h)."""
    return 4 * h + 4 + 2 * h + 2 * h


def test_dense_gqa_layer_by_hand():
    h, q, kv, heads, inter = 3584, 28 * 128, 4 * 128, 28, 18944
    attention = 2 * (q + 2 * kv) + 2 * q + 4 * heads  # q, k, v after RoPE; output; fp32 log-sum-exp per head
    mlp = 8 * inter  # gate out, activation out, up out, product: 4 x bf16
    assert act.norm_saved_bytes_per_token(h, QWEN25) == norm(h)
    assert act.attention_saved_bytes_per_token(QWEN25) == attention
    assert act.mlp_saved_bytes_per_token(QWEN25, moe=False) == mlp
    assert act.layer_saved_bytes_per_token(QWEN25) == 2 * norm(h) + attention + mlp
    assert act.all_layers_saved_bytes_per_token(QWEN25) == 28 * act.layer_saved_bytes_per_token(QWEN25)
    assert act.max_layer_saved_bytes_per_token(QWEN25) == act.layer_saved_bytes_per_token(QWEN25)


def test_qk_norm_adds_fp32_input_bf16_normalised_and_rsqrt():
    q, kv, heads, kv_heads = 32 * 128, 8 * 128, 32, 8
    plain = 2 * (q + 2 * kv) + 2 * q + 4 * heads
    assert act.attention_saved_bytes_per_token(QWEN3) == plain + 6 * (q + kv) + 4 * (heads + kv_heads)


def test_moe_layer_by_hand():
    """fp32 router softmax over 128 experts + renormalisation, then per routed copy (top 8): permuted input (2h),
    gate/up/activation/product (8 x I_moe), expert output (2h) and 39 B of int64 indices."""
    h, k, inter = 2048, 8, 768
    expected = 4 * 128 + 4 + k * (2 * 2 * h + 8 * inter + 39)
    assert act.mlp_saved_bytes_per_token(MOE, moe=True) == expected
    assert all(MOE.moe_layers) and act.max_layer_saved_bytes_per_token(MOE) == act.layer_saved_bytes_per_token(MOE, 0)


def test_gemma_norms_are_fp32_and_post_norms_feed_the_residual():
    h = 2304
    gemma_norm = 2 * 4 * h + 4  # fp32 input and fp32 normalised, rsqrt
    assert act.norm_saved_bytes_per_token(h, GEMMA) == gemma_norm + 2 * h
    assert act.norm_saved_bytes_per_token(h, GEMMA, output_saved=False) == gemma_norm
    attention = 2 * (2048 + 2 * 1024) + 2 * 2048 + 4 * 8
    assert act.layer_saved_bytes_per_token(GEMMA) == 2 * (gemma_norm + 2 * h) + 2 * gemma_norm + attention + 8 * 9216


def test_checkpointing_keeps_the_layer_input_and_final_norm():
    assert act.checkpoint_input_bytes_per_token(QWEN25) == 2 * 3584
    assert act.final_norm_saved_bytes_per_token(QWEN25) == norm(3584)


@pytest.mark.parametrize("tp", [1, 2, 4])
def test_forward_working_set(tp: int):
    """Inference forward, at the MLP: residual, normed and layer input (3 x 2h) + gate/up, activation, product
    (3 x 2 I / TP); MoE: each of the top-k copies carries 3 x 2 I_moe / TP and its 2h output."""
    assert act.forward_working_bytes_per_token(QWEN25, tp) == 2 * (3 * 3584 + 3 * 18944 // tp)
    assert act.forward_working_bytes_per_token(MOE, tp) == 2 * (3 * 2048 + 8 * (3 * 768 // tp + 2048))


def test_ulysses_sp_adds_the_second_attention_output_and_the_kv_repeats():
    """Qwen2.5-7B under Ulysses SP: the kernel's output and o_proj's all-to-all buffer are two storages (+2q); at
    SP 8 with 4 KV heads verl repeats k and v twice before the all-to-all (+2 x 2kv x (2 - 1)). No SP adds nothing."""
    q, kv = 28 * 128, 4 * 128
    assert act.ulysses_extra_bytes_per_token(QWEN25, 1) == 0
    assert act.ulysses_extra_bytes_per_token(QWEN25, 2) == 2 * q == 7168
    assert act.ulysses_extra_bytes_per_token(QWEN25, 4) == 2 * q  # 4 KV heads: no repeat
    assert act.ulysses_extra_bytes_per_token(QWEN25, 8) == 2 * q + 2 * 2 * kv == 9216


def test_ulysses_sp_on_mla_duplicates_the_output_only():
    """DeepSeek-V3's MLA: 128 heads x v_head_dim 128; k / v carry every head, so nothing is repeated."""
    arch = MODELS["deepseek-v3"].architecture
    assert act.ulysses_extra_bytes_per_token(arch, 8) == 2 * 128 * 128
