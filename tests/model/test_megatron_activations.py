"""Megatron-core saved bytes per token per layer (calculator/model/megatron_activations.py), by hand from the
saved-tensor inventory of the module docstring (megatron-core 0.16.1 + Transformer Engine, bf16, flash attention,
alltoall dispatcher with fused permute, grouped GEMM, dropout 0)."""

from __future__ import annotations

import pytest

from calculator.inputs.presets import model_presets
from calculator.model import activations as hf
from calculator.model import megatron_activations as mact
from calculator.model.megatron_activations import MegatronSplit

MODELS = model_presets()
QWEN25 = MODELS["qwen2.5-7b"].architecture  # h 3584, 28 heads, 4 KV heads x 128, I 18944, 28 layers
MOE = MODELS["qwen3-30b-a3b"].architecture  # h 2048, 32 heads x 128, 4 KV heads, q/k norm, 128 experts, top 8, I 768
DSV3 = MODELS["deepseek-v3"].architecture  # MLA, 3 dense + 58 MoE layers, 256 experts top 8, 1 shared expert
ONE = MegatronSplit()


def test_qwen3_moe_layer_by_hand():
    """Qwen3-30B-A3B, TP 1: the derivation table of the verl 8 x H20 script (no recompute)."""
    h, q, kv, heads, kv_heads, e, k, inter = 2048, 4096, 512, 32, 4, 128, 8, 768
    terms = mact.layer_terms(MOE, 0, ONE)
    assert terms == {
        "attn.qkv_layernorm_linear": 2 * h + 2 * h + 4,  # layer input + ln_out (bf16) + fp32 rsigma = 8196
        "attn.qkv_output": 2 * (q + 2 * kv),  # the QKV GEMM output, kept by the value view = 10240
        "attn.qk_layernorm": 2 * (q + kv) + 4 * (heads + kv_heads),  # q copy, k copy, rstd per head = 9360
        "attn.q_k_after_rope": 2 * (q + kv),  # saved by the flash kernel = 9216
        "attn.attention_output": 2 * q,  # flash output = linear_proj input = 8192
        "attn.log_sum_exp": 4 * heads,  # fp32 per head = 128
        "moe.pre_mlp_layernorm": 2 * h + 4 + 2 * h,  # TENorm input + rsigma, output saved by the router = 8196
        # int64 top-k + fp32 top-k softmax + fp32 dense probs + bool map + int32 row_id_map (2E + 1) = 1764
        "moe.routing_metadata": 8 * k + 4 * k + 4 * e + e + 4 * (2 * e + 1),
        # per copy: fc1 input 2h + fc1 output 4I + fp32 prob 4 + act output 2I + int32 sort map 4 = 8712; x 8
        "moe.routed_copies": k * (2 * h + 4 * inter + 4 + 2 * inter + 4),
    }
    assert mact.layer_bytes(MOE, 0, ONE) == 124_988
    # the transformers inventory (FSDP) of the same layer is 194,644 B: fp32 norm upcasts, a separate SwiGLU
    # product and the expert output before the routing-weight multiply, int64 permutation indices
    assert hf.layer_saved_bytes_per_token(MOE) == 194_644
    assert mact.all_layers_bytes(MOE, ONE) == 48 * 124_988
    assert mact.max_layer_bytes(MOE, ONE) == 124_988


def test_dense_qwen25_layer_by_hand():
    h, q, kv, heads, inter = 3584, 3584, 512, 28, 18944
    attention = (4 * h + 4) + 2 * (q + 2 * kv) + 2 * (q + kv) + 2 * q + 4 * heads  # 14340+9216+8192+7168+112
    mlp = (4 * h + 4) + 2 * 2 * inter + 2 * inter  # fused-norm fc1, fc1 output (SwiGLU input), activation output
    assert attention == 39_028 and mlp == 128_004
    assert mact.layer_bytes(QWEN25, 0, ONE) == attention + mlp == 167_032


