"""vLLM's profile run: the torch peak vLLM subtracts before sizing the KV cache (vLLM 0.24).

``determine_available_memory`` (``v1/worker/gpu_worker.py``) takes the increase of torch's allocated peak over
``profile_run`` (``v1/worker/gpu_model_runner.py``), which runs two things ONE AFTER THE OTHER:

1. ``_dummy_run(max_num_tokens)``: one forward over ``max_num_batched_tokens`` tokens (``max_model_len`` with
   chunked prefill off). Its intermediates are freed when it returns; the hidden states (tokens x h, bf16) stay.
2. ``_dummy_sampler_run(last_hidden_states)``: logits for ``min(tokens, max_num_seqs)`` requests and the sampler
   over them (``v1/sample/sampler.py`` + ``ops/topk_topp_sampler.py``): the bf16 logits (held by the caller), their
   fp32 copy, fp32 probabilities, the fp32 exponential noise of ``random_sample`` and, with verl's
   ``logprobs_mode=processed_logprobs``, an fp32 ``log_softmax``. Top-k / top-p run in place (Triton kernel).

So the peak is ``max(forward, persistent + hidden + sampler)``, not their sum; "persistent" is what the forward
leaves allocated: the fused-MoE workspace below. For a dense layer the forward's working set is
``model.activations.forward_working_bytes_per_token``. An MoE layer runs the modular fused-MoE kernel
(``model_executor/layers/fused_moe/modular_kernel.py`` ``_allocate_buffers``):

- the experts are sharded as ``FusedMoEParallelConfig.make`` (``fused_moe/config.py``) says: TP is flattened
  across DP, so without expert parallelism each rank holds ``I / (TP x DP)`` of every expert's intermediate;
  with ``enable_expert_parallel`` it holds whole experts (``I``), ``E / (TP x DP)`` of them;
- with DP > 1 every rank all-gathers the tokens of all DP ranks before the experts (the default
  ``all2all_backend`` ``allgather_reducescatter``, ``distributed/device_communicators/all2all.py`` ``dispatch``:
  "Gather hidden_states and router_logits from all dp ranks"), and all DP ranks profile together, so the
  experts see ``DP x max_num_batched_tokens`` tokens (no DP chunking in 0.24);
- the workspaces (``experts/triton_moe.py`` ``TritonExperts.workspace_shapes``), bf16, per routed token:
  ``workspace13 = (M, top_k, max(I_shard, h))`` (shared with the ``(M, h)`` output) and
  ``workspace2 = (M, top_k, max(2 I_shard, h))``; they live in the ``WorkspaceManager`` (``v1/worker/
  workspace.py``), one buffer for all layers that grows to the largest request and stays allocated, so the
  profile peak keeps it;
- around them: the gathered hidden states and the combined output (2 x 2h per gathered token), the router
  logits (bf16, E) and the top-k weights / ids / token indices (fp32 + int32 + int32 per routed copy);
- fp8 weights (``Fp8MoEMethod``, w8a8 block quantisation): the input is quantised to fp8 with one fp32 scale per
  128 values (``moe_kernel_quantize_input``), and so is the activation output before the second GEMM.

Left out: DeepGEMM's per-expert alignment padding (``deep_gemm_moe.py``: M_sum = M x top_k + E_local x 127
rows, used only when DeepGEMM is installed), DeepEP / FlashInfer all-to-all buffers (other ``all2all_backend``s),
the ``moe_align_block_size`` index tensors (int32, ~M x top_k), LoRA on the experts.
"""

from __future__ import annotations

from dataclasses import dataclass

from calculator.model.activations import forward_working_bytes_per_token
from calculator.model.architecture import Architecture
from calculator.resolve.engines import EngineSettings

