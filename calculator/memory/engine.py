"""Rollout engine memory: vLLM's KV budget (and SGLang's), KV capacity and concurrency per replica.

Worked example (vLLM 0.24, the identity in ``vllm/v1/worker/gpu_worker.py``
``determine_available_memory``; numbers for Qwen2.5-7B, TP 2, H100 79.22 GiB, util 0.5)::

    budget      = total x util                         = 79.22 x 0.5          = 39.61 GiB
    weights     = params x 2 B / TP                    = 7.616e9 x 2 / 2      =  7.09 GiB
    activation  = max(profile forward over max_num_batched_tokens (8192), hidden states + sampler dummy)
    non_torch   = growth outside torch during profiling (cuBLAS/attention workspaces)
    cuda graphs = estimate subtracted inside the budget (default since vLLM 0.21)
    KV          = budget - weights - activation - non_torch - cuda graphs

The budget is a share of TOTAL memory, not of free memory: memory held by the colocated trainer
does not shrink it, but vLLM refuses to start unless free memory at start >= total x util
(``vllm/v1/worker/utils.py`` ``request_memory``: "Free memory on device ... on startup is less than
desired GPU memory utilization"). The CUDA context and the NCCL communicators created before the
profiler's baseline snapshot are outside the budget (vLLM issue #12059).

SGLang 0.5 sizes its static pool from FREE memory (``model_runner.py``: rest = free_after_load -
free_before_load x (1 - mem_fraction_static)), so memory held by the trainer shrinks the KV pool one
for one.
"""

from __future__ import annotations

from dataclasses import dataclass

from calculator.inputs.constants import OverheadConfig
from calculator.memory.vllm_profile import (
    LOG_SOFTMAX_BYTES_PER_LOGIT as LOG_SOFTMAX_BYTES_PER_LOGIT,
)
from calculator.memory.vllm_profile import (
    SAMPLER_BYTES_PER_LOGIT as SAMPLER_BYTES_PER_LOGIT,
)
from calculator.memory.vllm_profile import (
    SAMPLER_NOISE_BYTES_PER_LOGIT as SAMPLER_NOISE_BYTES_PER_LOGIT,
)
from calculator.memory.vllm_profile import profile_run
from calculator.memory.vllm_profile import sampler_bytes_per_logit as sampler_bytes_per_logit
from calculator.model.activations import forward_working_bytes_per_token
from calculator.model.architecture import Architecture
from calculator.resolve.engines import EngineSettings
from calculator.units import GIB_BYTES, MIB_BYTES, format_gib

BLOCK_SIZE_TOKENS = 16  # vLLM default block size (vllm/config/cache.py)
CUDA_GRAPH_MODES = 2  # verl sets cudagraph_mode FULL_AND_PIECEWISE: two graph families


def rollout_weight_bytes(arch: Architecture, settings: EngineSettings, num_params: int) -> tuple[int, str]:
    """Per-GPU weights of one engine rank and the formula.

    - bf16: 2 B/param; fp8 (``quantization=fp8``, vLLM Fp8LinearMethod / Fp8MoEMethod): 1 B for the linear
      layers and experts, while the embedding, the LM head and the norms stay in bf16 (vLLM quantizes only
      LinearBase / FusedMoE layers; VocabParallelEmbedding and ParallelLMHead keep the model dtype);
    - everything is split by TP; the routed experts are split over TP x DP ranks (vLLM
      ``FusedMoEParallelConfig.make`` flattens TP across DP: with ``enable_expert_parallel`` whole experts, E / (TP x
      DP) per rank, otherwise every expert's intermediate / (TP x DP)).
    Left out: the norms at 2 B in fp8 (under 0.01 % of the params), fp8 block scales (1/16384 per weight)."""
    b = settings.weight_bytes_per_param
    tp, dp = settings.tp, settings.data_parallel
    experts = arch.num_experts * arch.expert_params() * arch.num_moe_layers if arch.is_moe else 0
    experts = min(experts, num_params)
    bf16_part = min(num_params - experts, arch.embedding_params() + arch.lm_head_params()) if b == 1 else 0
    rest = num_params - experts - bf16_part
    ep = tp * dp
    w = (rest * b + bf16_part * 2) // tp + experts * b // ep
    if not bf16_part and ep == tp:
        return w, f"{num_params:,} params x {b} B / TP {tp}"
    parts = [f"{rest + (experts if ep == tp else 0):,} params x {b} B / TP {tp}"]
    if bf16_part:
        parts.append(f"embedding + lm_head {bf16_part:,} x 2 B (kept bf16) / TP {tp}")
    if ep != tp:
        how = "EP" if settings.expert_parallel else "MoE TP"
        parts.append(f"routed experts {experts:,} x {b} B / {how} {ep} (TP x DP)")
    return w, "(" + ") + (".join(parts) + ")"


