"""Activation bytes Megatron-core saves for backward, per token per decoder layer, counted per saved tensor.

verl's Megatron engine builds the model with Megatron-core's Transformer Engine layer spec (verl 0.9.1
``workers/engine/megatron/transformer_impl.py`` 283-437: Megatron-Bridge provider, ``attention_backend`` flash,
``moe_token_dispatcher_type`` alltoall, ``moe_router_load_balancing_type`` none; hidden/attention dropout 0 from the
HF config, Megatron-Bridge ``Qwen3MoEModelProvider``). Its saved tensors differ from the transformers code's
(``calculator.model.activations``, which the FSDP engine runs): Transformer Engine norms save the bf16 input and an
fp32 ``rsigma`` (no fp32 upcast of the input), SwiGLU is one fused function that saves only its input, and MoE
probabilities multiply inside the expert activation. Sources: megatron-core 0.16.1 (the wheel ``pip download
megatron-core==0.16.1``; verl 0.9.1 leaves it unpinned, its stable image installs core_v0.15.0) and Transformer Engine
main (GitHub NVIDIA/TransformerEngine, 2026-08):

Attention (``gpt_layer_specs.py`` 279-291, ``attention.py`` 1371-1491), per token on one rank:

- ``linear_qkv`` = ``TELayerNormColumnParallelLinear``: the layer input (2h), ``ln_out`` (2h, for the weight
  gradient) and fp32 ``rsigma`` (4) (TE ``layernorm_linear.py`` 526-536).
- the QKV GEMM output (2·(q + 2kv)): ``_SplitAlongDim`` returns views; ``value`` stays a view of it up to the flash
  kernel, which saves it (TE ``backends.py`` FlashAttention copies only for sbhd or context parallelism; flash-attn's
  ``maybe_contiguous`` keeps a view with unit last stride), so the whole buffer stays alive.
- ``qk_layernorm`` (Qwen3): the reshaped query is a copy (2q) and TE ``RMSNorm`` makes the key view contiguous (2kv),
  both saved with an fp32 rstd per head (TE ``ops/basic/rmsnorm.py`` 189, 209).
- RoPE (fused or not) saves no per-token input; its outputs q, k (2q + 2kv) are saved by the attention kernel with
  the output (2q, the same storage ``linear_proj`` saves) and the fp32 log-sum-exp per head (4 B).
- ``self_attn_bda`` with dropout 0 saves nothing (``torch.nn.functional.dropout`` returns its input at p = 0).

MLA (DeepSeek-V3, ``gpt_layer_specs.py`` 248-265, ``multi_latent_attention.py``): ``input_layernorm`` = ``TENorm``
(input 2h + rsigma; its output 2h is saved by the q and kv down projections), ``linear_q_up_proj`` and
``linear_kv_up_proj`` are layernorm-fused linears (input, ``ln_out``, rsigma each), the kv down output (2·(c + r)),
the kv up output (2·H·(d_nope + d_v): ``value`` is a view of it), q and k after RoPE (2·H·(d_nope + d_rope) each),
the output (2·H·d_v) and the log-sum-exp.

MoE layer (``moe_layer.py``, ``router.py``, ``token_dispatcher.py``, ``experts.py``), alltoall dispatcher, grouped GEMM:

- ``pre_mlp_layernorm`` = ``TENorm``: input (2h) + rsigma (4); its output (2h) is saved by the router's gating linear
  (``moe_utils.py`` 1185) and, with shared experts, by their ``linear_fc1`` (same storage).
- routing metadata per token: top-k int64 indices (8k) and fp32 top-k softmax (4k) (``moe_utils.py`` 714-715), the
  dispatcher's ``self.probs`` (fp32, 4E) and ``self.routing_map`` (bool, E) held until the next forward
  (``token_dispatcher.py`` 610-611), TE's fused-permute ``row_id_map`` (int32, 4·(2E + 1), TE
  ``triton/permutation.py`` 52); a sigmoid router (DeepSeek-V3) also saves its fp32 scores (4E, ``moe_utils.py``
  717).
- per routed copy (top-k per token): ``linear_fc1``'s input (2h, TE ``GroupedLinear`` saves its input), its output
  (2·2·I_moe) saved by ``WeightedSwiGLUFunction`` with the fp32 permuted probability (4 B)
  (``fused_bias_swiglu.py`` 191-199, called at ``experts.py`` 689-697), the activation output (2·I_moe) saved by
  ``linear_fc2`` (``experts.py`` 748) and the int32 chunk-sort map (4 B). The expert output is not saved: the
  probabilities were applied in the activation, and unpermute keeps only its map.
- shared experts (``shared_experts.py``): fc1 output (4·I_s) and activation output (2·I_s).

Dense MLP: ``linear_fc1`` = ``TELayerNormColumnParallelLinear`` (input 2h, ``ln_out`` 2h, rsigma 4), the fc1 output
(2·2·I, saved by the fused SwiGLU) and the activation output (2·I, saved by ``linear_fc2``).

Parallelism: with sequence parallelism (TP > 1) the residual-stream tensors (norm inputs and outputs) are split over
TP; heads and FFN widths are split over TP (experts: over the expert TP size) with or without it. Expert tokens: a
rank holds top_k copies of its local tokens (times the expert TP size, which all-gathers them), assuming balanced
routing; the busiest expert rank holds more. Selective recompute (``recompute_modules`` ['core_attn'], verl's
default) runs the attention kernel under ``tensor_parallel.checkpoint``, which still saves q, k and v
(``attention.py`` 381-418) and whose output ``linear_proj`` saves: with flash attention it drops only the
log-sum-exp.

Cross-check: ISEEKYAN/mbridge's Megatron memory estimator (``memory_estimator/moe_mem_estimator/layers.py``, commit
7ed546f; mbridge is verl's vanilla Megatron bridge) counts a Qwen3-30B-A3B layer at 62,464 bf16 elements =
124,928 B per token (attention 4q + 2kv, norms and residual adds 3h, router 2h, dispatched copies k·h, expert
fc1 output and activation k·3·I_moe); this inventory gives 124,988 B, a different split of nearly the same total.
Checked against Korthikanti et al. 2022 ("Reducing Activation Recomputation", Table 2): for a GPT layer (no RoPE,
no GQA, a 4h GeLU MLP whose fc1 and GeLU outputs are 8h B each) the same inventory gives 32·h B/token (attention
12h, MLP 20h), their 34·h less the two 1-byte
dropout masks (hidden dropout 0 here) and less the s²-sized softmax terms that flash attention does not keep.
Left out: FP8 (TE saves quantised inputs), ``moe_act`` / ``layernorm`` recompute modules, activation offloading,
MTP layers, the aux-loss scores (verl sets ``moe_router_load_balancing_type`` none), routing imbalance.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from calculator.model.activations import BF16, FP32
from calculator.model.architecture import Architecture

if TYPE_CHECKING:
    from calculator.inputs.backends import MegatronSection

INT64 = 8  # top-k expert indices (torch.topk)
INT32 = 4  # TE's permutation row map and the chunk-sort map


@dataclass(frozen=True)
class MegatronSplit:
    """How one rank's share of a micro-batch's tensors is cut: tensor parallel size, sequence parallelism, expert
    tensor parallel size."""

    tp: int = 1
    sequence_parallel: bool = False
    etp: int = 1

    @property
    def seq(self) -> int:
        """Divisor of the residual-stream (sequence-sharded) tensors: TP with sequence parallelism, else 1."""
        return self.tp if (self.sequence_parallel and self.tp > 1) else 1


def _heads(n: int, tp: int) -> int:
    """Heads per TP rank; KV heads are replicated when TP exceeds them (``attention.py`` 1401-1475)."""
    return max(n // tp, 1)


def norm_fused_linear_bytes(width: int, split: MegatronSplit) -> int:
    """A layernorm fused into a column-parallel linear: input, ``ln_out`` (bf16) and fp32 rsigma, per token."""
    return (2 * BF16 * width + FP32) // split.seq


def te_norm_bytes(width: int, split: MegatronSplit) -> int:
    """A standalone ``TENorm``: bf16 input and fp32 rsigma (its output is counted where a linear saves it)."""
    return (BF16 * width + FP32) // split.seq


def te_norm_with_output_bytes(width: int, split: MegatronSplit) -> int:
    """A ``TENorm`` whose bf16 output the next linear saves (the router's gating, MLA's down projections, the output
    layer): input, rsigma and that output."""
    return te_norm_bytes(width, split) + BF16 * width // split.seq


def attention_terms(arch: Architecture, split: MegatronSplit, *, selective: bool = False) -> dict[str, int]:
    """Saved bytes per token of one self-attention block, by tensor (see the module docstring)."""
    if arch.is_mla:
        return _mla_terms(arch, split, selective)
    tp = split.tp
    heads, kv_heads = _heads(arch.num_attention_heads, tp), _heads(arch.num_kv_heads, tp)
    q, kv = heads * arch.head_dim, kv_heads * arch.head_dim
    terms = {
        "qkv_layernorm_linear": norm_fused_linear_bytes(arch.hidden_size, split),
        "qkv_output": BF16 * (q + 2 * kv),
    }
    if arch.qk_norm:
        terms["qk_layernorm"] = BF16 * (q + kv) + FP32 * (heads + kv_heads)
    terms["q_k_after_rope"] = BF16 * (q + kv)
    terms["attention_output"] = BF16 * q
    terms["log_sum_exp"] = 0 if selective else FP32 * heads
    return terms


def _mla_terms(arch: Architecture, split: MegatronSplit, selective: bool) -> dict[str, int]:
    tp, h = split.tp, arch.hidden_size
    heads = _heads(arch.num_attention_heads, tp)
    qk_head = arch.qk_nope_head_dim + arch.qk_rope_head_dim
    terms = {"input_layernorm": te_norm_with_output_bytes(h, split)}
    if arch.q_lora_rank:
        terms["q_up_layernorm_linear"] = norm_fused_linear_bytes(arch.q_lora_rank, split)
    terms["kv_down_output"] = BF16 * (arch.kv_lora_rank + arch.qk_rope_head_dim) // split.seq
    terms["kv_up_layernorm_linear"] = norm_fused_linear_bytes(arch.kv_lora_rank, split)
    terms["kv_up_output"] = BF16 * heads * (arch.qk_nope_head_dim + arch.v_head_dim)
    terms["q_k_after_rope"] = 2 * BF16 * heads * qk_head
    terms["attention_output"] = BF16 * heads * arch.v_head_dim
    terms["log_sum_exp"] = 0 if selective else FP32 * heads
    return terms


def dense_mlp_terms(arch: Architecture, split: MegatronSplit) -> dict[str, int]:
    inter = arch.intermediate_size // split.tp
    return {
        "fc1_layernorm_linear": norm_fused_linear_bytes(arch.hidden_size, split),
        "fc1_output": 2 * BF16 * inter,
        "activation_output": BF16 * inter,
    }


def moe_terms(arch: Architecture, split: MegatronSplit) -> dict[str, int]:
    """Saved bytes per token (of this rank's micro-batch) of one MoE layer, by tensor."""
    h, e, k = arch.hidden_size, arch.num_experts, arch.num_experts_per_tok
    inter = arch.moe_intermediate_size // split.etp
    sigmoid = arch.router_score_bias  # DeepSeek-V3's sigmoid router saves its fp32 T x E output (moe_utils.py 717)
    per_copy = BF16 * h + 2 * BF16 * inter + FP32 + BF16 * inter + INT32
    terms = {
        "pre_mlp_layernorm": te_norm_with_output_bytes(h, split),
        "routing_metadata": (INT64 * k + FP32 * k + FP32 * e * (2 if sigmoid else 1) + e + INT32 * (2 * e + 1))
        // split.seq,
        "routed_copies": k * split.etp * per_copy // split.seq,
    }
    shared = arch.shared_expert_intermediate_size // split.tp
    if shared:
        terms["shared_experts"] = 3 * BF16 * shared + (BF16 if arch.shared_expert_gate else 0)
    return terms


def layer_terms(arch: Architecture, layer: int, split: MegatronSplit, *, selective: bool = False) -> dict[str, int]:
    """Every saved tensor group of decoder layer ``layer``, bytes per token; sums to :func:`layer_bytes`."""
    moe = bool(arch.moe_layers and arch.moe_layers[layer])
    terms = {f"attn.{n}": b for n, b in attention_terms(arch, split, selective=selective).items()}
    mlp = moe_terms(arch, split) if moe else dense_mlp_terms(arch, split)
    terms.update({f"{'moe' if moe else 'mlp'}.{n}": b for n, b in mlp.items()})
    extra_norms = max(arch.num_norms_per_layer - 2, 0)  # Gemma's post-norms feed the residual add
    if extra_norms:
        terms["post_norms"] = extra_norms * te_norm_bytes(arch.hidden_size, split)
    return terms


def layer_bytes(arch: Architecture, layer: int, split: MegatronSplit, *, selective: bool = False) -> int:
    return sum(layer_terms(arch, layer, split, selective=selective).values())


# The per-layer inventory is summed over every layer; estimate() asks for it once per pass and the planner's layout
# search thousands of times per table: memoised on the (frozen, hashable) architecture and split (issue #18).
@functools.lru_cache(maxsize=256)
def all_layers_bytes(arch: Architecture, split: MegatronSplit, *, selective: bool = False) -> int:
    return sum(layer_bytes(arch, i, split, selective=selective) for i in range(arch.num_layers))


@functools.lru_cache(maxsize=256)
def max_layer_bytes(arch: Architecture, split: MegatronSplit) -> int:
    """The largest layer (what one recomputed layer holds in backward)."""
    return max(layer_bytes(arch, i, split) for i in _kinds(arch))


def _kinds(arch: Architecture) -> list[int]:
    """One layer index of each kind (MoE, dense)."""
    if not arch.moe_layers:
        return [0]
    return sorted({arch.moe_layers.index(m) for m in set(arch.moe_layers)})


def layer_input_bytes(arch: Architecture, split: MegatronSplit) -> int:
    """A checkpointed layer group keeps only its bf16 input."""
    return BF16 * arch.hidden_size // split.seq


def final_norm_bytes(arch: Architecture, split: MegatronSplit) -> int:
    """``final_layernorm`` (``TENorm``) on the last stage: input, rsigma and the output the output layer saves."""
    return te_norm_with_output_bytes(arch.hidden_size, split)


def stage_layers(num_layers: int, m: MegatronSection, pp: int | None = None) -> tuple[int, ...] | str:
    """``pipeline_stage_layers`` with a Megatron section's uneven-split settings and its PP (or ``pp``: a layout
    the planner tries)."""
    return pipeline_stage_layers(
        num_layers,
        pp or m.pipeline_model_parallel_size,
        first=m.num_layers_in_first_pipeline_stage,
        last=m.num_layers_in_last_pipeline_stage,
        embedding=m.account_for_embedding_in_pipeline_split,
        loss=m.account_for_loss_in_pipeline_split,
    )


def pipeline_stage_layers(
    num_layers: int,
    pp: int,
    *,
    first: int | None = None,
    last: int | None = None,
    embedding: bool = False,
    loss: bool = False,
) -> tuple[int, ...] | str:
    """Decoder layers each pipeline rank builds (all its virtual chunks), or why Megatron-core refuses the split
    (megatron-core 0.16.1 ``transformer/transformer_block.py`` ``get_num_layers_to_build``): ``first`` / ``last``
    (``num_layers_in_first/last_pipeline_stage``) fix those stages and the other stages share the rest evenly;
    otherwise every stage gets (layers + 1 per ``account_for_embedding/loss_in_pipeline_split``) / PP and the first
    (last) stage builds one less for the embedding (loss). Verl passes these from ``override_transformer_config``
    (e.g. ``run_qwen3-235b_megatron_96gb.sh``: 94 layers on PP 8 as 11 + 6 x 12 + 11; DeepSeek-V3's script: 61 on PP
    12 with 6 on the last stage, 5 on each other)."""
    if first is not None or last is not None:
        if pp == 1:
            return "num_layers_in_first/last_pipeline_stage need PP > 1"
        rest = num_layers - (first or 0) - (last or 0)
        stages = pp - (first is not None) - (last is not None)
        if rest < 0 or (stages and rest % stages) or (not stages and rest):
            return f"the {num_layers} layers do not split as first {first} / last {last} + {stages} even stages"
        out = [rest // stages if stages else 0] * pp
        out[0] = out[0] if first is None else first
        out[-1] = out[-1] if last is None else last
        return tuple(out)
    total = num_layers + embedding + loss
    if total % pp:
        return f"{total} layers{' (with embedding / loss)' if embedding or loss else ''} are not divisible by PP {pp}"
    out = [total // pp] * pp
    out[0] -= embedding
    out[-1] -= loss
    return tuple(out)