BF16 = 2
FP32 = 4
INT32 = 4
FP8_BLOCK = 128  # w8a8 block quantisation: one fp32 scale per 128 activations (block_shape [128, 128])
ROUTING_BYTES_PER_COPY = FP32 + INT32 + INT32  # topk_weights, topk_ids, token_expert_indices
SAMPLER_BYTES_PER_LOGIT = 2 + 4 + 4  # bf16 logits, their fp32 copy, fp32 probabilities (v1/sample/sampler.py)
# random_sample draws its noise as one more fp32 tensor the size of the probabilities
# (ops/topk_topp_sampler.py random_sample: q = empty_exponential_noise_like(probs)), alive with them.
SAMPLER_NOISE_BYTES_PER_LOGIT = 4
# verl >= 0.7 sets logprobs_mode=processed_logprobs: vLLM 0.24 TopKTopPSampler.forward_native adds an fp32
# log_softmax over the vocabulary (v1/sample/ops/topk_topp_sampler.py 136-141).
LOG_SOFTMAX_BYTES_PER_LOGIT = 4


def sampler_bytes_per_logit(settings: EngineSettings) -> int:
    """Bytes per logit at the sampler dummy's peak (module docstring, step 2)."""
    extra = LOG_SOFTMAX_BYTES_PER_LOGIT if settings.sampler_log_softmax else 0
    return SAMPLER_BYTES_PER_LOGIT + SAMPLER_NOISE_BYTES_PER_LOGIT + extra


def sampler_requests(settings: EngineSettings) -> int:
    return min(settings.profile_tokens, settings.max_num_seqs)


@dataclass(frozen=True, slots=True)
class ProfileRun:
    """The two steps of vLLM's profile run, in bytes above the weights."""

    forward_bytes: int  # the forward's peak (its working set, the MoE workspace included)
    persistent_bytes: int  # what the forward leaves allocated: the fused-MoE workspace
    hidden_bytes: int  # the hidden states the sampler step starts from
    sampler_bytes: int
    formula: str

    @property
    def peak_bytes(self) -> int:
        return max(self.forward_bytes, self.persistent_bytes + self.hidden_bytes + self.sampler_bytes)


def profile_run(arch: Architecture, settings: EngineSettings) -> ProfileRun:
    """The profile run's torch peak over the weights (module docstring) and its formula text."""
    tokens = settings.profile_tokens
    per = profile_forward_bytes_per_token(arch, settings)
    forward = profile_forward_bytes(arch, settings, tokens)
    ws_tokens = moe_workspace_tokens(settings, tokens)
    persistent = ws_tokens * moe_workspace_bytes_per_token(arch, settings) if arch.is_moe else 0
    hidden = tokens * BF16 * arch.hidden_size
    reqs, b = sampler_requests(settings), sampler_bytes_per_logit(settings)
    sampler = reqs * arch.vocab_size * b
    chunked = arch.is_moe and ws_tokens < tokens * settings.data_parallel
    text = (
        f"max(forward over {tokens} tokens"
        + ("" if settings.enable_chunked_prefill else " (chunked prefill off: max_model_len)")
        + f" x {per} B/token"
        + (
            f" with the fused-MoE workspace for {ws_tokens} tokens (VLLM_FUSED_MOE_CHUNK_SIZE) = {forward:,} B"
            if chunked
            else ""
        )
        + ", "
        + (f"MoE workspace {persistent:,} B + " if persistent else "")
        + f"hidden {tokens} x {BF16 * arch.hidden_size} B + sampler {reqs} reqs x vocab {arch.vocab_size} x {b} B)"
        + profile_forward_formula(arch, settings)
    )
    return ProfileRun(forward, persistent, hidden, sampler, text)


def moe_workspace_tokens(settings: EngineSettings, tokens: int) -> int:
    """Tokens the fused-MoE workspace is sized for: every DP rank's tokens (gathered), or one chunk of
    ``VLLM_FUSED_MOE_CHUNK_SIZE`` where the release's vLLM chunks the experts (vLLM <= 0.12: 16384 tokens,
    ``modular_kernel.py`` ``_chunk_info``; vLLM 0.18 and 0.24 run the whole batch at once)."""
    gathered = tokens * settings.data_parallel
    chunk = settings.fused_moe_chunk_tokens
    return min(gathered, chunk) if chunk else gathered