@dataclass(frozen=True)
class EngineBudget:
    """Per-GPU memory of one engine replica's GPU."""

    total_bytes: int
    budget_bytes: int
    weights_bytes: int
    activation_bytes: int
    non_torch_bytes: int
    cuda_graph_bytes: int
    kv_cache_bytes: int  # may be <= 0: the engine would fail to start
    kv_bytes_per_token_per_gpu: int
    num_blocks: int
    formulas: dict[str, str]
    data_parallel: int = 1  # engines (vLLM DP ranks) in one replica, each with this budget and its own KV cache

    @property
    def kv_tokens(self) -> int:
        """KV tokens of ONE engine (one DP rank's TP group): vLLM's start check needs one max_model_len here."""
        return self.num_blocks * BLOCK_SIZE_TOKENS

    @property
    def kv_tokens_per_replica(self) -> int:
        """KV tokens of a replica: each of its DP ranks holds its own KV cache for its own sequences
        (verl ``vllm_async_server.py`` passes data_parallel_size to one vLLM server per replica; vLLM runs one
        EngineCore per DP rank, each sizing its cache from its own profile)."""
        return self.kv_tokens * self.data_parallel


def num_cuda_graphs(settings: EngineSettings) -> int:
    """Captured batch sizes per mode: [1, 2, 4] + 8..248 step 8 + 256..max step 16 (vllm/config/vllm.py)."""
    top = settings.capture_limit
    sizes = [x for x in (1, 2, 4) if x <= top] + list(range(8, min(top + 1, 256), 8)) + list(range(256, top + 1, 16))
    return len(sizes)


def cuda_graph_bytes(arch: Architecture, settings: EngineSettings, ov: OverheadConfig) -> int:
    """CUDA-graph pool: the largest capture's activation buffers plus a per-graph cost for every
    captured size in both modes (vLLM ``profile_cudagraph_memory``: first capture + per-graph x (n-1),
    per-graph at least 1 MiB). ``enforce_eager`` captures nothing."""
    if settings.enforce_eager:
        return 0
    first = settings.largest_capture * forward_working_bytes_per_token(arch, settings.tp)
    graphs = CUDA_GRAPH_MODES * num_cuda_graphs(settings)
    return int(first + graphs * ov.vllm_cuda_graph_per_graph_mib * MIB_BYTES)


