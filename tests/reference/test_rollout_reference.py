"""The rollout engine budget against public vLLM / SGLang logs (shared/reference/calibration_cases.yaml).

Each case states its source and tolerance. The budget identity (KV = total x util - weights - activation -
non-torch) is checked with the logged terms; our activation model is checked where the case is comparable.
"""

from __future__ import annotations

import pytest

from calculator.inputs.constants import OverheadConfig
from calculator.inputs.presets import model_presets
from calculator.memory.engine import BLOCK_SIZE_TOKENS, engine_budget
from calculator.memory.vllm_profile import profile_run
from calculator.resolve.engines import EngineSettings
from calculator.units import GIB_BYTES, gib_to_bytes

MODELS = model_presets()


def settings(**kw) -> EngineSettings:
    base = dict(
        engine="vllm",
        tp=1,
        gpu_memory_utilization=0.9,
        max_num_batched_tokens=8192,
        max_num_seqs=256,
        max_model_len=8192,
        enable_chunked_prefill=True,
        enforce_eager=True,
        weight_bytes_per_param=2,
        kv_dtype_bytes=2,
        sampler_log_softmax=False,  # these logs predate verl's logprobs_mode=processed_logprobs (V0 / raw logprobs)
    )
    base.update(kw)
    return EngineSettings(**base)


def test_kv01_llama31_8b_rtx3090():
    """KV-01 (vllm-project/vllm#10517, vLLM V0 ~0.6.4): RTX 3090 23.58 GiB, util 0.9, max_model_len 20000, chunked
    prefill off (profile over 20000 tokens). Logged: weights 14.99 GB, activation peak 2.1 GiB, non-torch 0.35 GiB,
    KV 3.81 GiB = 1952 blocks. Tolerance: weights exact (<0.5%), activation model within 15%, KV within 10%
    (V0 graphs were captured after the KV budget: modelled with enforce_eager here)."""
    arch = MODELS["llama3.1-8b"].architecture
    st = settings(max_num_batched_tokens=20000, max_model_len=20000, enable_chunked_prefill=False)
    ov = OverheadConfig(vllm_non_torch_gib=0.35)
    eb = engine_budget(arch, st, gib_to_bytes(23.58), ov, arch.total_params())
    assert eb.weights_bytes / GIB_BYTES == pytest.approx(14.96, rel=0.005)
    assert profile_run(arch, st).peak_bytes / GIB_BYTES == pytest.approx(2.1, rel=0.15)
    assert eb.kv_cache_bytes / GIB_BYTES == pytest.approx(3.81, rel=0.10)
    # Identity with the logged terms: 23.58 x 0.9 - 17.06 (peak torch incl. weights) - 0.35 = 3.81 GiB.
    assert 23.58 * 0.9 - 17.06 - 0.35 == pytest.approx(3.81, abs=0.01)
    # Blocks: 1952 x 16 tokens x 128 KiB = 3.8125 GiB.
    assert 1952 * BLOCK_SIZE_TOKENS * arch.kv_cache_bytes_per_token() / GIB_BYTES == pytest.approx(3.8125)


def test_kv06_qwen3_235b_fp8_tp4():
    """KV-06 (vllm-project/vllm#21348): Qwen3-235B-A22B-FP8, TP4 on H100. vLLM logged 8.11 GiB available ->
    178,880 tokens; per-GPU KV 48,128 B/token. Tolerance 2% on tokens from the logged GiB (rounding)."""
    arch = MODELS["qwen3-235b-a22b"].architecture
    per_tok = arch.kv_cache_bytes_per_token(2, tp=4)
    assert per_tok == 48128
    tokens = int(8.11 * GIB_BYTES) // (BLOCK_SIZE_TOKENS * per_tok) * BLOCK_SIZE_TOKENS
    assert tokens == pytest.approx(178880, rel=0.02)
    # FP8 weights: 235.1e9 x 1 B / 4 = 54.7 GiB per GPU (the issue thread's figure).
    st = settings(tp=4, weight_bytes_per_param=1)
    eb = engine_budget(arch, st, gib_to_bytes(79.22), OverheadConfig(), arch.total_params())
    assert eb.weights_bytes / GIB_BYTES == pytest.approx(54.7, rel=0.01)


def test_kv06_sglang_pool():
    """KV-06, SGLang 0.5 with mem_fraction_static 0.93 on the same GPUs: 367,404 KV tokens (K and V 8.23 GiB
    each). Our SGLang formula (free_before_load x f - weights, free_before_load = total - CUDA context - NCCL
    ~1 GiB) gives within 15%; SGLang also keeps other small buffers in the fraction."""
    arch = MODELS["qwen3-235b-a22b"].architecture
    st = settings(engine="sglang", tp=4, gpu_memory_utilization=0.93, weight_bytes_per_param=1)
    eb = engine_budget(
        arch, st, gib_to_bytes(79.22), OverheadConfig(), arch.total_params(), trainer_resident_bytes=gib_to_bytes(1.0)
    )
    assert eb.kv_tokens == pytest.approx(367404, rel=0.15)
    assert 367404 * 94 * 128 * 2 / GIB_BYTES == pytest.approx(8.23, abs=0.01)  # K pool as logged


