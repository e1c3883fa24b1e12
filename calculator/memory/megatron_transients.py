"""Megatron's transient tensors and verl's fused-kernel logits: functions of a role, its trainer plan and its
micro-batch only (no memory context), so that ``calculator.memory.context`` can compare pipeline ranks with them
before the context exists (``described_rank``); ``calculator.memory.transients`` builds a phase's components from
them."""

from __future__ import annotations

from calculator.model import activations as act
from calculator.model import megatron_activations as mact
from calculator.model.roles import RoleModel
from calculator.report.models import Component
from calculator.resolve.batching import PassBatch
from calculator.resolve.roles import TrainerPlan

FUSED_CHUNK_TOKENS = 512  # verl FusedLinearForPPO(chunk_size=512) (utils/experimental/torch_functional.py)


def fused_logits(role: str, tokens: int, v: int, *, entropy: bool) -> list[Component]:
    """verl's fused kernel (``use_fused_kernels``): the logits of one chunk at a time."""
    t = min(tokens, FUSED_CHUNK_TOKENS)
    out = [
        Component(
            name=f"{role}_logits",
            role=role,
            bytes=t * v * 6,
            formula=f"fused kernel: {t}-token chunk x vocab {v} x (2 B bf16 + 4 B fp32 upcast)",
        )
    ]
    if entropy:
        out.append(
            Component(
                name=f"{role}_entropy",
                role=role,
                bytes=t * v * 4,
                formula=f"fused kernel: {t}-token chunk x vocab {v} x 4 B",
            )
        )
    return out


def megatron_loss_bytes(fused: bool, role: str, plan: TrainerPlan, tokens: int, v: int, *, entropy: bool) -> int:
    """Bytes of ``logits_components`` for a Megatron update (``training=True``) of ``tokens`` tokens: what the last
    pipeline rank adds at the loss (``calculator.memory.context.described_rank`` compares the ranks with it)."""
    if fused:
        return sum(c.bytes for c in fused_logits(role, tokens, v, entropy=entropy))
    return sum(c.bytes for c in megatron_logits(role, plan, tokens, v, entropy=entropy, training=True))