def engine_budget(
    arch: Architecture,
    settings: EngineSettings,
    total_bytes: int,
    ov: OverheadConfig,
    num_params: int,
    trainer_resident_bytes: int = 0,
    graphs_in_budget: bool = True,
) -> EngineBudget:
    """Per-GPU budget of one engine. ``trainer_resident_bytes`` matters only for SGLang (free-memory based).
    ``graphs_in_budget``: vLLM >= 0.21 subtracts its CUDA-graph estimate inside the budget; older vLLM
    (verl <= 0.8) captured the graphs after sizing the KV cache, on top of the budget."""
    tp = settings.tp
    weights, weights_formula = rollout_weight_bytes(arch, settings, num_params)
    profile = profile_run(arch, settings)
    act = profile.peak_bytes  # the profile run's torch peak above the weights, with its formula below
    non_torch = int(ov.vllm_non_torch_gib * GIB_BYTES)
    graphs = cuda_graph_bytes(arch, settings, ov)
    kv_tok = arch.kv_cache_bytes_per_token(settings.kv_dtype_bytes, tp)
    util = settings.gpu_memory_utilization
    budget = int(total_bytes * util)
    f: dict[str, str] = {}
    if settings.engine == "sglang":
        # SGLang (model_runner.py): rest = free_after_load - free_before_load x (1 - f), i.e.
        # KV = free_before_load x f - weights, where free_before_load = total - memory already held on the
        # GPU (the colocated trainer's state, CUDA contexts, NCCL). Activations and CUDA graphs must live in
        # the remaining (1 - f) share.
        free_before = max(0, total_bytes - trainer_resident_bytes)
        budget = int(free_before * util)
        kv = budget - weights
        f["kv_cache"] = (
            f"SGLang: (total {format_gib(total_bytes)} - held by others {format_gib(trainer_resident_bytes)})"
            f" x mem_fraction_static {util} - weights {format_gib(weights)}"
        )
        non_torch = 0  # outside the fraction; activations (act) and graphs are also outside it but still allocated
    else:
        in_budget = graphs if graphs_in_budget else 0
        kv = budget - weights - act - non_torch - in_budget
        f["kv_cache"] = (
            f"vLLM: {format_gib(total_bytes)} x util {util} = {format_gib(budget)} - weights "
            f"{format_gib(weights, unit=False)} - activation {format_gib(act, unit=False)} - non-torch "
            f"{format_gib(non_torch, unit=False)}"
            + (f" - CUDA graphs {format_gib(graphs)}" if graphs_in_budget else " (CUDA graphs on top)")
        )
    blocks = max(0, kv) // (BLOCK_SIZE_TOKENS * kv_tok) if kv_tok else 0
    f["rollout_weights"] = weights_formula
    f["rollout_activations"] = profile.formula
    f["rollout_non_torch"] = (
        f"vLLM non-torch growth during profiling, {ov.vllm_non_torch_gib} GiB (overheads.vllm_non_torch_gib)"
    )
    f["cuda_graphs"] = (
        "0 (enforce_eager)"
        if settings.enforce_eager
        else f"largest capture ({settings.largest_capture} tokens) "
        f"activations + {CUDA_GRAPH_MODES} modes x {num_cuda_graphs(settings)} sizes x "
        f"{ov.vllm_cuda_graph_per_graph_mib} MiB"
    )
    f["kv_tokens"] = f"floor(KV / ({BLOCK_SIZE_TOKENS} tokens x {kv_tok} B/token/GPU)) blocks x {BLOCK_SIZE_TOKENS}"
    return EngineBudget(
        total_bytes=total_bytes,
        budget_bytes=budget,
        weights_bytes=weights,
        activation_bytes=act,
        non_torch_bytes=non_torch,
        cuda_graph_bytes=graphs,
        kv_cache_bytes=kv,
        kv_bytes_per_token_per_gpu=kv_tok,
        num_blocks=int(blocks),
        formulas=f,
        data_parallel=settings.data_parallel if settings.engine == "vllm" else 1,
    )


def max_concurrent_sequences(eb: EngineBudget, max_num_seqs: int, seq_len: int) -> int:
    """Sequences one engine (one DP rank) runs at once: KV blocks per sequence of ``seq_len`` tokens against its
    pool, capped by ``max_num_seqs`` (vLLM's scheduler admits a request only when its blocks fit)."""
    per_seq_blocks = -(-max(seq_len, 1) // BLOCK_SIZE_TOKENS)
    return min(max_num_seqs, eb.num_blocks // per_seq_blocks)


def replica_concurrent_sequences(eb: EngineBudget, max_num_seqs: int, seq_len: int) -> int:
    """Sequences a replica runs at once: each of its DP ranks schedules its own ``max_num_seqs`` against its own
    KV cache (vLLM ``EngineCore`` per DP rank)."""
    return eb.data_parallel * max_concurrent_sequences(eb, max_num_seqs, seq_len)
