"""Activation bytes of the decoder layers, counted per saved tensor of the real implementation.

These are the transformers modelling code's tensors (verl's FSDP engine); verl's Megatron engine runs Megatron-core
with Transformer Engine, whose saved tensors are counted in ``calculator.model.megatron_activations``.

Per token, per decoder layer, bf16 compute (2 B), as the transformers 5.x modelling code saves
tensors for backward (verified against the real code by tests/test_activations_real.py, which
counts unique saved storages with ``torch.autograd.graph.saved_tensors_hooks``):

- RMSNorm (HF ``LlamaRMSNorm`` and relatives): the fp32 upcast of its input (4h, saved by
  ``pow``/``mul``), the per-token fp32 ``rsqrt`` (4 B), the bf16 normalised tensor saved by the
  weight multiply (2h); its bf16 output (2h) is saved by the projection that reads it.
  Gemma's norm multiplies in fp32 (``x * (1 + w)``): fp32 input and fp32 normalised (8h).
- Attention: q after RoPE (2·q), k after RoPE and v (2·kv each), the attention output (2·q, the
  same storage ``o_proj`` saves) and flash-attention's fp32 log-sum-exp (4 B per head). RoPE
  multiplies by cos/sin, which are shared by all layers and counted once. Flash kernels run GQA
  natively: k and v are not repeated to the query heads (eager attention would, and would save the
  s x s probabilities; verl uses flash_attention_2).
- Qwen3 / Gemma3 per-head q_norm / k_norm: fp32 input and bf16 normalised of q and k, plus rsqrt.
- Gated MLP (SwiGLU / GeGLU): gate output (saved by the activation), activation output and up
  output (saved by the multiply), and their product (saved by ``down_proj``): 8·I.
- MoE layer (transformers 5.x grouped_mm experts): the router softmax in fp32 (4·E), and per
  routed token copy (top_k per token) the permuted input saved by the grouped GEMM (2h), the
  gate/up output, activation and product (8·I_moe), the expert output saved by the routing-weight
  multiply (2h) and int64 routing indices (~39 B); shared experts as a dense MLP of width I_shared.

Ulysses sequence parallelism (verl's FSDP engine, ``ulysses_sequence_parallel_size`` > 1): verl patches the
flash-attention call (``verl/models/transformers/monkey_patch.py`` ``_ulysses_flash_attention_forward``, the same in
0.5 to 0.9.1): q, k and v go through an all-to-all (sequence -> heads) before the kernel and its output through one
back (heads -> sequence). The all-to-all (``verl/utils/ulysses.py`` ``SeqAllToAll``) saves nothing and returns a new
buffer, so the kernel's saved output and the buffer ``o_proj`` saves are two storages of the attention output
(``ulysses_extra_bytes_per_token``); with fewer KV heads than the SP degree verl repeats k and v first
(``repeats = sp // num_kv_heads``) and the kernel saves the repeated copies. The per-token bytes of everything else
are those of one rank's share of the sequence, as without SP.

What it leaves out: dropout (verl trains with dropout off), the attention mask (none with
packed varlen attention), and per-micro-batch constants (position ids, cos/sin: a few bytes/token).
Do not use the GPT rule ``sbh(34 + 5as/h)``: it assumes a 4h GeLU MLP, dropout and no GQA.
"""

from __future__ import annotations

from calculator.model.architecture import Architecture

BF16 = 2
FP32 = 4
# int64 routing indices / masks per routed token copy, as counted on transformers 5.10 Qwen3-MoE
# (top-k indices, the three index tensors of the permutation, the mask): 39 B per copy.
MOE_INDEX_BYTES_PER_COPY = 39


def norm_saved_bytes_per_token(width: int, arch: Architecture, output_saved: bool = True) -> int:
    """One RMSNorm over ``width`` features: what it saves (and its output, if a linear saves it)."""
    if arch.model_type.startswith("gemma"):
        saved = 2 * FP32 * width + FP32
    else:
        saved = FP32 * width + FP32 + BF16 * width
    return saved + (BF16 * width if output_saved else 0)


def attention_saved_bytes_per_token(arch: Architecture) -> int:
    q, kv = arch.q_dim, arch.kv_dim
    heads = arch.num_attention_heads
    if arch.is_mla:
        # DeepSeek MLA in HF: q_a (+norm) -> q_b, kv_a (+norm) -> kv_b; k/v rebuilt per head.
        ql = arch.q_lora_rank or 0
        kv_lat = arch.kv_lora_rank + arch.qk_rope_head_dim
        n = 0
        if ql:
            n += norm_saved_bytes_per_token(ql, arch)  # q_a output normalised, read by q_b
        n += BF16 * kv_lat  # kv_a output (split into latent and rope part)
        n += norm_saved_bytes_per_token(arch.kv_lora_rank, arch)
        n += BF16 * heads * (arch.qk_nope_head_dim + arch.v_head_dim)  # kv_b output
        n += BF16 * (q + kv + kv)  # q, k, v (v padded to the qk head size for flash-attention)
        n += BF16 * heads * arch.v_head_dim + FP32 * heads  # output + log-sum-exp
        return n
    n = BF16 * (q + 2 * kv) + BF16 * q + FP32 * heads
    if arch.qk_norm:
        n += (FP32 + BF16) * (q + kv) + FP32 * (heads + arch.num_kv_heads)
    return n