def test_tensor_parallel_splits_heads_always_and_the_sequence_only_with_sp():
    """TP 4: heads (7 of 28, 1 of 4 KV heads) and the FFN width (4736) per rank; the norm-fused linears' input,
    ln_out and rsigma are split over TP only with sequence parallelism."""
    h, hd = 3584, 128
    q, kv, heads, inter = 7 * hd, 1 * hd, 7, 18944 // 4
    split_heads = 2 * (q + 2 * kv) + 2 * (q + kv) + 2 * q + 4 * heads + 2 * 2 * inter + 2 * inter
    no_sp = mact.layer_bytes(QWEN25, 0, MegatronSplit(tp=4, sequence_parallel=False))
    sp = mact.layer_bytes(QWEN25, 0, MegatronSplit(tp=4, sequence_parallel=True))
    assert no_sp == 2 * (4 * h + 4) + split_heads
    assert sp == 2 * ((4 * h + 4) // 4) + split_heads
    # sequence parallelism without TP splits nothing
    assert mact.layer_bytes(QWEN25, 0, MegatronSplit(tp=1, sequence_parallel=True)) == 167_032


def test_kv_heads_are_replicated_when_tp_exceeds_them():
    """TP 8 on 4 KV heads: each rank still holds one KV head (Megatron replicates them)."""
    terms = mact.attention_terms(QWEN25, MegatronSplit(tp=8, sequence_parallel=True))
    q, kv = (28 // 8) * 128, 128
    assert terms["qkv_output"] == 2 * (q + 2 * kv)


def test_expert_tensor_parallel_gathers_copies_and_splits_the_width():
    """TP 2 with SP, expert TP 2: a rank holds its T/2 tokens' copies x 2 (all-gathered) at half the width."""
    h, k, inter = 2048, 8, 768 // 2
    terms = mact.moe_terms(MOE, MegatronSplit(tp=2, sequence_parallel=True, etp=2))
    assert terms["routed_copies"] == k * 2 * (2 * h + 6 * inter + 8) // 2
    ep_only = mact.moe_terms(MOE, MegatronSplit(tp=2, sequence_parallel=True, etp=1))
    assert ep_only["routed_copies"] == k * (2 * h + 6 * 768 + 8) // 2


def test_selective_recompute_drops_only_the_log_sum_exp():
    """tensor_parallel.checkpoint saves q, k, v as its inputs and linear_proj saves the output: with flash
    attention selective core-attention recompute frees only the fp32 log-sum-exp (4 B x 32 heads)."""
    assert mact.layer_bytes(MOE, 0, ONE) - mact.layer_bytes(MOE, 0, ONE, selective=True) == 4 * 32


def test_deepseek_v3_mla_and_moe_by_hand():
    h, heads, ql, kvl, rope, nope, v = 7168, 128, 1536, 512, 64, 128, 128
    e, k, inter, shared = 256, 8, 2048, 2048
    attention = (
        (2 * h + 4)
        + 2 * h  # input_layernorm (TENorm) input + rsigma; its output saved by the down projections
        + (4 * ql + 4)  # q_up: fused q_layernorm input, ln_out, rsigma
        + 2 * (kvl + rope)  # kv down output
        + (4 * kvl + 4)  # kv_up: fused kv_layernorm
        + 2 * heads * (nope + v)  # kv up output (value is a view of it)
        + 2 * 2 * heads * (nope + rope)  # q and k after RoPE
        + 2 * heads * v  # output
        + 4 * heads  # log-sum-exp
    )
    assert sum(mact.attention_terms(DSV3, ONE).values()) == attention == 235_148
    moe = (
        (4 * h + 4)
        + (8 * k + 4 * k + 2 * 4 * e + e + 4 * (2 * e + 1))  # sigmoid router: its fp32 scores saved too
        + k * (2 * h + 6 * inter + 8)
        + 6 * shared  # shared expert fc1 output + activation output
    )
    assert mact.layer_bytes(DSV3, 3, ONE) == attention + moe
    dense = (4 * h + 4) + 6 * 18432
    assert mact.layer_bytes(DSV3, 0, ONE) == attention + dense
    assert mact.max_layer_bytes(DSV3, ONE) == attention + moe
    assert mact.all_layers_bytes(DSV3, ONE) == 3 * (attention + dense) + 58 * (attention + moe)


@pytest.mark.parametrize("name", ["qwen2.5-7b", "qwen3-30b-a3b", "deepseek-v3", "gemma-2-2b", "mixtral-8x7b-v0.1"])
@pytest.mark.parametrize("split", [ONE, MegatronSplit(4, True, 1), MegatronSplit(2, False, 2)])
def test_terms_sum_to_the_layer_and_are_positive(name, split):
    a = MODELS[name].architecture
    for i in range(a.num_layers):
        terms = mact.layer_terms(a, i, split)
        assert sum(terms.values()) == mact.layer_bytes(a, i, split)
        assert all(b > 0 for b in terms.values())


def test_gemma_post_norms_save_input_and_rsigma():
    h = 2304
    terms = mact.layer_terms(MODELS["gemma-2-2b"].architecture, 0, ONE)
    assert terms["post_norms"] == 2 * (2 * h + 4)


def test_layer_input_and_final_norm():
    assert mact.layer_input_bytes(MOE, ONE) == 2 * 2048
    assert mact.layer_input_bytes(MOE, MegatronSplit(4, True)) == 2 * 2048 // 4
    assert mact.final_norm_bytes(MOE, ONE) == 2 * 2048 + 4 + 2 * 2048


def test_pipeline_stage_layers_as_megatron_core_splits_them():
    """megatron-core 0.16.1 get_num_layers_to_build: even split; uneven first / last stages with the rest even;
    the embedding / loss counted as a layer of the first / last stage; a split it asserts against is a reason."""
    split = mact.pipeline_stage_layers
    assert split(28, 2) == (14, 14)
    assert split(94, 8, embedding=True, loss=True) == (11, 12, 12, 12, 12, 12, 12, 11)  # verl's Qwen3-235B script
    assert split(61, 12, last=6) == (5,) * 11 + (6,)  # verl's DeepSeek-V3 script (LAST_LAYER 6)
    assert split(61, 16, first=3, last=2) == (3,) + (4,) * 14 + (2,)  # NeMo RL's DeepSeek-V3 recipe
    assert split(94, 8) == "94 layers are not divisible by PP 8"
    assert "do not split" in split(61, 12, last=5)  # 56 over 11 stages
    assert "PP > 1" in split(28, 1, first=10)


def test_uneven_split_with_embedding_or_loss_is_refused():
    import pytest
    from pydantic import ValidationError

    from calculator.inputs.backends import MegatronSection

    with pytest.raises(ValidationError, match="standalone embedding"):
        MegatronSection(num_layers_in_last_pipeline_stage=6, account_for_loss_in_pipeline_split=True)