def test_kv07_budget_identity():
    """KV-07 (vllm-project/vllm#12330, vLLM V0 ~0.6.6): A100-40GB 39.50 GiB, util 0.9 -> 35.55 GiB; weights
    14.96, non-torch 0.1, activation peak 9.37, KV 11.12 GiB = 5691 blocks. The identity holds with the logged
    terms. Our activation model gives ~1.2 GiB for this profile (8192 tokens + sampler), far below the logged
    9.37 GiB: that V0 release's profile run is not what vLLM 0.24 does, and the case is not used to set constants."""
    arch = MODELS["llama3.1-8b"].architecture  # Meta-Llama-3-8B has the same shapes
    assert 35.55 - 14.96 - 0.1 - 9.37 == pytest.approx(11.12, abs=0.01)
    assert 5691 * BLOCK_SIZE_TOKENS * arch.kv_cache_bytes_per_token() / GIB_BYTES == pytest.approx(11.115, abs=0.001)
    st = settings(max_num_batched_tokens=8192, enable_chunked_prefill=False)
    ours = profile_run(arch, st).peak_bytes / GIB_BYTES
    assert 0.8 < ours < 1.5


def test_cuda_graph_sizes_match_vllm_capture_list():
    """verl's max_num_seqs 256 -> capture sizes up to 512: [1,2,4] + 8..248 step 8 + 256..512 step 16 = 51."""
    from calculator.memory.engine import num_cuda_graphs

    assert num_cuda_graphs(settings(max_num_seqs=256)) == 51
    assert num_cuda_graphs(settings(max_num_seqs=16)) == 3 + 4  # up to 32: [1,2,4,8,16,24,32]


@pytest.mark.parametrize(
    ("model", "tp", "logged_gib"),
    [
        # vllm-project/vllm#17469 (vLLM 0.8.5, Qwen3-30B-A3B bf16, TP 4): "Model loading took 14.2474 GiB"
        ("qwen3-30b-a3b", 4, 14.2474),
        # vllm-project/vllm#18446 (Qwen3-235B-A22B bf16, 8 ranks): "Model loading took 54.9206 GiB"
        ("qwen3-235b-a22b", 8, 54.9206),
    ],
)
def test_moe_rollout_weights_public_logs(model: str, tp: int, logged_gib: float):
    """MoE weights per rank as vLLM logged them. Tolerance 1% (the norms, router and rotary buffers vLLM also
    holds are not in the parameter count's split)."""
    from calculator.memory.engine import rollout_weight_bytes

    arch = MODELS[model].architecture
    w, _ = rollout_weight_bytes(arch, settings(tp=tp), arch.total_params())
    assert w / GIB_BYTES == pytest.approx(logged_gib, rel=0.01)


def test_kv06_fp8_moe_profile_peak():
    """KV-06 (vllm-project/vllm#21348): Qwen3-235B-A22B-FP8, TP 4, util 0.9, vLLM ~0.9 (graphs outside the
    budget), API-server defaults max_num_batched_tokens 8192 / max_num_seqs 1024, logged 8.11 GiB of KV.

    Before the fused-MoE workspace and the sampler noise were modelled the KV came out 13.74 GiB (1.69x, the
    "~1.7x too large" of issue 14); with them and the profile's max(forward, hidden + sampler) 12.93 GiB (1.59x).
    Tolerance: within 1.6x of the log, a stated
    miss: that run also had an LMCache connector (``--kv-transfer-config LMCacheConnectorV1``) whose buffers the
    model does not know, and vLLM 0.9's non-torch growth at TP 4 was not logged. The mechanism is checked by hand
    in tests/memory/test_vllm_profile.py; this case bounds it."""
    arch = MODELS["qwen3-235b-a22b"].architecture
    st = settings(tp=4, weight_bytes_per_param=1, max_num_seqs=1024, max_model_len=40960, enforce_eager=False)
    eb = engine_budget(arch, st, gib_to_bytes(79.22), OverheadConfig(), arch.total_params(), graphs_in_budget=False)
    # profile: max(forward 8192 x 179,776 B = 1.37 GiB, workspace 8192 x 131,072 (1 GiB) + hidden 8192 x 8192
    # (0.06 GiB) + sampler 1024 x 151,936 x 14 B (2.03 GiB)) = 3.09 GiB
    assert eb.activation_bytes / GIB_BYTES == pytest.approx(3.09, abs=0.01)
    assert 8.11 < eb.kv_cache_bytes / GIB_BYTES < 1.6 * 8.11
