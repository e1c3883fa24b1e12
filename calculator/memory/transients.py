"""Transient tensors of the trainer's passes: logits and entropy, activations, gathered FSDP units.

Each builder returns :class:`Component` records whose bytes and formula text come from the same operands.
Sources are cited per function; the per-layer activation bytes are, for FSDP, the ones measured against the
real transformers modelling code (``calculator.model.activations``) and, for Megatron, Megatron-core's saved
tensors (``calculator.model.megatron_activations``: Transformer Engine norms, fused SwiGLU, MoE probabilities
applied in the expert activation; 36 % less than the transformers inventory for Qwen3-30B-A3B).
"""

from __future__ import annotations

from calculator.memory.context import Context
from calculator.memory.megatron_transients import (
    fused_logits,
    megatron_activations,
    megatron_logits,
)
from calculator.memory.training import TrainingState
from calculator.model import activations as act
from calculator.model.architecture import Architecture
from calculator.model.roles import RoleModel
from calculator.names import Role
from calculator.report.models import Component
from calculator.resolve.batching import PassBatch
from calculator.resolve.roles import TrainerPlan

ENTROPY_CHUNK_TOKENS = 2048  # actor.entropy_from_logits_chunk_size default


def logits_components(ctx: Context, role: str, tokens: int, *, entropy: bool, training: bool) -> list[Component]:
    s = ctx.s
    v = ctx.actor.arch.vocab_size
    out: list[Component] = []
    ver = ctx.r.behaviour  # 0.9.0 copies even at T = 1 (calculator/resolve/versions.py)
    temp_copy = ver.temperature_copies_logits and (s.rollout.temperature != 1.0 or ver.temperature_copy_at_one)
    if s.model.use_fused_kernels:
        return fused_logits(role, tokens, v, entropy=entropy)
    plan = ctx.r.ref if (role == Role.REF and ctx.r.ref is not None) else ctx.r.actor
    if plan.is_megatron:
        return megatron_logits(role, plan, tokens, v, entropy=entropy, training=training)
    copies = 2 if temp_copy else 1
    # verl 0.9.1 transformer_impl.py 1424-1431 (legacy dp_actor alike): with the entropy computed in a training
    # pass the flash-attn cross-entropy runs with inplace_backward=False, so the log-prob backward allocates its
    # own T x V bf16 gradient beside the saved logits and the entropy's gradient; without entropy it overwrites
    # the logits in place.
    ce_grad = 1 if (training and entropy) else 0
    out.append(
        Component(
            name=f"{role}_logits",
            role=role,
            bytes=tokens * v * 2 * (copies + ce_grad),
            formula=f"{tokens} tokens x vocab {v} x 2 B (bf16)" + _logits_copies(temp_copy, ce_grad),
        )
    )
    if entropy:
        b, f = _entropy_bytes(ctx, tokens, v, training)
        out.append(Component(name=f"{role}_entropy", role=role, bytes=b, formula=f))
    return out


def _logits_copies(temp_copy: bool, ce_grad: int) -> str:
    what = ["logits"]
    if temp_copy:
        what.append("logits / temperature copy")
    if ce_grad:
        what.append("log-prob gradient, inplace_backward=False beside the entropy")
    return f" x {len(what)} ({', '.join(what)})" if len(what) > 1 else ""


def _entropy_bytes(ctx: Context, tokens: int, v: int, training: bool) -> tuple[int, str]:
    """Vocab-sized tensors of verl's entropy (``verl/utils/torch_functional.py`` ``entropy_from_logits``:
    ``softmax(logits)``, ``logsumexp(logits) - sum(pd * logits)``), as the FSDP engine calls it
    (``workers/engine/fsdp/transformer_impl.py``):

    - ``use_torch_compile`` (default): the function is ``torch.compile``d; inductor fuses the softmax into the
      two row reductions, so the forward holds no T x V buffer. In training the backward still produces the
      entropy's gradient w.r.t. the logits: a bf16 T x V tensor.
    - eager: ``pd`` (T x V, logits dtype) and ``pd * logits`` (T x V) coexist: 4 B per logit (the 13.91 GiB
      allocation in verl issue #2828, legacy dp_actor without compile, is this product). In training ``pd`` is
      saved for backward (2 B) and the backward needs two more T x V bf16 tensors; ``entropy_checkpointing``
      drops the saved one.
    - ``entropy_from_logits_with_chunking`` (eager): 2048-token chunks upcast to fp32: chunk x V x 4 B x 3
      (the fp32 copy, its softmax and the product).
    """
    a = ctx.s.actor
    chunk = min(tokens, ENTROPY_CHUNK_TOKENS)
    if a.use_torch_compile:
        if not training:
            return 0, "torch.compile'd entropy: softmax fused into the reductions, no vocab-sized buffer"
        return tokens * v * 2, f"backward of the compiled entropy: gradient {tokens} x vocab {v} x 2 B"
    if a.entropy_from_logits_with_chunking:
        work, f = chunk * v * 12, f"chunked entropy: {chunk} tokens x vocab {v} x 4 B x 3 (fp32 copy, softmax, product)"
    else:
        work, f = tokens * v * 4, f"eager entropy: softmax + product, {tokens} tokens x vocab {v} x 2 B x 2"
    if not training:
        return work, f
    saved = 0 if a.entropy_checkpointing else tokens * v * 2
    grad = tokens * v * 4
    text = f"saved softmax {tokens} x {v} x 2 B + " if saved else "entropy_checkpointing: recomputed, "
    return saved + max(work, grad), text + f"backward working max({f}; gradient {tokens} x {v} x 4 B)"


