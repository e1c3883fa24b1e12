"""vLLM's profile run (calculator/memory/vllm_profile.py): the fused-MoE workspace by hand for Qwen3-30B-A3B
(h 2048, moe_intermediate 768, top_k 8, 128 experts, vocab 151,936), its sharding over TP x DP with and without
expert parallelism, the DP all-gather, fp8 quantisation buffers, and max(forward, hidden + sampler)."""

from __future__ import annotations

from dataclasses import replace

from calculator.inputs.presets import model_presets
from calculator.memory.engine import rollout_weight_bytes
from calculator.memory.vllm_profile import (
    expert_shard_intermediate,
    moe_gathered_bytes_per_token,
    moe_workspace_bytes_per_token,
    profile_forward_bytes_per_token,
    profile_run,
)
from calculator.resolve.engines import EngineSettings

MOE = model_presets()["qwen3-30b-a3b"].architecture
DENSE = model_presets()["qwen2.5-7b"].architecture
BASE = EngineSettings(
    engine="vllm",
    tp=4,
    gpu_memory_utilization=0.9,
    max_num_batched_tokens=8192,
    max_num_seqs=256,
    max_model_len=40960,
    enable_chunked_prefill=True,
    enforce_eager=True,
    weight_bytes_per_param=2,
    kv_dtype_bytes=2,
)
EP_DP8 = replace(BASE, tp=1, data_parallel=8, expert_parallel=True)


def test_expert_shard_follows_fused_moe_parallel_config():
    # FusedMoEParallelConfig.make: TP flattened across DP; EP keeps whole experts.
    assert expert_shard_intermediate(MOE, BASE) == 768 // 4 == 192
    assert expert_shard_intermediate(MOE, replace(BASE, tp=2, data_parallel=2)) == 768 // 4
    assert expert_shard_intermediate(MOE, EP_DP8) == 768


def test_workspace_by_hand():
    # TritonExperts.workspace_shapes: ws13 (M, k, max(I, h)) shared with the (M, h) output, ws2 (M, k, max(2I, h)).
    # TP 4: I = 192 -> bf16 x (8 x max(192, 2048) + 8 x max(384, 2048)) = 2 x (16,384 + 16,384) = 65,536 B/token.
    assert moe_workspace_bytes_per_token(MOE, BASE) == 65_536
    # EP: I = 768 -> 2 x (8 x 2048 + 8 x max(1536, 2048)) = 65,536 as well (h dominates).
    assert moe_workspace_bytes_per_token(MOE, EP_DP8) == 65_536
    # + gathered input and combined output 2 x 2h = 8,192 + routing 8 x (4 + 4 + 4) = 96
    assert moe_gathered_bytes_per_token(MOE, BASE) == 65_536 + 8_192 + 96 == 73_824


def test_fp8_quantisation_buffers():
    # w8a8 block quant: fp8 input h + fp8 activation output k x I, one fp32 scale per 128 values of each.
    # EP (I = 768): (2048 + 8 x 768) + 4 x (2048/128 + 8 x 768/128) = 8,192 + 4 x (16 + 48) = 8,448.
    fp8 = replace(EP_DP8, weight_bytes_per_param=1)
    assert moe_gathered_bytes_per_token(MOE, fp8) == 73_824 + 8_448


def test_moe_layer_per_local_token_counts_every_dp_rank():
    # local: residual, normed input, layer input 3 x 2h = 12,288 + bf16 router logits 2 x 128 = 256 (no shared
    # experts); DP 8 all-gathers 8 ranks' tokens into the fused MoE.
    assert profile_forward_bytes_per_token(MOE, BASE) == 12_544 + 73_824 == 86_368
    assert profile_forward_bytes_per_token(MOE, EP_DP8) == 12_544 + 8 * 73_824 == 603_136
    # a dense model keeps the shared forward working set: 2 x (3h + 3 x I / TP)
    assert profile_forward_bytes_per_token(DENSE, replace(BASE, tp=2)) == 2 * (3 * 3584 + 3 * 18944 // 2)


def test_profile_peak_is_the_larger_step():
    # EP DP 8, 8192 tokens: forward 8192 x 603,136 = 4,940,890,112; after it the workspace stays
    # (8192 x 8 x 65,536 = 4,294,967,296) with the hidden states 8192 x 4096 = 33,554,432 and the sampler
    # 256 x 151,936 x 18 = 700,121,088: 5,028,642,816 > the forward -> the sampler step is the peak.
    run = profile_run(MOE, EP_DP8)
    assert run.forward_bytes == 4_940_890_112
    assert run.persistent_bytes == 4_294_967_296
    assert run.hidden_bytes == 33_554_432 and run.sampler_bytes == 700_121_088
    assert run.peak_bytes == 5_028_642_816
    assert "8 DP ranks' tokens gathered" in run.formula
    # TP 4, DP 1: forward 8192 x 86,368 = 707,526,656 < workspace 536,870,912 + hidden + sampler
    run = profile_run(MOE, BASE)
    assert run.peak_bytes == 536_870_912 + 33_554_432 + 700_121_088


def test_routed_experts_split_over_tp_times_dp_without_ep():
    # vLLM flattens TP across DP for FusedMoE: with DP 2 the experts are split 4 ways even without EP.
    p = MOE.total_params()
    experts = MOE.num_experts * MOE.expert_params() * MOE.num_moe_layers
    st = replace(BASE, tp=2, data_parallel=2)
    w, formula = rollout_weight_bytes(MOE, st, p)
    assert w == (p - experts) * 2 // 2 + experts * 2 // 4
    assert "MoE TP 4 (TP x DP)" in formula
    w_ep, formula_ep = rollout_weight_bytes(MOE, replace(st, expert_parallel=True), p)
    assert w_ep == w and "EP 4" in formula_ep


def test_older_vllm_chunks_the_fused_experts():
    """vLLM <= 0.12 (verl <= 0.8) runs the fused experts in chunks of VLLM_FUSED_MOE_CHUNK_SIZE = 16384 tokens, so the
    workspace is sized for one chunk; vLLM 0.18 / 0.24 (verl 0.9.x) size it for every gathered token."""
    old = replace(EP_DP8, fused_moe_chunk_tokens=16384)
    run = profile_run(MOE, old)
    # 8 DP ranks x 8192 = 65,536 gathered tokens, workspace for 16,384 of them:
    # forward 4,940,890,112 - (65,536 - 16,384) x 65,536 = 1,719,664,640
    assert run.forward_bytes == 1_719_664_640
    assert run.persistent_bytes == 16_384 * 65_536 == 1_073_741_824
    assert run.peak_bytes == 1_073_741_824 + 33_554_432 + 700_121_088  # the sampler step
    assert "workspace for 16384 tokens (VLLM_FUSED_MOE_CHUNK_SIZE)" in run.formula
    assert profile_run(MOE, replace(BASE, fused_moe_chunk_tokens=16384)) == profile_run(MOE, BASE)  # 8192 < chunk


def test_release_picks_the_chunking():
    from calculator.resolve.versions import behaviour

    assert behaviour("0.9.1").vllm_fused_moe_chunk_tokens == 0 and behaviour("0.9.0").vllm_fused_moe_chunk_tokens == 0
    assert behaviour("0.8").vllm_fused_moe_chunk_tokens == 16384