def profile_forward_bytes(arch: Architecture, settings: EngineSettings, tokens: int) -> int:
    """The forward's peak over ``tokens`` local tokens: ``profile_forward_bytes_per_token`` with the fused-MoE
    workspace sized for ``moe_workspace_tokens`` instead of every gathered token (the same without chunking)."""
    full = tokens * profile_forward_bytes_per_token(arch, settings)
    if not arch.is_moe:
        return full
    ws = moe_workspace_bytes_per_token(arch, settings)
    moe = full - (tokens * settings.data_parallel - moe_workspace_tokens(settings, tokens)) * ws
    dense = tokens * forward_working_bytes_per_token(arch, settings.tp) if arch.num_dense_layers else 0
    return max(moe, dense)


def expert_shard_intermediate(arch: Architecture, settings: EngineSettings) -> int:
    """Intermediate width of one expert on one rank: whole with expert parallelism, else split over TP x DP."""
    if settings.expert_parallel:
        return arch.moe_intermediate_size
    return max(1, arch.moe_intermediate_size // (settings.tp * settings.data_parallel))


def moe_workspace_bytes_per_token(arch: Architecture, settings: EngineSettings) -> int:
    """``workspace13`` (shared with the output) + ``workspace2`` per gathered token, bf16 (TritonExperts)."""
    k, h = arch.num_experts_per_tok, arch.hidden_size
    inter = expert_shard_intermediate(arch, settings)
    return BF16 * (max(k * max(inter, h), h) + k * max(2 * inter, h))


def moe_gathered_bytes_per_token(arch: Architecture, settings: EngineSettings) -> int:
    """Everything the fused-MoE call holds per token that reaches it (the DP-gathered tokens)."""
    k, h = arch.num_experts_per_tok, arch.hidden_size
    n = moe_workspace_bytes_per_token(arch, settings) + 2 * BF16 * h + k * ROUTING_BYTES_PER_COPY
    if settings.weight_bytes_per_param == 1:
        inter = expert_shard_intermediate(arch, settings)
        n += (h + k * inter) + FP32 * (-(-h // FP8_BLOCK) + k * -(-inter // FP8_BLOCK))
    return n


def moe_layer_bytes_per_token(arch: Architecture, settings: EngineSettings) -> int:
    """Per local token of the profile batch, at the MoE layer's peak: the residual, the normed input and the
    layer input (3 x 2h), the router logits (bf16, E), the shared experts (a dense MLP split by TP) and, for
    each of the DP ranks whose tokens are gathered here, the fused-MoE working set."""
    h = arch.hidden_size
    local = BF16 * (3 * h + arch.num_experts + 3 * arch.shared_expert_intermediate_size // settings.tp)
    return local + settings.data_parallel * moe_gathered_bytes_per_token(arch, settings)


def profile_forward_bytes_per_token(arch: Architecture, settings: EngineSettings) -> int:
    """Bytes per profiled token at the forward's peak layer: the largest of a dense layer (the shared formula of
    ``model.activations``) and an MoE layer (this module)."""
    dense = forward_working_bytes_per_token(arch, settings.tp)
    if not arch.is_moe:
        return dense
    return max(moe_layer_bytes_per_token(arch, settings), dense if arch.num_dense_layers else 0)


def profile_forward_formula(arch: Architecture, settings: EngineSettings) -> str:
    """What the per-token figure holds, for the engine's formula text ("" for a dense model)."""
    if not arch.is_moe:
        return ""
    dp = settings.data_parallel
    gathered = f" x {dp} DP ranks' tokens gathered" if dp > 1 else ""
    return (
        f"; MoE layer per token: fused-MoE workspace {moe_workspace_bytes_per_token(arch, settings)} B{gathered} "
        f"(expert shard I={expert_shard_intermediate(arch, settings)}, top_k {arch.num_experts_per_tok})"
    )