def ulysses_extra_bytes(role: RoleModel, plan: TrainerPlan, batch: PassBatch, *, offload: bool) -> int:
    """The part of ``training_activations`` that Ulysses SP adds (0 without it): the layers that hold their saved
    tensors (one recomputed layer with checkpointing, two with activation offload, else all) x the per-token bytes of
    ``activations.ulysses_extra_bytes_per_token``. Larger SP adds it where the tokens per GPU do not shrink (a
    binding token budget, verl 0.9.1's V1 critic): the planner's frontier is the most saving up to these bytes."""
    if plan.is_megatron:
        return 0
    layers = 1 if plan.gradient_checkpointing else 2 if offload else role.arch.num_layers
    return layers * act.ulysses_extra_bytes_per_token(role.arch, plan.sp) * batch.tokens_per_gpu


def training_activations(
    role: RoleModel, plan: TrainerPlan, batch: PassBatch, *, offload: bool, pp_rank: int | None = None
) -> Component:
    """Saved activations of one micro-batch's forward kept for backward, plus the working set.
    FSDP: per decoder layer (gradient checkpointing keeps each layer's input and recomputes one layer);
    Megatron: per pipeline stage with the 1F1B micro-batches in flight and its recompute settings, of pipeline rank
    ``pp_rank`` (the rank the estimate describes, ``calculator.memory.megatron_ranks``; None: the fullest)."""
    if plan.is_megatron:
        return megatron_activations(role, plan, batch, pp_rank)
    ckpt = plan.gradient_checkpointing
    a = role.arch
    t = batch.tokens_per_gpu
    work = act.forward_working_bytes_per_token(a) * t
    final = act.final_norm_saved_bytes_per_token(a) * t
    # Ulysses SP: each layer also saves the attention output twice and any repeated k / v (ulysses_extra_bytes).
    sp_extra = act.ulysses_extra_bytes_per_token(a, plan.sp)
    sp_bytes = ulysses_extra_bytes(role, plan, batch, offload=offload)
    layer = act.max_layer_saved_bytes_per_token(a)
    sp_text = f" (+ Ulysses SP {plan.sp}: {sp_extra} B/token per layer)" if sp_extra else ""
    if ckpt:
        kept = 2 if offload else a.num_layers
        inputs = kept * act.checkpoint_input_bytes_per_token(a) * t
        b = inputs + layer * t + final + work
        f = (
            f"checkpointing: {kept} layer inputs x {2 * a.hidden_size} B x {t} tokens"
            + (" (activation offload keeps 2 layer groups)" if offload else "")
            + f" + one recomputed layer {layer} B/token{sp_text} x {t} + final norm {final // max(t, 1)} B/token"
            + " + working set"
        )
    else:
        if offload:
            saved = 2 * layer * t
            f = f"activation offload: 2 layers x {layer} B/token{sp_text} x {t} tokens + final norm + working set"
        else:
            saved = act.all_layers_saved_bytes_per_token(a) * t
            f = (
                f"no checkpointing: {a.num_layers} layers x {layer} B/token{sp_text} x {t} tokens + final norm"
                " + working set"
            )
        b = saved + final + work
    return Component(name=f"{role.name}_activations", role=role.name, bytes=b + sp_bytes, formula=f)


def forward_activations(role_name: str, arch: Architecture, tokens: int) -> Component:
    per = act.forward_working_bytes_per_token(arch)
    return Component(
        name=f"{role_name}_activations",
        role=role_name,
        bytes=per * tokens,
        formula=f"forward only: live set of one layer {per} B/token x {tokens} tokens",
    )


def gathered(role_name: str, st: TrainingState) -> list[Component]:
    if not st.gathered.bytes:
        return []
    return [
        Component(
            name=f"{role_name}_unsharded_params", role=role_name, bytes=st.gathered.bytes, formula=st.gathered.formula
        )
    ]