def megatron_logits(
    role: str, plan: TrainerPlan, tokens: int, v: int, *, entropy: bool, training: bool
) -> list[Component]:
    """verl's Megatron engine (0.9.1 ``workers/engine/megatron/transformer_impl.py`` 1194-1241): the output layer's
    bf16 logits, vocab-parallel (V / TP per rank, the whole micro-batch: sequence parallelism gathers it), divided
    by the temperature in place; the log-prob is Megatron-core's ``vocab_parallel_cross_entropy``
    (``tensor_parallel/cross_entropy.py`` 28, 65, 187 in megatron-core 0.16.1), which copies the logits to fp32,
    turns that copy into the softmax in place and saves it for backward, whose fp32 gradient is cast to bf16 for the
    output layer: 2 + 4 B per logit at the loss, forward-only or not. With the entropy the log-prob runs on a bf16
    clone of the logits (2 B more); in training verl's ``_VocabParallelEntropy`` (``utils/megatron/
    tensor_parallel.py``) also saves its bf16 softmax (2 B), forward-only it is freed before the cross entropy.
    With context parallelism a rank holds 1 / CP of the tokens."""
    m = plan.megatron
    tp, cp = m.tensor_model_parallel_size, m.context_parallel_size
    v_rank = -(-v // tp)
    t = tokens // cp
    out = [
        Component(
            name=f"{role}_logits",
            role=role,
            bytes=t * v_rank * 6,
            formula=f"Megatron vocab-parallel cross entropy: {t} tokens x vocab {v} / TP {tp} x (2 B bf16 logits "
            "+ 4 B fp32 softmax)",
        )
    ]
    if entropy:
        per, what = (4, "2 B bf16 clone + 2 B saved bf16 softmax") if training else (2, "2 B bf16 clone")
        out.append(
            Component(
                name=f"{role}_entropy",
                role=role,
                bytes=t * v_rank * per,
                formula=f"Megatron vocab-parallel entropy: {t} tokens x vocab {v} / TP {tp} x {per} B ({what})",
            )
        )
    return out


def megatron_activations(role: RoleModel, plan: TrainerPlan, batch: PassBatch, pp_rank: int | None) -> Component:
    """Megatron: per pipeline stage, the 1F1B micro-batches in flight, with its recompute settings; the per-layer
    bytes are Megatron-core's saved tensors (``calculator.model.megatron_activations``), split over TP (heads,
    widths; the sequence too with sequence parallelism) and CP.

    Megatron-core activation recompute (``override_transformer_config.recompute_*``): "full" + "uniform" checkpoints
    groups of k layers (keeps each group's input) and recomputes one group at a time; "full" + "block" recomputes
    only the first k layers of each stage; "selective" (``recompute_modules`` ['core_attn']) recomputes the
    attention kernel, which with flash attention drops only its log-sum-exp."""
    a, m, t = role.arch, plan.megatron, batch.tokens_per_gpu
    tp, pp, cp = m.tensor_model_parallel_size, m.pipeline_model_parallel_size, m.context_parallel_size
    split = mact.MegatronSplit(tp, m.sequence_parallel, m.expert_tensor_parallel_size or tp)
    # Layers per pipeline rank as Megatron-core splits them (uneven first / last stages, embedding / loss counted);
    # a split it refuses is a verl check error, estimated with the even ceiling.
    layers = mact.stage_layers(a.num_layers, m)
    if isinstance(layers, str):
        layers = (-(-a.num_layers // pp),) * pp
    # The pass plan spreads sequences over every GPU; a Megatron pipeline runs those of its DP rank, one of
    # GPUs / (TP x PP x CP): TP x PP x CP times the per-GPU micro-batches (as timing.backend.megatron_micro does).
    micro_batches = batch.num_micro_batches * tp * pp * cp
    chunks, v = chunks_in_flight(pp, m.virtual_pipeline_model_parallel_size or 1, micro_batches)
    g, k = m.recompute_granularity, m.recompute_num_layers or 1
    per_layer = mact.all_layers_bytes(a, split, selective=g == "selective") // a.num_layers
    inp, top = mact.layer_input_bytes(a, split), mact.max_layer_bytes(a, split)

    def stage(lps: int) -> tuple[int, int, str]:
        if g == "full" and m.recompute_method == "block":
            kk = min(k, lps)
            return (
                kk * inp + (lps - kk) * per_layer,
                0,
                f"block recompute: {kk} layer inputs x {inp} B + {lps - kk} layers x {per_layer} B",
            )
        if g == "full":
            groups = -(-lps // k)
            return (
                groups * inp,
                min(k, lps) * top,
                f"uniform recompute in groups of {k}: {groups} group inputs x {inp} B",
            )
        what = "selective (core attention) recompute" if g == "selective" else "no recompute"
        return lps * per_layer, 0, f"{what}: {lps} layers x {per_layer} B"

    # 1F1B: pipeline rank r holds min(PP - r, micro-batches) in flight; without a given rank the fullest one (with
    # interleaving, the first rank's chunks).
    best: tuple[int, int, int, int, int, str, int] | None = None
    # The final norm (``final_layernorm``, gpt_model.py ``post_process``) is built on the last stage only; there 1F1B
    # runs each micro-batch's backward right after its forward, so one micro-batch of it is in flight.
    final_norm = mact.final_norm_bytes(a, split)
    # An even split's first rank holds the most micro-batches: the loop is needed only for uneven ones.
    ranks = range(1 if v > 1 or len(set(layers)) == 1 else pp) if pp_rank is None else (pp_rank,)
    for r in ranks:
        n = chunks if v > 1 else min(pp - r, micro_batches)
        kept, once, how = stage(layers[r])
        fin = final_norm if r == pp - 1 else 0
        if best is None or kept * n // v + once + fin > best[0]:
            best = (kept * n // v + once + fin, r, n, kept, once, how, fin)
    assert best is not None
    _, r, chunks, kept, once, how, final = best
    lps = layers[r]
    if len(set(layers)) > 1:
        how += f"; pipeline rank {r} of layers {'/'.join(map(str, layers))}"
    work = act.forward_working_bytes_per_token(a) // split.seq
    b = ((kept * chunks // v + once + final + work) * t) // cp
    return Component(
        name=f"{role.name}_activations",
        role=role.name,
        bytes=b,
        formula=f"Megatron-core saved tensors per token per stage ({how}) x "
        + (
            f"{chunks} model chunks of 1/{v} stage in flight (interleaved 1F1B)"
            if v > 1
            else f"{chunks} micro-batches in flight (1F1B)"
        )
        + f" x {t} tokens / CP {cp} (TP {tp}, sequence parallel {split.seq > 1})"
        + (f" + one recomputed group {min(k, lps)} x {top} B/token" if once else "")
        + (f" + final norm {final} B/token" if final else "")
        + f" + working set {work} B/token",
    )


def chunks_in_flight(pp: int, vpp: int, num_micro_batches: int) -> tuple[int, int]:
    """(model-chunk forwards whose activations the first pipeline stage holds at once, chunks per stage).
    megatron-core 0.16.1 ``pipeline_parallel/schedules.py`` 763-786: 1F1B runs pp - 1 warm-up forwards on the first
    stage, the interleaved schedule 2 (pp - 1) + (vpp - 1) x pp chunk forwards (``microbatch_group_size_per_vp_stage``
    = pp), each holding 1 / vpp of the stage's layers, then one more before the first backward; at most all of them.
    Interleaving thus holds pp x (1 + (pp - 1) / (pp x vpp)) micro-batches of a stage (Korthikanti et al. 2022)."""
    if pp == 1:
        return 1, 1
    if vpp == 1:
        return min(pp, num_micro_batches), 1
    return min(2 * (pp - 1) + (vpp - 1) * pp + 1, num_micro_batches * vpp), vpp


__all__ = [
    "FUSED_CHUNK_TOKENS",
    "chunks_in_flight",
    "fused_logits",
    "megatron_activations",
    "megatron_logits",
    "megatron_loss_bytes",
]