def mlp_saved_bytes_per_token(arch: Architecture, moe: bool) -> int:
    if not moe:
        return 4 * BF16 * arch.intermediate_size
    k = arch.num_experts_per_tok
    n = FP32 * arch.num_experts + FP32  # fp32 router softmax, top-k renormalisation
    n += k * (2 * BF16 * arch.hidden_size + 4 * BF16 * arch.moe_intermediate_size + MOE_INDEX_BYTES_PER_COPY)
    if arch.shared_expert_intermediate_size:
        n += 4 * BF16 * arch.shared_expert_intermediate_size + BF16 * arch.hidden_size
    return n


def layer_saved_bytes_per_token(arch: Architecture, layer: int = 0) -> int:
    """Bytes one decoder layer saves for backward per token (no checkpointing)."""
    h = arch.hidden_size
    moe = bool(arch.moe_layers and arch.moe_layers[layer])
    if arch.num_norms_per_layer == 4:
        # Gemma2/3: pre-norms feed a linear (output saved), post-norms feed the residual add.
        norms = 2 * norm_saved_bytes_per_token(h, arch) + 2 * norm_saved_bytes_per_token(h, arch, False)
    else:
        norms = 2 * norm_saved_bytes_per_token(h, arch)
    return norms + attention_saved_bytes_per_token(arch) + mlp_saved_bytes_per_token(arch, moe)


def ulysses_extra_bytes_per_token(arch: Architecture, sp: int) -> int:
    """What one decoder layer saves beyond ``layer_saved_bytes_per_token`` under Ulysses SP ``sp`` (module
    docstring): the attention output's second storage, and the k / v repeats when ``sp`` exceeds the KV heads."""
    if sp <= 1:
        return 0
    if arch.is_mla:
        return BF16 * arch.num_attention_heads * arch.v_head_dim  # k / v carry every head: no repeat
    repeats = max(sp // arch.num_kv_heads, 1)
    return BF16 * arch.q_dim + 2 * BF16 * arch.kv_dim * (repeats - 1)


def max_layer_saved_bytes_per_token(arch: Architecture) -> int:
    """The largest layer (MoE and dense layers differ): what one recomputed layer holds."""
    kinds = {bool(m) for m in arch.moe_layers} or {False}
    return max(layer_saved_bytes_per_token(arch, arch.moe_layers.index(m) if arch.moe_layers else 0) for m in kinds)


def all_layers_saved_bytes_per_token(arch: Architecture) -> int:
    """Sum over every decoder layer."""
    return sum(layer_saved_bytes_per_token(arch, i) for i in range(arch.num_layers))


def checkpoint_input_bytes_per_token(arch: Architecture) -> int:
    """With per-layer gradient checkpointing each layer keeps only its bf16 input (2h)."""
    return BF16 * arch.hidden_size


def final_norm_saved_bytes_per_token(arch: Architecture) -> int:
    """The final norm before the LM head (its output is saved by ``lm_head``)."""
    return norm_saved_bytes_per_token(arch.hidden_size, arch)


def forward_working_bytes_per_token(arch: Architecture, tp: int = 1) -> int:
    """Live bytes per token inside one layer of a forward pass without autograd (inference,
    log-prob): at the MLP, the residual stream, the normed input and the layer input (3 x 2h) plus
    the gate/up output, the activation and the product (3 x 2·I/tp) that coexist.
    MoE: every token is copied to top_k experts, each copy carrying its gate/up/activation tensors
    (3 x 2·I_moe/tp) and its expert output (2h) (vLLM fused_moe intermediate caches 1-3), plus any
    shared experts as a dense MLP. The same peak vLLM's profiling forward sees per batched token.
    """
    h = arch.hidden_size
    dense = BF16 * (3 * h + 3 * arch.intermediate_size // tp)
    if not arch.is_moe:
        return dense
    k = arch.num_experts_per_tok
    moe = BF16 * (
        3 * h + k * (3 * arch.moe_intermediate_size // tp + h) + 3 * arch.shared_expert_intermediate_size // tp
    )
    return max(moe, dense if arch.num_dense_layers else 0)
