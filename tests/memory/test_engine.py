"""Rollout engine memory (calculator/memory/engine.py): the worked example of the module docstring by hand (vLLM's
KV budget = total x util - weights - activation - non-torch - CUDA graphs), the CUDA-graph sizes vLLM captures,
the profile run, and SGLang's pool that shrinks one for one with what the trainer holds."""

from __future__ import annotations

from dataclasses import replace

import pytest

from calculator.inputs.constants import OverheadConfig
from calculator.inputs.presets import get_gpu, model_presets
from calculator.memory.engine import (
    BLOCK_SIZE_TOKENS,
    EngineSettings,
    cuda_graph_bytes,
    engine_budget,
    num_cuda_graphs,
)
from calculator.memory.vllm_profile import profile_run
from calculator.units import GIB_BYTES, MIB_BYTES

ARCH = model_presets()["qwen2.5-7b"].architecture
P7, V, H, INTER, LAYERS = 7_615_616_512, 152_064, 3584, 18944, 28
OV = OverheadConfig()
TOTAL = get_gpu("h100-80gb").usable_memory_bytes  # 79.22 GiB
VLLM = EngineSettings(
    engine="vllm",
    tp=2,
    gpu_memory_utilization=0.5,
    max_num_batched_tokens=8192,
    max_num_seqs=256,
    max_model_len=8192,
    enable_chunked_prefill=True,
    enforce_eager=False,
    weight_bytes_per_param=2,
    kv_dtype_bytes=2,
)
# vLLM's profile forward keeps 2 x (3h + 3 x intermediate / TP) bytes per token at TP 2 (bf16 working set).
FORWARD_PER_TOKEN = 2 * (3 * H + 3 * INTER // 2)
KV_PER_TOKEN = 2 * LAYERS * (4 // 2) * 128 * 2  # K and V x layers x KV heads per GPU x head dim x bf16


@pytest.mark.parametrize(("max_num_seqs", "graphs"), [(256, 51), (16, 7), (1, 2), (1024, 51)])
def test_captured_sizes(max_num_seqs: int, graphs: int):
    """[1, 2, 4] + 8..248 step 8 + 256..top step 16, top = min(2 x max_num_seqs, 512, max_num_batched_tokens):
    256 seqs -> 3 + 31 + 17 = 51; 16 seqs (top 32) -> 1, 2, 4, 8, 16, 24, 32; 1 seq (top 2) -> 1, 2."""
    assert num_cuda_graphs(replace(VLLM, max_num_seqs=max_num_seqs)) == graphs


def test_cuda_graph_pool_by_hand():
    top = 512  # min(2 x 256, 512, 8192)
    expected = top * FORWARD_PER_TOKEN + 2 * 51 * 4 * MIB_BYTES  # largest capture + 2 modes x 51 sizes x 4 MiB
    assert cuda_graph_bytes(ARCH, VLLM, OV) == expected
    assert cuda_graph_bytes(ARCH, replace(VLLM, enforce_eager=True), OV) == 0


def test_profile_run_by_hand():
    # The forward and the sampler dummy run one after the other: peak = max(forward, hidden states + sampler).
    # Sampler: min(8192 tokens, 256 seqs) requests x vocab x (bf16 + fp32 copy + fp32 probs + fp32 exponential noise
    # of random_sample + fp32 log_softmax of logprobs_mode=processed_logprobs) = 18 B per logit.
    forward = 8192 * FORWARD_PER_TOKEN  # 8192 x 78,336 = 641,728,512
    hidden = 8192 * 2 * H  # 58,720,256
    sampler = 256 * V * (2 + 4 + 4 + 4 + 4)  # 700,710,912
    assert profile_run(ARCH, VLLM).peak_bytes == max(forward, hidden + sampler) == hidden + sampler
    # without chunked prefill the profile runs a whole max_model_len sequence: the forward is the peak
    long = replace(VLLM, enable_chunked_prefill=False, max_model_len=20000)
    assert profile_run(ARCH, long).peak_bytes == 20000 * FORWARD_PER_TOKEN  # 1,566,720,000 > 0.84e9
    raw = replace(VLLM, sampler_log_softmax=False)  # verl <= 0.6: vLLM's raw logprobs, no log_softmax
    # hidden + 256 x V x 14 = 603,676,160 < the forward's 641,728,512: the forward is the peak
    assert profile_run(ARCH, raw).peak_bytes == max(forward, hidden + 256 * V * 14) == forward


def test_worked_example_of_the_docstring():
    b = engine_budget(ARCH, VLLM, TOTAL, OV, P7)
    assert b.budget_bytes == int(TOTAL * 0.5) and b.budget_bytes / GIB_BYTES == pytest.approx(39.61, abs=0.005)
    assert b.weights_bytes == P7 * 2 // 2 and b.weights_bytes / GIB_BYTES == pytest.approx(7.09, abs=0.005)
    assert b.non_torch_bytes == GIB_BYTES // 4
    kv = b.budget_bytes - b.weights_bytes - b.activation_bytes - b.non_torch_bytes - b.cuda_graph_bytes
    assert b.kv_cache_bytes == kv
    assert b.kv_bytes_per_token_per_gpu == KV_PER_TOKEN == 28_672
    assert b.num_blocks == kv // (BLOCK_SIZE_TOKENS * KV_PER_TOKEN) and b.kv_tokens == b.num_blocks * 16
    assert set(b.formulas) >= {"kv_cache", "rollout_weights", "rollout_activations", "cuda_graphs", "kv_tokens"}


def test_graphs_outside_the_budget_before_vllm_0_21():
    inside = engine_budget(ARCH, VLLM, TOTAL, OV, P7)
    outside = engine_budget(ARCH, VLLM, TOTAL, OV, P7, graphs_in_budget=False)
    assert outside.kv_cache_bytes - inside.kv_cache_bytes == inside.cuda_graph_bytes


def test_vllm_budget_ignores_the_trainer_sglang_pool_shrinks_with_it():
    held = 20 * GIB_BYTES
    assert engine_budget(ARCH, VLLM, TOTAL, OV, P7, trainer_resident_bytes=held) == engine_budget(
        ARCH, VLLM, TOTAL, OV, P7
    )
    sglang = replace(VLLM, engine="sglang")
    free = engine_budget(ARCH, sglang, TOTAL, OV, P7)
    busy = engine_budget(ARCH, sglang, TOTAL, OV, P7, trainer_resident_bytes=held)
    assert free.kv_cache_bytes == int(TOTAL * 0.5) - P7  # (total - 0) x f - weights
    assert busy.kv_cache_bytes == int((TOTAL - held) * 0.5) - P7
    assert free.non_torch_bytes == 0


def test_a_budget_below_the_weights_leaves_no_blocks():
    b = engine_budget(ARCH, replace(VLLM, tp=1, gpu_memory_utilization=0.1), TOTAL, OV, P7)
    assert b.kv_cache_bytes < 0 and b.num_blocks == 0 and b.kv_tokens == 0


def test_rollout_dp_ranks_each_hold_their_own_kv():
    """vLLM runs one EngineCore per DP rank (verl passes rollout.data_parallel_size to the replica's server): each
    rank sizes its own KV cache and schedules its own max_num_seqs, so a replica of DP 2 holds two caches."""
    from calculator.memory.engine import max_concurrent_sequences, replica_concurrent_sequences

    b = engine_budget(ARCH, replace(VLLM, data_parallel=2), TOTAL, OV, P7)
    one = engine_budget(ARCH, VLLM, TOTAL, OV, P7)
    assert b.kv_tokens == one.kv_tokens  # a dense model: the same budget on every rank
    assert b.kv_tokens_per_replica == 2 * b.kv_tokens and one.kv_tokens_per_replica == one.kv_tokens
    # 2048-token sequences: 128 blocks each; per engine min(256, blocks // 128), twice per replica
    per_engine = max_concurrent_sequences(b, 256, 2048)
    assert per_engine == min(256, b.num_blocks // 128)
    assert replica_concurrent_sequences(b, 256, 2048) == 2 * per_engine
